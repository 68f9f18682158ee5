#pragma once
// The seam between every HTTP client here (the registry client, the package
// fetcher) and the network. A Transport performs ONE HTTP exchange: one
// request in, one response out. It never follows redirects, retries or
// authenticates; the clients do that above it (net/retry.hpp holds the one
// policy), so those rules are plain logic that unit tests drive with a
// scripted fake. The libcurl transport (curl_transport.cpp) is the only code
// that sees libcurl.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::net {

// TLS settings of one host: a CA to trust besides the system's, a client
// certificate, and (only where a site asks for it) no verification at all.
struct TlsOptions {
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
  bool insecure_skip_verify = false;
};

// Why an exchange got no complete HTTP answer. None: it did (any status).
enum class NetError {
  None,
  Resolve,       // the host name does not resolve
  Proxy,         // the proxy name does not resolve
  Connect,       // no connection (no route, network down, ...)
  ConnRefused,   // the host refused the connection: nothing listens on that port
  ConnectTimeout,// no connection (or TLS session) before the connect timeout
  PlainHttp,     // an https:// URL whose peer answered the TLS hello in plain HTTP
  TlsHandshake,  // the TLS handshake failed otherwise (protocol, cipher, alert)
  TlsVerify,     // the peer's certificate failed verification
  TlsCaFile,     // the CA file cannot be used
  TlsClientCert, // the client certificate or key cannot be used
  Timeout,       // stalled, or past the deadline of a small request
  Broken,        // the connection broke mid-exchange (send, receive, cut-off body)
  TooLarge,      // an unstreamed body passed Request::body_cap
  Aborted,       // Request::on_body or the body reader said stop
  Refused,       // a URL or redirect the client will not follow (e.g. https -> http)
  Other,
};

// Request body bytes [offset, offset + len): the count read (0 or an error aborts).
using BodyReader = std::function<Result<std::size_t>(std::uint64_t offset, char* buf, std::size_t len)>;
// A 2xx body chunk; false aborts the exchange (NetError::Aborted).
using BodySink = std::function<bool(long status, std::string_view chunk)>;

struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  const TlsOptions* tls = nullptr;   // the URL's host's; none: system CAs, verification on
  // PUT, PATCH and POST send body_size bytes from read_body.
  std::uint64_t body_size = 0;
  BodyReader read_body;
  // A 2xx body streams to on_body when set; any other body is collected into
  // Response::body up to body_cap. Requests without on_body or read_body are
  // small and get the whole-exchange deadline; streams only the stall limit.
  BodySink on_body;
  std::uint64_t body_cap = 8ull << 20;
};

struct Response {
  long status = 0;  // 0 when no HTTP answer came
  NetError error = NetError::None;
  std::string error_text;                      // the transport's own words, for messages
  std::map<std::string, std::string> headers;  // names lower-cased; repeats joined by ", "
  std::string body;
  // Not sent: the host failed this way earlier in the run (a host_level
  // error, mirror/registry_session.cpp); never retried.
  bool remembered = false;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  bool answered() const { return error == NetError::None; }
  bool ok() const { return answered() && status >= 200 && status < 300; }
  bool redirect() const {
    return answered() && (status == 301 || status == 302 || status == 303 || status == 307 || status == 308);
  }
};

// Hands one received body chunk to the request, as every transport must:
// 2xx bodies to on_body, others into resp.body up to body_cap. False = stop
// (resp.error says why).
bool deliver_body(const Request& req, Response& resp, std::string_view chunk);

class Transport {
public:
  virtual ~Transport() = default;
  // Thread-safe: called from many threads at once.
  virtual Response perform(const Request& req) = 0;
};

// Failures about a host as a whole, not one exchange: no connection, no TLS
// session, a plain HTTP server at an https:// URL. Every request to that
// host would meet the same (the registry client reports it once per host).
bool host_level(NetError e);

// A TLS handshake with an https:// URL failed (NetError::TlsHandshake): is
// it a plain HTTP server? Asks the same host and port once over http://
// (GET /v2/, through `t`); any HTTP answer at all makes it NetError::PlainHttp.
// This needs no OpenSSL wording ("wrong version number", "packet length too
// long" differ by version). Other responses are left as they are.
void classify_tls_failure(Transport& t, const Request& req, Response& resp);

struct TransportOptions {
  int connect_timeout_s = 15;
  int stall_timeout_s = 30;    // a stream that moves no byte this long is Timeout
  int request_timeout_s = 60;  // whole exchange of a small request
  std::string user_agent = "gpubundle";
};
std::shared_ptr<Transport> curl_transport(const TransportOptions& options);

// Time as the client sees it: the wall clock (Retry-After dates) and the
// waits between retries. Empty members mean the real ones.
struct Clock {
  std::function<std::time_t()> now;
  std::function<void(std::chrono::milliseconds)> sleep;
};

}  // namespace gb::net
