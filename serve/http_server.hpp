#pragma once
// A small HTTP/1.1 server on libmicrohttpd (Debian's libmicrohttpd12, TLS by
// GnuTLS): a bounded pool of threads, each with its own epoll loop, so idle
// and slow connections cost a socket and a fixed memory pool, never a thread.
// What it bounds: connections in all and per client address (more are closed
// at accept), the bytes of a request's line and headers (the per-connection
// memory pool: a larger request gets 431 from libmicrohttpd), and idle time.
// A request body is never read: the handler answers before any arrives.
//
// The handler sees a parsed request and returns a response whose body is
// bytes, a range of an open file (sent with sendfile(2) on plain HTTP), or
// a reader called for each chunk.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb::serve {

struct HttpRequest {
  std::string method;   // "GET", "HEAD", ...
  std::string path;     // percent-decoded by the server, no query
  std::string version;  // "HTTP/1.1"
  std::string client;   // the peer's address
  std::map<std::string, std::string> query;    // decoded; a repeated key keeps its first value
  std::map<std::string, std::string> headers;  // names lower-cased; repeats joined with ", "
  std::string header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // used unless `file` or `reader` is set
  // The body as `size` bytes of an open file from `offset`; the server owns
  // and closes the descriptor.
  struct FileRange {
    int fd = -1;
    std::uint64_t offset = 0;
  };
  std::optional<FileRange> file;
  // Or the body as `size` bytes from `reader(pos, buf, max)`, which returns
  // the bytes it wrote (> 0) or -1 to cut the connection short (a read or
  // check failed: the client must see an error, never wrong bytes).
  std::function<long(std::uint64_t pos, char* buf, std::size_t max)> reader;
  std::uint64_t size = 0;  // for file and reader bodies
  std::string user;        // authenticated user, for the access log

  HttpResponse() = default;
  HttpResponse(HttpResponse&&) noexcept;
  HttpResponse& operator=(HttpResponse&&) noexcept;
  HttpResponse(const HttpResponse&) = delete;
  HttpResponse& operator=(const HttpResponse&) = delete;
  ~HttpResponse();  // closes an unsent file
  std::uint64_t body_size() const { return file || reader ? size : body.size(); }
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// One line per finished request, for the access log.
struct AccessRecord {
  std::string time;  // RFC 3339, UTC
  std::string client, method, path, version, user;
  int status = 0;
  std::uint64_t bytes = 0;  // the body's size as promised; see `completed`
  bool completed = true;    // false: the connection ended before the body did
  double seconds = 0;
};
std::string to_json_line(const AccessRecord& record);

struct ServerOptions {
  std::string address = "127.0.0.1";  // an IPv4 or IPv6 literal; "0.0.0.0" or "::" for all
  int port = 5000;                     // 0: any free port (ServerOptions::port of the result says which)
  std::string tls_cert_pem, tls_key_pem;  // both or neither
  unsigned threads = 4;
  unsigned max_connections = 1024;
  unsigned max_connections_per_client = 128;
  std::size_t max_request_bytes = 16 << 10;  // request line and headers
  std::chrono::seconds idle_timeout{30};
};

class HttpServer {
public:
  // Listens and serves on its own threads until stop() or destruction.
  static Result<HttpServer> start(const ServerOptions& options, HttpHandler handler,
                                  std::function<void(const AccessRecord&)> access_log);
  HttpServer(HttpServer&&) noexcept;
  HttpServer& operator=(HttpServer&&) noexcept;
  ~HttpServer();

  int port() const;  // the bound port
  // Stops accepting, closes every connection and joins the threads.
  void stop();

  struct Impl;

private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::serve
