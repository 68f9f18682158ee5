// The libcurl transport: the only file that includes curl_raii.hpp.
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/log.hpp"
#include "common/strings.hpp"
#include "net/curl_raii.hpp"
#include "net/handle_pool.hpp"
#include "net/transport.hpp"
#include "net/url.hpp"

namespace gb::net {

namespace {

NetError net_error(CURLcode code) {
  switch (code) {
    case CURLE_OK: return NetError::None;
    case CURLE_COULDNT_RESOLVE_HOST: return NetError::Resolve;
    case CURLE_COULDNT_RESOLVE_PROXY: return NetError::Proxy;
    case CURLE_COULDNT_CONNECT: return NetError::Connect;
    case CURLE_SSL_CONNECT_ERROR: return NetError::TlsHandshake;
    case CURLE_PEER_FAILED_VERIFICATION: return NetError::TlsVerify;
    case CURLE_SSL_CACERT_BADFILE: return NetError::TlsCaFile;
    case CURLE_SSL_CERTPROBLEM: return NetError::TlsClientCert;
    case CURLE_OPERATION_TIMEDOUT: return NetError::Timeout;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return NetError::Broken;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_READ_ERROR: return NetError::Aborted;
    case CURLE_UNSUPPORTED_PROTOCOL: return NetError::Refused;
    default: return NetError::Other;
  }
}

class CurlTransport final : public Transport {
public:
  explicit CurlTransport(TransportOptions o) : m_options(std::move(o)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    // The share handle shares DNS and TLS sessions between the easy handles;
    // libcurl needs the locks for that. Not connections: a shared connection
    // cache is not thread-safe (libcurl known bug 11.11, curl#4915), and it
    // corrupted the heap in parallel imports. Each pooled handle keeps its
    // own, and goes back to the origin it talked to (net/handle_pool.hpp).
    m_share = Share(curl_share_init());
    curl_share_setopt(m_share.get(), CURLSHOPT_LOCKFUNC, &CurlTransport::lock_cb);
    curl_share_setopt(m_share.get(), CURLSHOPT_UNLOCKFUNC, &CurlTransport::unlock_cb);
    curl_share_setopt(m_share.get(), CURLSHOPT_USERDATA, this);
    curl_share_setopt(m_share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(m_share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
  ~CurlTransport() override { m_pool.clear(); }  // easy handles before the share they use

  Response perform(const Request& req) override;

private:
  struct Transfer {
    const Request* req;
    Response* resp;
    CURL* curl;
    std::uint64_t read_pos = 0;  // within the request body
  };

  static void lock_cb(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    static_cast<CurlTransport*>(self)->m_share_locks[data].lock();
  }
  static void unlock_cb(CURL*, curl_lock_data data, void* self) {
    static_cast<CurlTransport*>(self)->m_share_locks[data].unlock();
  }

  static size_t on_header(char* data, size_t size, size_t n, void* p) {
    auto* t = static_cast<Transfer*>(p);
    std::string_view line(data, size * n);
    if (starts_with(line, "HTTP/")) {
      t->resp->headers.clear();  // a new response (after a 100-continue)
      return size * n;
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    std::string name = to_lower(trim(line.substr(0, colon)));
    std::string value(trim(line.substr(colon + 1)));
    auto& slot = t->resp->headers[name];
    slot = slot.empty() ? value : slot + ", " + value;
    return size * n;
  }

  static size_t on_write(char* data, size_t size, size_t n, void* p) {
    auto* t = static_cast<Transfer*>(p);
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->resp->status);
    return deliver_body(*t->req, *t->resp, std::string_view(data, size * n)) ? size * n : 0;
  }

  static size_t on_read(char* buf, size_t size, size_t n, void* p) {
    auto* t = static_cast<Transfer*>(p);
    const Request& r = *t->req;
    std::uint64_t left = r.body_size - t->read_pos;
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size * n, left));
    if (want == 0) return 0;
    auto got = r.read_body(t->read_pos, buf, want);
    if (!got || got.value() == 0) return CURL_READFUNC_ABORT;
    t->read_pos += got.value();
    return got.value();
  }

  // "scheme://host:port": the pool's key. libcurl itself checks that a
  // connection it reuses matches the transfer's TLS settings.
  static std::string pool_key(const std::string& url) {
    auto o = url_origin(url);
    return o ? o->scheme + "://" + o->host + ":" + std::to_string(o->port) : std::string();
  }

  TransportOptions m_options;
  std::mutex m_share_locks[CURL_LOCK_DATA_LAST];
  Share m_share;
  HandlePool<Easy> m_pool;  // idle easy handles by origin, each with its connection open
};

Response CurlTransport::perform(const Request& req) {
  Response resp;
  const std::string origin = pool_key(req.url);
  Easy easy = m_pool.take(origin).value_or(Easy());
  if (!easy) easy = Easy(curl_easy_init());
  CURL* c = easy.get();
  if (!c) {
    resp.error = NetError::Other;
    resp.error_text = "cannot start a transfer (out of memory?)";
    return resp;
  }
  curl_easy_reset(c);
  Transfer t{&req, &resp, c};
  char errbuf[CURL_ERROR_SIZE] = {0};
  HeaderList headers;
  for (const auto& h : req.headers) headers.append(h);
  bool has_body = req.method == "PUT" || req.method == "PATCH" || req.method == "POST";
  if (has_body) headers.append("Expect:");  // no 100-continue round trip

  curl_easy_setopt(c, CURLOPT_SHARE, m_share.get());
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_USERAGENT, m_options.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  // HTTP/1.1: parallel blobs get their own connections, which beats
  // multiplexing them over one h2 connection on fast links.
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(m_options.connect_timeout_s));
  // Stall detection only: a multi-GB layer must never hit a wall-clock limit.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(m_options.stall_timeout_s));
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &CurlTransport::on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &CurlTransport::on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  // Proxies: left to libcurl, which reads http_proxy/https_proxy/no_proxy.
  // Small bodies (everything but streams) have a deadline too, so a server
  // trickling a manifest cannot hold a run.
  if (!req.on_body && !req.read_body) curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(m_options.request_timeout_s));
  // No CURLOPT_FOLLOWLOCATION: the clients follow redirects (net/retry.hpp) and
  // decides per hop which headers go along.
  if (const TlsOptions* tls = req.tls) {
    // CAINFO adds the host's CA; the system CA path stays in effect.
    if (!tls->ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, tls->ca_file.c_str());
    if (!tls->client_cert.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, tls->client_cert.c_str());
    if (!tls->client_key.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, tls->client_key.c_str());
    if (tls->insecure_skip_verify) {
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
  }
  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body_size));
    curl_easy_setopt(c, CURLOPT_READFUNCTION, &CurlTransport::on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &t);
  } else if (req.method == "PUT" || req.method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body_size));
    curl_easy_setopt(c, CURLOPT_READFUNCTION, &CurlTransport::on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &t);
    if (req.method == "PATCH") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PATCH");
  } else if (req.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());

  CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  // A sink or cap that stopped the body already said why (deliver_body).
  if (code != CURLE_OK && resp.error == NetError::None) {
    resp.error = net_error(code);
    resp.error_text = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(code));
    long os_errno = 0;
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
    if (code == CURLE_COULDNT_CONNECT && os_errno == ECONNREFUSED) resp.error = NetError::ConnRefused;
    if (code == CURLE_OPERATION_TIMEDOUT && resp.status == 0) {
      // No TCP connection, or (https) no TLS session, when time ran out.
      curl_off_t connected = 0, app_connected = 0;
      curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connected);
      curl_easy_getinfo(c, CURLINFO_APPCONNECT_TIME_T, &app_connected);
      if (connected == 0 || (starts_with(req.url, "https://") && app_connected == 0)) resp.error = NetError::ConnectTimeout;
    }
  } else if (code != CURLE_OK && resp.error_text.empty()) {
    resp.error_text = curl_easy_strerror(code);
  }
  // Drop options pointing at this frame before the handle goes back.
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  m_pool.give(origin, std::move(easy));
  classify_tls_failure(*this, req, resp);  // a plain HTTP server at an https:// URL
  return resp;
}

}  // namespace

std::shared_ptr<Transport> curl_transport(const TransportOptions& options) {
  return std::make_shared<CurlTransport>(options);
}

}  // namespace gb::net
