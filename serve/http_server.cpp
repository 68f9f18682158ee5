#include "serve/http_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"

namespace gb::serve {

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse::HttpResponse(HttpResponse&& o) noexcept
    : status(o.status), headers(std::move(o.headers)), body(std::move(o.body)), file(o.file), reader(std::move(o.reader)),
      size(o.size), user(std::move(o.user)) {
  o.file.reset();
}
HttpResponse& HttpResponse::operator=(HttpResponse&& o) noexcept {
  if (this != &o) {
    if (file && file->fd >= 0) ::close(file->fd);
    status = o.status;
    headers = std::move(o.headers);
    body = std::move(o.body);
    file = o.file;
    o.file.reset();
    reader = std::move(o.reader);
    size = o.size;
    user = std::move(o.user);
  }
  return *this;
}
HttpResponse::~HttpResponse() {
  if (file && file->fd >= 0) ::close(file->fd);
}

std::string to_json_line(const AccessRecord& r) {
  nlohmann::json j = {{"time", r.time},     {"client", r.client}, {"method", r.method},
                      {"path", r.path},     {"version", r.version}, {"status", r.status},
                      {"bytes", r.bytes},   {"completed", r.completed},
                      {"seconds", static_cast<double>(static_cast<long long>(r.seconds * 1e6)) / 1e6}};
  if (!r.user.empty()) j["user"] = r.user;
  // Bytes a client sent that are not UTF-8 are replaced, never dumped raw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// What one request carries between libmicrohttpd's calls.
struct RequestState {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  AccessRecord record;
};

struct DaemonDeleter {
  void operator()(MHD_Daemon* d) const { MHD_stop_daemon(d); }
};

MHD_Result collect(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* map = static_cast<std::map<std::string, std::string>*>(cls);
  if (key) map->emplace(key, value ? value : "");
  return MHD_YES;
}

// A header sent several times (skopeo sends one Accept per type) is one
// comma-separated list (RFC 9110 5.3).
MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* map = static_cast<std::map<std::string, std::string>*>(cls);
  if (!key) return MHD_YES;
  auto [it, fresh] = map->emplace(to_lower(key), value ? value : "");
  if (!fresh) it->second += std::string(", ") + (value ? value : "");
  return MHD_YES;
}

std::string client_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

using Reader = std::function<long(std::uint64_t, char*, std::size_t)>;

ssize_t read_chunk(void* cls, std::uint64_t pos, char* buf, std::size_t max) {
  long n = (*static_cast<Reader*>(cls))(pos, buf, max);
  return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}
void free_reader(void* cls) { delete static_cast<Reader*>(cls); }

MHD_Response* make_response(HttpResponse& r) {
  if (r.file) {
    MHD_Response* m = MHD_create_response_from_fd_at_offset64(r.size, r.file->fd, r.file->offset);
    if (m) r.file->fd = -1;  // libmicrohttpd closes it with the response
    return m;
  }
  if (r.reader) {
    auto* reader = new Reader(std::move(r.reader));
    MHD_Response* m = MHD_create_response_from_callback(r.size, 256 << 10, read_chunk, reader, free_reader);
    if (!m) delete reader;
    return m;
  }
  return MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
}

}  // namespace

