#include "mirror/registry.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/http_curl.hpp"
#include "mirror/http_util.hpp"
#include "signing/digest.hpp"

namespace gb {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t k_manifest_cap = 16ull << 20;  // larger "manifests" are refused
constexpr std::uint64_t k_small_cap = 8ull << 20;      // error bodies, tag lists, tokens

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one HTTP exchange sends.
struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;
  const HostConfig* tls = nullptr;
  bool follow = false;  // GETs of blobs and URLs follow redirects to storage (send() follows them)
  // Body, either from memory or from a BlobSource range.
  std::string_view body;
  BlobSource* source = nullptr;
  std::uint64_t source_offset = 0;
  std::uint64_t source_len = 0;
  // A 2xx body goes here when set (return false to abort); otherwise it is
  // collected into Response::body up to body_cap.
  std::function<bool(long status, std::string_view chunk)> on_body;
  std::uint64_t body_cap = k_small_cap;
};

struct Response {
  long status = 0;
  CURLcode code = CURLE_OK;
  std::string curl_error;
  std::map<std::string, std::string> headers;  // lower-case names; repeats joined by ", "
  std::string body;
  bool body_too_large = false;
  bool aborted_by_sink = false;
  std::string effective_url;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  bool ok() const { return code == CURLE_OK && status >= 200 && status < 300; }
};

