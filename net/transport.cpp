#include "net/transport.hpp"

namespace gb::net {

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

bool host_level(NetError e) {
  switch (e) {
    case NetError::Resolve:
    case NetError::Proxy:
    case NetError::Connect:
    case NetError::ConnRefused:
    case NetError::ConnectTimeout:
    case NetError::PlainHttp:
    case NetError::TlsHandshake:
    case NetError::TlsVerify:
    case NetError::TlsCaFile:
    case NetError::TlsClientCert:
      return true;
    default:
      return false;
  }
}

void classify_tls_failure(Transport& t, const Request& req, Response& resp) {
  if (resp.error != NetError::TlsHandshake || req.url.rfind("https://", 0) != 0) return;
  // scheme://authority: the probe never carries the request's path, query or credentials.
  std::string rest = req.url.substr(8);
  std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  if (authority.empty()) return;
  Request probe;
  probe.url = "http://" + authority + "/v2/";
  probe.body_cap = 64 << 10;
  Response r = t.perform(probe);
  if (r.answered() || r.status > 0) {  // an HTTP status line came back
    resp.error = NetError::PlainHttp;
    resp.error_text = "the server answered the TLS hello in plain HTTP (" + resp.error_text + ")";
  }
}

}  // namespace gb::net