struct HttpServer::Impl {
  HttpHandler handler;
  std::function<void(const AccessRecord&)> access_log;
  std::string cert, key;  // libmicrohttpd keeps pointers to these
  sockaddr_storage addr{};
  std::unique_ptr<MHD_Daemon, DaemonDeleter> daemon;

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                               const char*, size_t* upload_size, void** req_cls) {
    auto* self = static_cast<Impl*>(cls);
    if (*req_cls) {
      *upload_size = 0;  // a body after the answer is dropped, never read into memory
      return MHD_YES;
    }
    auto* state = new RequestState;
    *req_cls = state;
    HttpRequest req;
    req.method = method;
    req.path = url;
    req.version = version;
    req.client = client_address(c);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect, &req.query);
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, &req.headers);
    state->record.client = req.client;
    state->record.method = req.method;
    state->record.path = req.path;
    state->record.version = req.version;

    HttpResponse resp;
    try {
      resp = self->handler(req);
    } catch (const std::exception& e) {
      log_warn("serve: " + std::string(e.what()));
      resp = HttpResponse();
      resp.status = 500;
    }
    state->record.status = resp.status;
    state->record.user = resp.user;
    state->record.bytes = resp.body_size();
    MHD_Response* m = make_response(resp);
    if (!m) return MHD_NO;
    for (const auto& [k, v] : resp.headers) MHD_add_response_header(m, k.c_str(), v.c_str());
    MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(resp.status), m);
    MHD_destroy_response(m);
    return ok;
  }

  static void on_completed(void* cls, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode toe) {
    auto* self = static_cast<Impl*>(cls);
    auto* state = static_cast<RequestState*>(*req_cls);
    if (!state) return;
    *req_cls = nullptr;
    state->record.completed = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    state->record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - state->start).count();
    state->record.time = rfc3339_utc_now();
    if (self->access_log && state->record.status) self->access_log(state->record);
    delete state;
  }

  static void on_log(void*, const char* fmt, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    std::string line = buf;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    log_verbose("serve: " + line);
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
HttpServer::HttpServer(HttpServer&&) noexcept = default;
HttpServer& HttpServer::operator=(HttpServer&&) noexcept = default;
HttpServer::~HttpServer() = default;

Result<HttpServer> HttpServer::start(const ServerOptions& o, HttpHandler handler, std::function<void(const AccessRecord&)> access_log) {
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  impl->access_log = std::move(access_log);
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (o.port < 0 || o.port > 65535) return input_error("serve: --listen port " + std::to_string(o.port) + " is not 0-65535");
  auto* v4 = reinterpret_cast<sockaddr_in*>(&impl->addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&impl->addr);
  if (inet_pton(AF_INET, o.address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(o.port));
  } else if (inet_pton(AF_INET6, o.address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(o.port));
    flags |= MHD_USE_IPv6;
  } else {
    return input_error("serve: --listen address '" + bounded_line(o.address) + "' is not an IPv4 or IPv6 address");
  }
  if (o.tls_cert_pem.empty() != o.tls_key_pem.empty()) return input_error("serve: TLS needs both a certificate and a key");
  if (!o.tls_cert_pem.empty()) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) return op_error("serve: this libmicrohttpd has no TLS");
    flags |= MHD_USE_TLS;
    impl->cert = o.tls_cert_pem;
    impl->key = o.tls_key_pem;
  }
  std::vector<MHD_OptionItem> opts = {
      {MHD_OPTION_SOCK_ADDR, 0, &impl->addr},
      {MHD_OPTION_THREAD_POOL_SIZE, static_cast<intptr_t>(o.threads ? o.threads : 1), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(o.max_connections), nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<intptr_t>(o.max_connections_per_client), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(o.max_request_bytes), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(o.idle_timeout.count()), nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Impl::on_completed), impl.get()},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Impl::on_log), nullptr},
      {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, nullptr},
  };
  if (!impl->cert.empty()) {
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, impl->cert.data()});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, impl->key.data()});
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* d = MHD_start_daemon(flags, static_cast<std::uint16_t>(o.port), nullptr, nullptr, &Impl::on_request, impl.get(),
                                   MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
  if (!d)
    return op_error("serve: cannot listen on " + bounded_line(o.address) + ":" + std::to_string(o.port) +
                    " (address in use, no permission, or a bad TLS certificate or key)");
  impl->daemon.reset(d);
  return HttpServer(std::move(impl));
}

int HttpServer::port() const {
  const MHD_DaemonInfo* info = MHD_get_daemon_info(m_impl->daemon.get(), MHD_DAEMON_INFO_BIND_PORT);
  return info ? info->port : 0;
}

void HttpServer::stop() {
  if (m_impl) m_impl->daemon.reset();
}

}  // namespace gb::serve