bool retryable(const Response& r) {
  switch (r.code) {
    case CURLE_OK:
      return r.status == 429 || r.status == 408 || (r.status >= 500 && r.status != 501 && r.status != 505);
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::string status_text(long status) {
  switch (status) {
    case 400: return "bad request";
    case 401: return "authentication required";
    case 403: return "access denied";
    case 404: return "not found";
    case 405: return "operation not supported by this registry";
    case 413: return "too large for this registry";
    case 416: return "range not satisfiable";
    case 429: return "too many requests";
    case 500: return "internal server error";
    case 502: return "bad gateway";
    case 503: return "service unavailable";
    case 504: return "gateway timeout";
    default: return "unexpected HTTP status";
  }
}

// "manifest unknown (404 MANIFEST_UNKNOWN)"
std::string http_problem(const Response& r, const std::string& fallback = {}) {
  auto e = http::parse_registry_error(r.body);
  std::string what = e && !e->message.empty() ? e->message : (fallback.empty() ? status_text(r.status) : fallback);
  std::string detail = std::to_string(r.status);
  if (e && !e->code.empty()) detail += " " + e->code;
  std::string out = what + " (" + detail + ")";
  if (r.status == 429 || r.status == 503)
    if (auto s = http::retry_after_seconds(r.header("retry-after")); s && *s > ClientOptions{}.retry_after_max_s)
      out += "; it asks to retry after " + std::to_string(*s) + " s, longer than gpubundle waits (" +
             std::to_string(ClientOptions{}.retry_after_max_s) + " s)";
  return out;
}

// A transport failure, one line: never the URL's query (tokens) or userinfo.
std::string transport_problem(const Response& r, const std::string& url) {
  std::string host = http::url_host(url);
  std::string err = r.curl_error.empty() ? curl_easy_strerror(r.code) : r.curl_error;
  switch (r.code) {
    case CURLE_COULDNT_RESOLVE_HOST: return "unknown host " + host + " (could not resolve it)";
    case CURLE_COULDNT_RESOLVE_PROXY: return "could not resolve the proxy for " + host + ": " + err;
    case CURLE_PEER_FAILED_VERIFICATION:
      return "TLS verification of " + host + " failed: " + err + " (give its CA as caFile in the registry config)";
    case CURLE_SSL_CACERT_BADFILE: return "cannot read the CA file for " + host + ": " + err;
    case CURLE_SSL_CERTPROBLEM: return "cannot use the client certificate for " + host + ": " + err;
    case CURLE_OPERATION_TIMEDOUT: return "transfer from " + host + " stalled or timed out: " + err;
    case CURLE_COULDNT_CONNECT: return "cannot connect to " + host + ": " + err;
    default: return host + ": " + err;
  }
}

// Sleeps before retry number `attempt`; `waited` sums the sleeps of one
// request. False (no sleep) when the server asks for longer than
// retry_after_max_s or the sum would pass retry_total_s: the caller gives up
// and reports the last answer.
bool backoff_sleep(const ClientOptions& o, int attempt, const Response& r, std::chrono::milliseconds& waited) {
  std::optional<int> asked;
  if (r.status == 429 || r.status == 503) asked = http::retry_after_seconds(r.header("retry-after"));  // both may say when
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  auto ms = http::retry_delay_ms(attempt, o.backoff_ms, asked, o.retry_after_max_s, jitter(rng));
  if (!ms) return false;
  auto wait = std::chrono::milliseconds(*ms);
  if (waited + wait > std::chrono::seconds(o.retry_total_s)) return false;
  waited += wait;
  std::this_thread::sleep_for(wait);
  return true;
}

struct Token {
  std::string value;
  Clock::time_point expires;
};

// What a host asked for on its last 401.
struct HostAuth {
  enum class Kind { Unknown, Anonymous, Basic, Bearer } kind = Kind::Unknown;
  std::string realm;
  std::string service;
};

// Pulls and pushes speak to one endpoint with one set of scopes.
struct Target {
  Endpoint endpoint;
  std::vector<std::string> scopes;  // "repository:nvidia/driver:pull"
};

// The outcome of one endpoint: a result, "not here" (try the next), or a failure.
enum class Outcome { Done, NotFound, Unreachable, Failed };

// A digest from a manifest, a header, a lock or a caller, checked before it
// reaches a URL; the message quotes at most 80 characters of it.
Result<void> check_digest(const std::string& what, std::string_view digest) {
  if (http::is_valid_digest(digest)) return {};
  std::string shown(digest.substr(0, 80));
  if (digest.size() > 80) shown += "...";
  return input_error(what + ": invalid digest '" + shown + "' (expected sha256:<64 hex digits>)");
}

std::string pull_scope(const Reference& r) { return "repository:" + r.repository + ":pull"; }
std::string push_scope(const Reference& r) { return "repository:" + r.repository + ":pull,push"; }

}  // namespace

struct RegistryClient::Impl {
  RegistryConfig config;
  ClientOptions options;

  // CURLSH shares DNS, TLS sessions and connections between the easy handles;
  // libcurl needs the locks for that.
  std::mutex share_locks[CURL_LOCK_DATA_LAST];
  http::Share share;
  std::mutex pool_mutex;
  std::vector<http::Easy> pool;  // idle easy handles, reused for keep-alive

  std::mutex auth_mutex;
  std::map<std::string, HostAuth> host_auth;                          // by endpoint host
  std::map<std::string, Token> tokens;                                // by host + " " + scopes
  std::map<std::string, std::optional<Credential>> credentials;       // by host

  std::atomic<std::uint64_t> n_requests{0}, n_bytes{0}, n_pushed{0}, n_mounted{0}, n_retries{0};

  Impl(RegistryConfig c, ClientOptions o) : config(std::move(c)), options(std::move(o)) {
    global_init();
    share = http::Share(curl_share_init());
    curl_share_setopt(share.get(), CURLSHOPT_LOCKFUNC, &Impl::lock_cb);
    curl_share_setopt(share.get(), CURLSHOPT_UNLOCKFUNC, &Impl::unlock_cb);
    curl_share_setopt(share.get(), CURLSHOPT_USERDATA, this);
    curl_share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    if (options.max_parallel < 1) options.max_parallel = 1;
    if (options.max_per_host < 1) options.max_per_host = 1;
    if (options.chunk_size < 1) options.chunk_size = 1;
    if (const char* t = std::getenv("GPUBUNDLE_HTTP_TIMEOUT_S"); t && std::atoi(t) > 0) options.request_timeout_s = std::atoi(t);
  }
  ~Impl() {
    pool.clear();  // easy handles before the share they use
  }

  static void lock_cb(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    static_cast<Impl*>(self)->share_locks[data].lock();
  }
  static void unlock_cb(CURL*, curl_lock_data data, void* self) { static_cast<Impl*>(self)->share_locks[data].unlock(); }

  http::Easy take_handle() {
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        http::Easy e = std::move(pool.back());
        pool.pop_back();
        return e;
      }
    }
    return http::Easy(curl_easy_init());
  }
  void give_handle(http::Easy e) {
    std::lock_guard lock(pool_mutex);
    pool.push_back(std::move(e));
  }

  // ---- one HTTP exchange, no retries, no auth logic ----

  struct Transfer {
    Request* req;
    Response* resp;
    CURL* curl;
    std::uint64_t read_pos = 0;  // within the request body
  };

  static size_t on_header(char* data, size_t size, size_t n, void* p) {
    auto* t = static_cast<Transfer*>(p);
    std::string_view line(data, size * n);
    if (starts_with(line, "HTTP/")) {
      t->resp->headers.clear();  // a new response (after a redirect or 100-continue)
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
    std::string_view chunk(data, size * n);
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300 && t->req->on_body) {
      if (!t->req->on_body(status, chunk)) {
        t->resp->aborted_by_sink = true;
        return 0;
      }
      return chunk.size();
    }
    if (t->resp->body.size() + chunk.size() > t->req->body_cap) {
      t->resp->body_too_large = true;
      return 0;
    }
    t->resp->body.append(chunk);
    return chunk.size();
  }

  static size_t on_read(char* buf, size_t size, size_t n, void* p) {
    auto* t = static_cast<Transfer*>(p);
    Request& r = *t->req;
    std::size_t want = size * n;
    if (r.source) {
      std::uint64_t left = r.source_len - t->read_pos;
      want = static_cast<std::size_t>(std::min<std::uint64_t>(want, left));
      if (want == 0) return 0;
      auto got = r.source->read(r.source_offset + t->read_pos, buf, want);
      if (!got || got.value() == 0) return CURL_READFUNC_ABORT;
      t->read_pos += got.value();
      return got.value();
    }
    std::uint64_t left = r.body.size() - t->read_pos;
    want = static_cast<std::size_t>(std::min<std::uint64_t>(want, left));
    std::memcpy(buf, r.body.data() + t->read_pos, want);
    t->read_pos += want;
    return want;
  }

  Response perform(Request& req) {
    Response resp;
    http::Easy easy = take_handle();
    CURL* c = easy.get();
    if (!c) {
      resp.code = CURLE_FAILED_INIT;
      return resp;
    }
    curl_easy_reset(c);
    Transfer t{&req, &resp, c};
    char errbuf[CURL_ERROR_SIZE] = {0};
    http::HeaderList headers;
    for (auto& h : req.headers) headers.append(h);
    std::uint64_t body_len = req.source ? req.source_len : req.body.size();
    bool has_body = req.method == "PUT" || req.method == "PATCH" || req.method == "POST";
    if (has_body) headers.append("Expect:");  // no 100-continue round trip

    curl_easy_setopt(c, CURLOPT_SHARE, share.get());
    curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // HTTP/1.1: parallel blobs get their own connections, which beats
    // multiplexing them over one h2 connection on fast links.
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout_s));
    // Stall detection only: a multi-GB layer must never hit a wall-clock limit.
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.stall_timeout_s));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Impl::on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    // Proxies: left to libcurl, which reads http_proxy/https_proxy/no_proxy.
    // Small bodies (everything but streamed blobs) have a deadline too, so a
    // server trickling a manifest cannot hold a run.
    if (!req.on_body && !req.source) curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(options.request_timeout_s));
    // No CURLOPT_FOLLOWLOCATION: send() follows redirects and decides per hop
    // which headers go along.
    if (const HostConfig* tls = req.tls) {
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
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_len));
      curl_easy_setopt(c, CURLOPT_READFUNCTION, &Impl::on_read);
      curl_easy_setopt(c, CURLOPT_READDATA, &t);
    } else if (req.method == "PUT" || req.method == "PATCH") {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_len));
      curl_easy_setopt(c, CURLOPT_READFUNCTION, &Impl::on_read);
      curl_easy_setopt(c, CURLOPT_READDATA, &t);
      if (req.method == "PATCH") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PATCH");
    } else if (req.method != "GET") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());

    ++n_requests;
    resp.code = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
    char* eff = nullptr;
    if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) resp.effective_url = eff;
    resp.curl_error = errbuf;
    // Drop options pointing at this frame before the handle goes back.
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
    give_handle(std::move(easy));
    if (log::level() >= log::Level::Verbose) {
      std::string what = resp.code == CURLE_OK ? std::to_string(resp.status) : std::string(curl_easy_strerror(resp.code));
      log::verbose(req.method + " " + log::redact_url(req.url) + " -> " + what);
    }
    return resp;
  }

  // ---- credentials and tokens ----

  Result<std::optional<Credential>> credential(const std::string& host) {
    {
      std::lock_guard lock(auth_mutex);
      auto it = credentials.find(host);
      if (it != credentials.end()) return it->second;
    }
    auto c = find_credential(config, host);
    if (!c) return c.error();
    std::lock_guard lock(auth_mutex);
    credentials[host] = c.value();
    return c.value();
  }

  static std::string token_key(const std::string& host, const std::vector<std::string>& scopes) {
    return host + " " + join(scopes, " ");
  }

  // Fetches a bearer token from the challenge's realm (anonymous, basic
  // credentials, or an identity token as an OAuth2 refresh token).
  Result<std::string> fetch_token(const Endpoint& ep, const HostAuth& ha, const std::vector<std::string>& scopes) {
    auto cred = credential(ep.host);
    if (!cred) return cred.error();
    Request req;
    req.tls = config.host(http::url_host(ha.realm));
    if (!req.tls) req.tls = ep.tls;
    std::string query;
    if (!ha.service.empty()) query += "service=" + http::url_encode(ha.service);
    for (auto& s : scopes) query += std::string(query.empty() ? "" : "&") + "scope=" + http::url_encode(s);
    std::string form;
    if (cred.value() && !cred.value()->identity_token.empty()) {
      req.method = "POST";
      req.url = ha.realm;
      form = "grant_type=refresh_token&client_id=gpubundle&refresh_token=" +
             http::url_encode(cred.value()->identity_token) + (query.empty() ? "" : "&" + query);
      req.body = form;
      req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
    } else {
      req.url = ha.realm + (query.empty() ? "" : std::string(ha.realm.find('?') == std::string::npos ? "?" : "&") + query);
      if (cred.value())
        req.headers.push_back("Authorization: Basic " +
                              http::base64_encode(cred.value()->username + ":" + cred.value()->password));
    }
    Response r = with_retries(req);
    std::string who = cred.value() ? " for user " + cred.value()->username : std::string();
    if (r.code != CURLE_OK) return op_error(ep.host + ": token service: " + transport_problem(r, req.url));
    if (r.status == 401 || r.status == 403)
      return op_error(ep.host + ": authentication failed" + who + " (" + std::to_string(r.status) + ")");
    if (!r.ok()) return op_error(ep.host + ": token service answered " + http_problem(r));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return op_error(ep.host + ": token service sent no JSON");
    std::string tok;
    if (j.contains("token") && j["token"].is_string()) tok = j["token"].get<std::string>();
    if (tok.empty() && j.contains("access_token") && j["access_token"].is_string())
      tok = j["access_token"].get<std::string>();
    if (tok.empty()) return op_error(ep.host + ": token service sent no token");
    int expires = 60;  // the spec's default when expires_in is absent
    if (j.contains("expires_in") && j["expires_in"].is_number_integer()) expires = j["expires_in"].get<int>();
    if (expires < 60) expires = 60;
    std::lock_guard lock(auth_mutex);
    // Renew a little early so a token never expires mid-request.
    tokens[token_key(ep.host, scopes)] = Token{tok, Clock::now() + std::chrono::seconds(expires - 10)};
    return tok;
  }

  // The Authorization header to send to `ep` now, or empty.
  Result<std::string> auth_header(const Endpoint& ep, const std::vector<std::string>& scopes) {
    HostAuth ha;
    {
      std::lock_guard lock(auth_mutex);
      auto it = host_auth.find(ep.host);
      if (it == host_auth.end()) return std::string();
      ha = it->second;
      if (ha.kind == HostAuth::Kind::Bearer) {
        auto t = tokens.find(token_key(ep.host, scopes));
        if (t != tokens.end() && t->second.expires > Clock::now()) return "Authorization: Bearer " + t->second.value;
      }
    }
    if (ha.kind == HostAuth::Kind::Basic) {
      auto cred = credential(ep.host);
      if (!cred) return cred.error();
      if (!cred.value()) return std::string();
      return "Authorization: Basic " + http::base64_encode(cred.value()->username + ":" + cred.value()->password);
    }
    if (ha.kind == HostAuth::Kind::Bearer) {
      auto tok = fetch_token(ep, ha, scopes);
      if (!tok) return tok.error();
      return "Authorization: Bearer " + tok.value();
    }
    return std::string();
  }

  // Learns the host's scheme from a 401. False when nothing new can be tried.
  Result<bool> learn_challenge(const Endpoint& ep, const Response& r, std::vector<std::string>& scopes) {
    auto challenges = http::parse_www_authenticate(r.header("www-authenticate"));
    HostAuth ha;
    for (auto& c : challenges) {
      if (c.scheme == "bearer" && !c.param("realm").empty()) {
        ha.kind = HostAuth::Kind::Bearer;
        ha.realm = c.param("realm");
        ha.service = c.param("service");
        // The registry may name a scope we did not think of.
        std::string s = c.param("scope");
        if (!s.empty() && std::find(scopes.begin(), scopes.end(), s) == scopes.end()) scopes.push_back(s);
        break;
      }
      if (c.scheme == "basic") ha.kind = HostAuth::Kind::Basic;
    }
    if (ha.kind == HostAuth::Kind::Unknown) return false;
    std::lock_guard lock(auth_mutex);
    host_auth[ep.host] = ha;
    tokens.erase(token_key(ep.host, scopes));  // a 401 with a cached token: it is stale
    return true;
  }

  Response with_retries(Request& req) {
    Response r;
    std::chrono::milliseconds waited{0};
    for (int attempt = 0;; ++attempt) {
      r = perform(req);
      if (!retryable(r) || attempt >= options.retries) return r;
      if (!backoff_sleep(options, attempt, r, waited)) return r;
      ++n_retries;
      log::verbose("retrying " + req.method + " " + log::redact_url(req.url) + " (" +
                   (r.code != CURLE_OK ? std::string(curl_easy_strerror(r.code)) : std::to_string(r.status)) + ")");
    }
  }

  // The one place where a request's credentials are chosen from its target:
  // the endpoint's Authorization header and TLS client settings go only to
  // the endpoint's own origin; any other origin (an upload Location, a
  // redirect to storage, a Link page) gets neither.
  void address(Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers, const std::string& auth) const {
    req.headers = base_headers;
    if (http::same_origin(req.url, ep.base_url)) {
      req.tls = ep.tls;
      if (!auth.empty()) req.headers.push_back(auth);
    } else {
      req.tls = config.host(http::url_host(req.url));  // its own entry, if the config has one
    }
  }

  // One exchange plus the redirects of a `follow` request (at most 10), each
  // hop addressed afresh. A 303 turns the request into a GET without a body.
  Response exchange(Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers, const std::string& auth,
                    bool retry) {
    address(req, ep, base_headers, auth);
    Response r = retry ? with_retries(req) : perform(req);
    for (int hop = 0; req.follow && r.code == CURLE_OK && hop < 10; ++hop) {
      if (r.status != 301 && r.status != 302 && r.status != 303 && r.status != 307 && r.status != 308) break;
      std::string loc = r.header("location");
      if (loc.empty()) break;
      std::string next = http::resolve_url(req.url, loc);
      if (!starts_with(next, "https://") && !starts_with(next, "http://")) break;
      if (starts_with(req.url, "https://") && starts_with(next, "http://")) {
        r.code = CURLE_UNSUPPORTED_PROTOCOL;
        r.curl_error = "refused a redirect from https to plain http";
        break;
      }
      log::verbose(req.method + " " + log::redact_url(req.url) + " -> " + std::to_string(r.status) + " " + log::redact_url(next));
      req.url = next;
      address(req, ep, base_headers, auth);
      r = retry ? with_retries(req) : perform(req);
    }
    return r;
  }

  // One request with auth: sends, answers a 401 challenge once, and turns a
  // final 401 into a clear failure. `retry` = retry connection errors/5xx here.
  Result<Response> send(const Endpoint& ep, std::vector<std::string> scopes, Request req, bool retry = true) {
    std::vector<std::string> base_headers = req.headers;
    const std::string first_url = req.url;
    for (int round = 0; round < 2; ++round) {
      auto auth = auth_header(ep, scopes);
      if (!auth) return auth.error();
      req.url = first_url;
      Response r = exchange(req, ep, base_headers, auth.value(), retry);
      if (r.code != CURLE_OK || r.status != 401) return r;
      // Another origin's challenge is not the endpoint's: report it as is.
      if (!http::same_origin(req.url, ep.base_url)) return r;
      if (round == 0) {
        auto learned = learn_challenge(ep, r, scopes);
        if (!learned) return learned.error();
        if (learned.value()) continue;
      }
      auto cred = credential(ep.host);
      if (!cred) return cred.error();
      if (cred.value())
        return op_error(ep.host + ": authentication failed for user " + cred.value()->username + " (401)");
      return op_error(ep.host + ": " + http_problem(r) +
                      "; no credentials for this host (registry config, $REGISTRY_AUTH_FILE, "
                      "$DOCKER_CONFIG/config.json, ~/.docker/config.json)");
    }
    return op_error(ep.host + ": authentication failed (401)");
  }

  struct BlobFetch;

  std::string api(const Endpoint& ep, const Reference& r, const std::string& rest) const {
    return ep.base_url + "/v2/" + r.repository + rest;
  }
};

