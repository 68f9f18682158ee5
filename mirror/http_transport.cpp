#include "mirror/http_transport.hpp"

namespace gb::http {

bool deliver_body(const Request& req, Response& resp, std::string_view chunk) {
  if (resp.status >= 200 && resp.status < 300 && req.on_body) {
    if (req.on_body(resp.status, chunk)) return true;
    resp.error = NetError::Aborted;
    return false;
  }
  if (resp.body.size() + chunk.size() > req.body_cap) {
    resp.error = NetError::TooLarge;
    return false;
  }
  resp.body.append(chunk);
  return true;
}

}  // namespace gb::http