RegistryClient::RegistryClient(RegistryConfig config, ClientOptions options)
    : m_impl(std::make_unique<Impl>(std::move(config), std::move(options))) {}
RegistryClient::~RegistryClient() = default;

RegistryClient::Stats RegistryClient::stats() const {
  Stats s;
  s.requests = m_impl->n_requests;
  s.blob_bytes_downloaded = m_impl->n_bytes;
  s.blobs_pushed = m_impl->n_pushed;
  s.blobs_mounted = m_impl->n_mounted;
  s.retries = m_impl->n_retries;
  return s;
}

Result<oci::Manifest> RegistryClient::get_manifest(const Reference& ref) {
  auto& im = *m_impl;
  std::string what = ref.str();
  std::string target = ref.digest.empty() ? ref.tag : ref.digest;
  if (target.empty()) return input_error(what + ": needs a tag or a digest");
  if (!ref.digest.empty())
    if (auto c = check_digest(ref.name(), ref.digest); !c) return c.error();
  auto eps = im.config.endpoints(ref.registry);
  std::string last;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    const Endpoint& ep = eps[i];
    bool more = i + 1 < eps.size();
    Request req;
    req.url = im.api(ep, ref, "/manifests/" + target);
    req.headers.push_back("Accept: " + oci::accept_header());
    req.body_cap = k_manifest_cap;
    auto sent = im.send(ep, {pull_scope(ref)}, req);
    if (!sent) {
      last = what + ": " + sent.error().message;
      if (more) continue;
      return op_error(last);
    }
    Response& r = sent.value();
    if (r.code != CURLE_OK) {
      last = what + ": " + (r.body_too_large ? "manifest larger than 16 MiB" : transport_problem(r, req.url));
      if (more && !r.body_too_large) {
        log::verbose(last + "; trying the next endpoint");
        continue;
      }
      return op_error(last);
    }
    if (r.status == 404 && more) {
      log::verbose(what + ": not on " + log::redact_url(ep.base_url) + "; trying the next endpoint");
      continue;
    }
    if (!r.ok()) return op_error(what + ": " + http_problem(r, r.status == 404 ? "manifest unknown" : ""));
    std::string got = sha256_digest(r.body);
    std::string served = r.header("docker-content-digest");
    if (!served.empty() && starts_with(served, "sha256:") && served != got)
      return op_error(what + ": Docker-Content-Digest " + served + " does not match the bytes served (" + got + ")");
    if (!ref.digest.empty() && got != ref.digest)
      return op_error(what + ": the bytes served hash to " + got + ", not the requested digest");
    auto m = oci::parse_manifest(std::move(r.body), r.header("content-type"));
    if (!m) return Failure{m.error().kind, what + ": " + m.error().message};
    return m;
  }
  return op_error(last.empty() ? what + ": no endpoint to try" : last);
}

Result<std::optional<std::string>> RegistryClient::head_manifest(const Reference& ref) {
  auto& im = *m_impl;
  std::string what = ref.str();
  std::string target = ref.digest.empty() ? ref.tag : ref.digest;
  if (target.empty()) return input_error(what + ": needs a tag or a digest");
  if (!ref.digest.empty())
    if (auto c = check_digest(ref.name(), ref.digest); !c) return c.error();
  auto eps = im.config.endpoints(ref.registry);
  std::string last;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    const Endpoint& ep = eps[i];
    bool more = i + 1 < eps.size();
    Request req;
    req.method = "HEAD";
    req.url = im.api(ep, ref, "/manifests/" + target);
    req.headers.push_back("Accept: " + oci::accept_header());
    auto sent = im.send(ep, {pull_scope(ref)}, req);
    if (!sent) {
      last = what + ": " + sent.error().message;
      if (more) continue;
      return op_error(last);
    }
    Response& r = sent.value();
    if (r.code != CURLE_OK) {
      last = what + ": " + transport_problem(r, req.url);
      if (more) continue;
      return op_error(last);
    }
    if (r.status == 404) {
      if (more) continue;
      return std::optional<std::string>{};
    }
    if (!r.ok()) return op_error(what + ": " + http_problem(r));
    std::string d = r.header("docker-content-digest");
    if (d.empty()) {
      // Old registries omit the header on HEAD; the bytes tell.
      auto m = get_manifest(ref);
      if (!m) return m.error();
      d = m->digest;
    }
    if (auto c = check_digest(what + ": Docker-Content-Digest", d); !c) return op_error(c.error().message);
    return std::optional<std::string>(d);
  }
  return op_error(last.empty() ? what + ": no endpoint to try" : last);
}

Result<std::vector<std::string>> RegistryClient::list_tags(const Reference& repo, int page_size) {
  auto& im = *m_impl;
  std::string what = repo.name();
  auto eps = im.config.endpoints(repo.registry);
  std::string last;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    const Endpoint& ep = eps[i];
    bool more = i + 1 < eps.size();
    std::vector<std::string> tags;
    std::string url = im.api(ep, repo, "/tags/list") + (page_size > 0 ? "?n=" + std::to_string(page_size) : "");
    bool next_endpoint = false;
    for (int page = 0; page < 100000 && !url.empty(); ++page) {
      Request req;
      req.url = url;
      auto sent = im.send(ep, {pull_scope(repo)}, req);
      if (!sent) return op_error(what + ": " + sent.error().message);
      Response& r = sent.value();
      if (r.code != CURLE_OK) {
        last = what + ": " + transport_problem(r, url);
        next_endpoint = true;
        break;
      }
      if (r.status == 404 && page == 0) {
        last = what + ": " + http_problem(r, "repository unknown");
        next_endpoint = true;
        break;
      }
      if (!r.ok()) return op_error(what + ": listing tags: " + http_problem(r));
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return op_error(what + ": tag list is not JSON");
      if (j.contains("tags") && j["tags"].is_array())
        for (auto& t : j["tags"])
          if (t.is_string()) tags.push_back(t.get<std::string>());
      auto next = http::next_link(r.header("link"));
      url = next ? http::resolve_url(url, *next) : std::string();
    }
    if (next_endpoint) {
      if (more) continue;
      return op_error(last);
    }
    return tags;
  }
  return op_error(last.empty() ? what + ": no endpoint to try" : last);
}

// Streams one blob from one endpoint. Resumes with Range after a broken
// transfer; restarts when the server ignores Range or the bytes are corrupt.
struct RegistryClient::Impl::BlobFetch {
  RegistryClient::Impl& im;
  const Endpoint& ep;
  const Reference& repo;
  const std::string& digest;
  std::uint64_t size;
  BlobSink& sink;
  const std::function<void(std::uint64_t)>& on_bytes;
  std::uint64_t& reported;  // bytes already reported through on_bytes (never goes back)
  std::string problem;

  Outcome run() {
    std::string what = repo.name() + "@" + digest;
    Sha256 hasher;
    std::uint64_t got = 0;
    auto restart = [&]() -> bool {
      hasher = Sha256();
      got = 0;
      auto t = sink.truncate();
      if (!t) problem = what + ": " + t.error().message;
      return t.ok();
    };
    // Bytes an earlier run left: hashed here, the rest asked for with Range,
    // the whole checked at the end like any download.
    if (auto held = sink.resume(hasher); !held) {
      problem = what + ": " + held.error().message;
      return Outcome::Failed;
    } else if (*held > size) {
      if (!restart()) return Outcome::Failed;
    } else if (*held > 0) {
      got = *held;
      log::verbose(what + ": resuming at byte " + std::to_string(got) + " of " + std::to_string(size) + " (left by an earlier run)");
    }
    int failures = 0;
    std::chrono::milliseconds waited{0};
    std::string sink_error;
    while (true) {
      Request req;
      req.url = ep.base_url + "/v2/" + repo.repository + "/blobs/" + digest;
      req.follow = true;
      std::uint64_t start = got;
      if (start > 0) req.headers.push_back("Range: bytes=" + std::to_string(start) + "-");
      bool first = true;
      bool too_big = false;
      req.on_body = [&](long status, std::string_view chunk) {
        if (first) {
          first = false;
          if (start > 0 && status == 200 && !restart()) return false;  // Range ignored: start over
        }
        if (got + chunk.size() > size) {
          too_big = true;
          return false;
        }
        hasher.update(chunk);
        auto w = sink.write(chunk);
        if (!w) {
          sink_error = w.error().message;
          return false;
        }
        got += chunk.size();
        im.n_bytes += chunk.size();
        if (got > reported) {
          if (on_bytes) on_bytes(got - reported);
          reported = got;
        }
        return true;
      };
      auto sent = im.send(ep, {pull_scope(repo)}, req, /*retry=*/false);
      if (!sent) {
        problem = what + ": " + sent.error().message;
        return Outcome::Failed;
      }
      Response& r = sent.value();
      if (!sink_error.empty()) {
        problem = what + ": " + sink_error;
        return Outcome::Failed;
      }
      if (r.code == CURLE_OK && r.status == 404) {
        problem = what + ": " + http_problem(r, "blob unknown");
        return Outcome::NotFound;
      }
      if (r.code == CURLE_OK && r.status == 416 && got == size && size > 0) {
        // Everything arrived before the connection broke; nothing left to send.
      } else if (r.code == CURLE_OK && r.ok() && !too_big) {
        if (got != size) {
          problem = what + ": size " + std::to_string(got) + " instead of " + std::to_string(size);
          return Outcome::Failed;
        }
      } else {
        bool broken = too_big || retryable(r);
        if (!broken || failures >= im.options.retries) {
          if (too_big)
            problem = what + ": the registry sent more than the expected " + std::to_string(size) + " bytes";
          else if (r.code != CURLE_OK)
            problem = what + ": " + transport_problem(r, req.url);
          else
            problem = what + ": " + http_problem(r);
          return r.code != CURLE_OK && r.code != CURLE_WRITE_ERROR ? Outcome::Unreachable : Outcome::Failed;
        }
        if (!backoff_sleep(im.options, failures, r, waited)) {
          problem = what + ": " + (r.code != CURLE_OK ? transport_problem(r, req.url) : http_problem(r));
          return Outcome::Failed;
        }
        ++failures;
        ++im.n_retries;
        if (too_big && !restart()) return Outcome::Failed;
        log::verbose(what + ": transfer broke at byte " + std::to_string(got) + ", resuming");
        continue;
      }
      std::string hex = hasher.hex();
      if ("sha256:" + hex == digest) return Outcome::Done;
      // Corrupt bytes (a bad proxy, a bad disk on the server): start over,
      // within the same retry budget as broken transfers.
      if (failures >= im.options.retries) {
        problem = what + ": the bytes served hash to sha256:" + hex + " (corrupt download)";
        return Outcome::Failed;
      }
      ++failures;
      ++im.n_retries;
      log::warn(what + ": digest mismatch, downloading it again");
      if (!restart()) return Outcome::Failed;
    }
  }
};

Result<void> RegistryClient::fetch_blob(const Reference& repo, const std::string& digest, std::uint64_t size,
                                        BlobSink& sink, const std::function<void(std::uint64_t)>& on_bytes) {
  auto& im = *m_impl;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  if (!starts_with(digest, "sha256:"))
    return input_error(repo.name() + ": unsupported blob digest '" + digest + "' (sha256 only)");
  auto eps = im.config.endpoints(repo.registry);
  std::uint64_t reported = 0;
  std::string last;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    Impl::BlobFetch f{im, eps[i], repo, digest, size, sink, on_bytes, reported, {}};
    Outcome o = f.run();
    if (o == Outcome::Done) return {};
    last = f.problem;
    if (o == Outcome::Failed || i + 1 == eps.size()) break;
    log::verbose(last + "; trying the next endpoint");
  }
  return op_error(last.empty() ? repo.name() + "@" + digest + ": no endpoint to try" : last);
}

Result<void> RegistryClient::fetch_blobs(std::vector<BlobRequest> requests,
                                         const std::function<void(std::uint64_t)>& on_bytes) {
  if (requests.empty()) return {};
  std::mutex m;
  std::condition_variable cv;
  std::vector<bool> taken(requests.size(), false);
  std::size_t remaining = requests.size();
  std::map<std::string, int> active;  // transfers per registry host
  std::vector<std::string> errors;
  std::mutex progress_mutex;
  auto report = [&](std::uint64_t n) {
    if (!on_bytes) return;
    std::lock_guard lock(progress_mutex);
    on_bytes(n);
  };
  int per_host = m_impl->options.max_per_host;

  auto worker = [&] {
    while (true) {
      std::size_t pick = requests.size();
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] {
          if (remaining == 0) return true;
          for (std::size_t i = 0; i < requests.size(); ++i)
            if (!taken[i] && active[requests[i].repo.registry] < per_host) return true;
          return false;
        });
        if (remaining == 0) return;
        for (std::size_t i = 0; i < requests.size(); ++i)
          if (!taken[i] && active[requests[i].repo.registry] < per_host) {
            pick = i;
            break;
          }
        taken[pick] = true;
        --remaining;
        ++active[requests[pick].repo.registry];
      }
      BlobRequest& rq = requests[pick];
      std::string err;
      std::unique_ptr<BlobSink> sink = rq.open_sink ? rq.open_sink() : nullptr;
      if (!sink) {
        err = rq.repo.name() + "@" + rq.digest + ": no place to write the blob";
      } else {
        auto r = fetch_blob(rq.repo, rq.digest, rq.size, *sink, report);
        if (!r)
          err = r.error().message;
        else if (rq.on_done) {
          auto d = rq.on_done(*sink);
          if (!d) err = d.error().message;
        }
      }
      std::lock_guard lock(m);
      --active[rq.repo.registry];
      if (!err.empty()) errors.push_back(err);
      cv.notify_all();
    }
  };
  std::size_t n = std::min<std::size_t>(requests.size(), static_cast<std::size_t>(m_impl->options.max_parallel));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i + 1 < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (!errors.empty()) return op_error(join(errors, "\n"));
  return {};
}

Result<std::string> RegistryClient::get_url(const std::string& url) {
  auto& im = *m_impl;
  std::string shown = log::redact_url(url);
  if (!starts_with(url, "https://") && !starts_with(url, "http://"))
    return input_error(shown + ": only http:// and https:// URLs can be fetched");
  if (!http::url_origin(url)) return input_error(shown + ": not a valid URL");
  Endpoint ep;
  ep.host = http::url_host(url);
  ep.base_url = url;  // same origin as the URL: credentials for its host go along
  ep.tls = im.config.host(ep.host);
  Request req;
  req.url = url;
  req.follow = true;
  req.body_cap = k_url_max_bytes;
  auto sent = im.send(ep, {}, req);
  if (!sent) return op_error(shown + ": " + sent.error().message);
  Response& r = sent.value();
  if (r.code != CURLE_OK)
    return op_error(shown + ": " + (r.body_too_large ? "larger than " + std::to_string(k_url_max_bytes >> 20) + " MiB (refused)" : transport_problem(r, url)));
  if (!r.ok()) return op_error(shown + ": " + http_problem(r));
  return std::move(r.body);
}

Result<bool> RegistryClient::blob_exists(const Reference& repo, const std::string& digest) {
  auto& im = *m_impl;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  Endpoint ep = im.config.push_endpoint(repo.registry);
  Request req;
  req.method = "HEAD";
  req.url = im.api(ep, repo, "/blobs/" + digest);
  auto sent = im.send(ep, {push_scope(repo)}, req);
  std::string what = repo.name() + "@" + digest;
  if (!sent) return op_error(what + ": " + sent.error().message);
  Response& r = sent.value();
  if (r.code != CURLE_OK) return op_error(what + ": " + transport_problem(r, req.url));
  if (r.status == 404) return false;
  if (!r.ok()) return op_error(what + ": " + http_problem(r));
  return true;
}

namespace {

std::string with_query(const std::string& url, const std::string& param) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + param;
}

}  // namespace

Result<bool> RegistryClient::mount_blob(const Reference& repo, const std::string& digest, const Reference& from) {
  auto& im = *m_impl;
  std::string what = repo.name() + "@" + digest;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  if (from.registry != repo.registry || from.repository == repo.repository) return false;
  Endpoint ep = im.config.push_endpoint(repo.registry);
  Request req;
  req.method = "POST";
  req.url = im.api(ep, repo, "/blobs/uploads/") + "?mount=" + http::url_encode(digest) + "&from=" + http::url_encode(from.repository);
  auto sent = im.send(ep, {push_scope(repo), pull_scope(from)}, req);
  if (!sent) return Failure{sent.error().kind, what + ": " + sent.error().message};
  Response& r = sent.value();
  if (r.code != CURLE_OK) return op_error(what + ": mounting from " + from.repository + ": " + transport_problem(r, req.url));
  if (r.status == 201) {
    ++im.n_mounted;
    return true;
  }
  if (r.status != 202) return op_error(what + ": mounting from " + from.repository + ": " + http_problem(r));
  // Refused: the registry opened an upload session instead. Close it; registries expire it anyway.
  if (std::string loc = r.header("location"); !loc.empty()) {
    Request cancel;
    cancel.method = "DELETE";
    cancel.url = http::resolve_url(req.url, loc);
    (void)im.send(ep, {push_scope(repo)}, cancel, /*retry=*/false);
  }
  return false;
}

Result<void> RegistryClient::push_blob(const Reference& repo, const std::string& digest, BlobSource& source,
                                       const std::optional<Reference>& mount_from) {
  auto& im = *m_impl;
  std::string what = repo.name() + "@" + digest;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  Endpoint ep = im.config.push_endpoint(repo.registry);
  std::vector<std::string> scopes = {push_scope(repo)};
  const std::uint64_t size = source.size();
  auto fail = [&](const std::string& step, const Response& r, const std::string& url) -> Failure {
    if (r.code != CURLE_OK) return op_error(what + ": " + step + ": " + transport_problem(r, url));
    return op_error(what + ": " + step + ": " + http_problem(r));
  };

  // Opens an upload session; with a mount source, may finish at once (201).
  auto start = [&](bool try_mount, bool& mounted) -> Result<std::string> {
    Request req;
    req.method = "POST";
    req.url = im.api(ep, repo, "/blobs/uploads/");
    std::vector<std::string> sc = scopes;
    if (try_mount) {
      req.url += "?mount=" + http::url_encode(digest) + "&from=" + http::url_encode(mount_from->repository);
      sc.push_back(pull_scope(*mount_from));
    }
    auto sent = im.send(ep, sc, req);
    if (!sent) return Failure{sent.error().kind, what + ": " + sent.error().message};
    Response& r = sent.value();
    if (try_mount && r.code == CURLE_OK && r.status == 201) {
      mounted = true;
      return std::string();
    }
    if (r.code != CURLE_OK || r.status != 202) return fail("starting the upload", r, req.url);
    std::string loc = r.header("location");
    if (loc.empty()) return op_error(what + ": the registry started an upload without a Location");
    return http::resolve_url(req.url, loc);
  };

  // The registry's view of how far an upload got (GET on the session).
  auto upload_offset = [&](std::string& location) -> Result<std::uint64_t> {
    Request req;
    req.url = location;
    auto sent = im.send(ep, scopes, req);
    if (!sent) return sent.error();
    Response& r = sent.value();
    if (r.code != CURLE_OK || r.status != 204) return fail("querying the upload", r, location);
    if (auto loc = r.header("location"); !loc.empty()) location = http::resolve_url(location, loc);
    std::string range = r.header("range");  // "0-1234" (inclusive)
    auto dash = range.find('-');
    if (dash == std::string::npos) return std::uint64_t{0};
    return std::stoull(range.substr(dash + 1)) + 1;
  };

  auto finish = [&](const std::string& location, std::uint64_t offset) -> Result<void> {
    Request req;
    req.method = "PUT";
    req.url = with_query(location, "digest=" + http::url_encode(digest));
    req.source = &source;
    req.source_offset = offset;
    req.source_len = size - offset;
    req.headers.push_back("Content-Type: application/octet-stream");
    auto sent = im.send(ep, scopes, req, /*retry=*/false);
    if (!sent) return Failure{sent.error().kind, what + ": " + sent.error().message};
    Response& r = sent.value();
    if (r.code != CURLE_OK || r.status != 201) return fail("completing the upload", r, req.url);
    return {};
  };

  bool try_mount = mount_from && mount_from->registry == repo.registry && mount_from->repository != repo.repository;
  std::string last_error;
  std::chrono::milliseconds waited{0};
  for (int attempt = 0; attempt <= im.options.retries; ++attempt) {
    if (attempt > 0) {
      if (!backoff_sleep(im.options, attempt - 1, Response{}, waited)) break;
      ++im.n_retries;
      log::verbose(last_error + "; starting the upload again");
    }
    bool mounted = false;
    auto loc = start(try_mount && attempt == 0, mounted);
    if (!loc) {
      last_error = loc.error().message;
      continue;
    }
    if (mounted) {
      ++im.n_mounted;
      return {};
    }
    std::string location = loc.value();
    if (size <= im.options.monolithic_max) {
      auto done = finish(location, 0);
      if (done) {
        ++im.n_pushed;
        return {};
      }
      last_error = done.error().message;
      continue;
    }
    // Chunked: PATCH chunk after chunk; on a failure ask the registry how far it got.
    std::uint64_t offset = 0;
    int chunk_failures = 0;
    bool restart = false;
    while (offset < size) {
      std::uint64_t len = std::min<std::uint64_t>(im.options.chunk_size, size - offset);
      Request req;
      req.method = "PATCH";
      req.url = location;
      req.source = &source;
      req.source_offset = offset;
      req.source_len = len;
      req.headers.push_back("Content-Type: application/octet-stream");
      req.headers.push_back("Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + len - 1));
      auto sent = im.send(ep, scopes, req, /*retry=*/false);
      if (!sent) return Failure{sent.error().kind, what + ": " + sent.error().message};
      Response& r = sent.value();
      if (r.code == CURLE_OK && r.status == 202) {
        if (auto l = r.header("location"); !l.empty()) location = http::resolve_url(location, l);
        offset += len;
        continue;
      }
      last_error = fail("uploading bytes " + std::to_string(offset) + "+", r, location).message;
      if (++chunk_failures > im.options.retries || !(retryable(r) || r.status == 416)) {
        restart = true;
        break;
      }
      if (!backoff_sleep(im.options, chunk_failures - 1, r, waited)) {
        restart = true;
        break;
      }
      ++im.n_retries;
      auto where = upload_offset(location);
      if (!where) {
        restart = true;
        break;
      }
      offset = std::min(where.value(), size);
    }
    if (restart) continue;
    auto done = finish(location, size);
    if (done) {
      ++im.n_pushed;
      return {};
    }
    last_error = done.error().message;
  }
  return op_error(last_error);
}

Result<void> RegistryClient::put_manifest(const Reference& ref, std::string_view media_type, std::string_view bytes) {
  auto& im = *m_impl;
  std::string what = ref.str();
  std::string target = !ref.tag.empty() ? ref.tag : ref.digest;
  if (target.empty()) return input_error(what + ": needs a tag or a digest to push to");
  if (!ref.digest.empty())
    if (auto c = check_digest(ref.name(), ref.digest); !c) return c.error();
  std::string digest = sha256_digest(bytes);
  if (!ref.digest.empty() && ref.digest != digest)
    return input_error(what + ": the manifest bytes hash to " + digest + ", not the reference's digest");
  Endpoint ep = im.config.push_endpoint(ref.registry);
  Request req;
  req.method = "PUT";
  req.url = im.api(ep, ref, "/manifests/" + target);
  req.body = bytes;
  req.headers.push_back("Content-Type: " + std::string(media_type));
  auto sent = im.send(ep, {push_scope(ref)}, req);
  if (!sent) return op_error(what + ": " + sent.error().message);
  Response& r = sent.value();
  if (r.code != CURLE_OK) return op_error(what + ": " + transport_problem(r, req.url));
  if (r.status != 201 && r.status != 200) return op_error(what + ": pushing the manifest: " + http_problem(r));
  std::string served = r.header("docker-content-digest");
  if (!served.empty() && starts_with(served, "sha256:") && served != digest)
    return op_error(what + ": the registry stored the manifest as " + served + ", not " + digest);
  return {};
}

}  // namespace gb
