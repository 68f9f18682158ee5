#include "mirror/registry_session.hpp"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/strings.hpp"
#include "mirror/registry_text.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"

namespace gb::mirror {

namespace detail {

namespace {

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
std::string http_problem(const net::Response& r, const std::string& fallback) {
  auto e = detail::parse_registry_error(r.body);
  std::string what = e && !e->message.empty() ? e->message : (fallback.empty() ? status_text(r.status) : fallback);
  std::string detail = std::to_string(r.status);
  if (e && !e->code.empty()) detail += " " + e->code;
  std::string out = what + " (" + detail + ")";
  const int max_s = net::RetryPolicy{}.retry_after_max_s;
  if (r.status == 429 || r.status == 503)
    if (auto s = net::retry_after_seconds(r.header("retry-after")); s && *s > max_s)
      out += "; it asks to retry after " + std::to_string(*s) + " s, longer than gpubundle waits (" + std::to_string(max_s) + " s)";
  return out;
}

}  // namespace

// A transport failure, one line with the fix: never the URL's query (tokens)
// or userinfo. The same words for every request to the host, so that the
// lines of many requests fold into one per host (host_problems()).
std::string transport_problem(const net::Response& r, const std::string& url) {
  std::string host = net::url_host(url);
  const std::string& err = r.error_text;
  switch (r.error) {
    case net::NetError::Resolve: return "unknown host " + host + " (it does not resolve): check the name, or this machine's DNS";
    case net::NetError::Proxy: return "could not resolve the proxy for " + host + ": " + err;
    case net::NetError::ConnRefused:
      return host + " refused the connection (nothing listens on that port): is the registry running, and is the port right?";
    case net::NetError::ConnectTimeout:
      return host + " did not answer before the connect timeout: check the address, and any firewall on the way";
    case net::NetError::PlainHttp:
      return host + " answered plain HTTP to a TLS hello: use http://" + host +
             " (in --registry, or as the mirror's URL), or plainHttp: true for " + host + " in --registry-config";
    case net::NetError::TlsHandshake: return "TLS handshake with " + host + " failed: " + err;
    case net::NetError::TlsVerify:
      return "TLS verification of " + host + " failed: " + err + ": trust its CA with caFile for " + host +
             " in --registry-config (or add it to this machine's CAs)";
    case net::NetError::TlsCaFile: return "cannot read the CA file for " + host + ": " + err + ": check caFile in --registry-config";
    case net::NetError::TlsClientCert:
      return "cannot use the client certificate for " + host + ": " + err + ": check clientCert and clientKey in --registry-config";
    case net::NetError::Timeout: return "transfer from " + host + " stalled or timed out: " + err;
    case net::NetError::Connect: return "cannot connect to " + host + ": " + err + ": check the address and the network path";
    default: return host + ": " + err;
  }
}

Failure failure(const std::string& what, const net::Response& r, const std::string& url, const std::string& fallback) {
  if (r.error == net::NetError::None) return op_error(what + ": " + http_problem(r, fallback));
  return op_error(what + ": " + transport_problem(r, url));
}

Result<void> check_digest(const std::string& what, std::string_view digest) {
  if (detail::is_valid_digest(digest)) return {};
  std::string shown(digest.substr(0, 80));
  if (digest.size() > 80) shown += "...";
  return input_error(what + ": invalid digest '" + shown + "' (expected sha256:<64 hex digits>)");
}

std::string pull_scope(const recipes::Reference& r) { return "repository:" + r.repository + ":pull"; }
std::string push_scope(const recipes::Reference& r) { return "repository:" + r.repository + ":pull,push"; }

void body_from(net::Request& req, std::string_view bytes) {
  req.body_size = bytes.size();
  req.read_body = [bytes](std::uint64_t offset, char* buf, std::size_t len) -> Result<std::size_t> {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len, bytes.size() - std::min<std::uint64_t>(offset, bytes.size())));
    std::copy_n(bytes.data() + offset, n, buf);
    return n;
  };
}

void body_from(net::Request& req, BlobSource& source, std::uint64_t offset, std::uint64_t len) {
  req.body_size = len;
  req.read_body = [&source, offset](std::uint64_t at, char* buf, std::size_t n) { return source.read(offset + at, buf, n); };
}

}  // namespace detail

using detail::SendMode;

RegistryClient::Impl::Impl(RegistryConfig c, ClientOptions o, std::shared_ptr<net::Transport> t, net::Clock k)
    : config(std::move(c)), options(std::move(o)), transport(std::move(t)), clock(std::move(k)) {
  if (options.max_parallel < 1) options.max_parallel = 1;
  if (options.max_per_host < 1) options.max_per_host = 1;
  if (options.chunk_size < 1) options.chunk_size = 1;
  if (const char* s = std::getenv("GPUBUNDLE_HTTP_TIMEOUT_S"); s && std::atoi(s) > 0) options.request_timeout_s = std::atoi(s);
  if (!transport) {
    net::TransportOptions to;
    to.connect_timeout_s = options.connect_timeout_s;
    to.stall_timeout_s = options.stall_timeout_s;
    to.request_timeout_s = options.request_timeout_s;
    to.user_agent = options.user_agent;
    transport = net::curl_transport(to);
  }
}

std::time_t RegistryClient::Impl::now() const { return clock.now ? clock.now() : std::time(nullptr); }

bool RegistryClient::Impl::backoff(int attempt, const net::Response& r, std::chrono::milliseconds& waited) {
  auto wait = net::retry_wait(options.retry, attempt, r, waited, net::now(clock), net::jitter());
  if (!wait) return false;
  waited += *wait;
  net::sleep_for(clock, *wait);
  return true;
}

namespace {
// "https://host:443": the key of a host's state (the same host over http and https differs).
std::string origin_key(const std::string& url) {
  auto o = net::url_origin(url);
  return o ? o->scheme + "://" + o->host + ":" + std::to_string(o->port) : url;
}
}  // namespace

std::optional<net::Response> RegistryClient::Impl::known_down(const std::string& url) {
  std::lock_guard lock(m_down_mutex);
  auto it = m_down.find(origin_key(url));
  if (it == m_down.end()) return std::nullopt;
  net::Response r = it->second.response;
  r.remembered = true;
  return r;
}

void RegistryClient::Impl::note_down(const std::string& url, const net::Response& r) {
  if (!net::host_level(r.error)) return;
  HostDown d{r, detail::transport_problem(r, url), {}};
  d.line = d.summary;
  if (r.error == net::NetError::PlainHttp) {
    // The fix depends on what the URL was: a configured mirror, or the host itself.
    std::string host = net::url_host(url);
    bool mirror = false;
    for (const auto& [name, h] : config.hosts)
      for (const auto& m : h.mirrors) mirror = mirror || origin_key(m) == origin_key(url);
    d.line = host + " answered plain HTTP to a TLS hello: " +
             (mirror ? "write the mirror as http://" + host + " in --registry-config"
                     : "use http://" + host + " (--registry http://" + host + "/...), or plainHttp: true for " + host +
                           " in --registry-config");
  }
  std::lock_guard lock(m_down_mutex);
  m_down.try_emplace(origin_key(url), std::move(d));
}

std::vector<RegistryClient::Impl::HostDown> RegistryClient::Impl::hosts_down() const {
  std::lock_guard lock(m_down_mutex);
  std::vector<HostDown> out;
  for (const auto& [origin, d] : m_down) out.push_back(d);
  std::sort(out.begin(), out.end(), [](const HostDown& a, const HostDown& b) { return a.line < b.line; });
  return out;
}

net::Response RegistryClient::Impl::perform(const net::Request& req) {
  // A host that could not be talked to at all is not asked again in this run:
  // every request would meet the same, each after its own retries.
  if (auto down = known_down(req.url)) return *down;
  ++n_requests;
  net::Response r = transport->perform(req);
  if (log_level() >= LogLevel::Verbose)
    log_verbose(req.method + " " + redact_url(req.url) + " -> " + (r.answered() ? std::to_string(r.status) : r.error_text));
  if (!net::retryable(r)) note_down(req.url, r);
  return r;
}

net::Response RegistryClient::Impl::with_retries(const net::Request& req) {
  net::Response r;
  std::chrono::milliseconds waited{0};
  for (int attempt = 0;; ++attempt) {
    r = perform(req);
    if (!net::retryable(r)) return r;
    if (!backoff(attempt, r, waited)) {
      note_down(req.url, r);  // retries spent: refused, or no answer
      return r;
    }
    ++n_retries;
    log_verbose("retrying " + req.method + " " + redact_url(req.url) + " (" +
                 (r.answered() ? std::to_string(r.status) : r.error_text) + ")");
  }
}

// ---- credentials and tokens ----

Result<std::optional<Credential>> RegistryClient::Impl::credential(const std::string& host) {
  {
    std::lock_guard lock(m_auth_mutex);
    auto it = m_credentials.find(host);
    if (it != m_credentials.end()) return it->second;
  }
  auto c = find_credential(config, host);
  if (!c) return c.error();
  std::lock_guard lock(m_auth_mutex);
  m_credentials[host] = c.value();
  return c.value();
}

namespace {
std::string token_key(const std::string& host, const std::vector<std::string>& scopes) { return host + " " + join(scopes, " "); }
}  // namespace

// Fetches a bearer token from the challenge's realm (anonymous, basic
// credentials, or an identity token as an OAuth2 refresh token).
Result<std::string> RegistryClient::Impl::fetch_token(const Endpoint& ep, const HostAuth& ha, const std::vector<std::string>& scopes) {
  auto cred = credential(ep.host);
  if (!cred) return cred.error();
  net::Request req;
  req.tls = config.host(net::url_host(ha.realm));
  if (!req.tls) req.tls = ep.tls;
  req.body_cap = detail::k_small_cap;
  std::string query;
  if (!ha.service.empty()) query += "service=" + net::url_encode(ha.service);
  for (const auto& s : scopes) query += std::string(query.empty() ? "" : "&") + "scope=" + net::url_encode(s);
  std::string form;
  if (cred.value() && !cred.value()->identity_token.empty()) {
    req.method = "POST";
    req.url = ha.realm;
    form = "grant_type=refresh_token&client_id=gpubundle&refresh_token=" + net::url_encode(cred.value()->identity_token) +
           (query.empty() ? "" : "&" + query);
    detail::body_from(req, form);
    req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  } else {
    req.url = ha.realm + (query.empty() ? "" : std::string(ha.realm.find('?') == std::string::npos ? "?" : "&") + query);
    if (cred.value())
      req.headers.push_back("Authorization: Basic " + net::base64_encode(cred.value()->username + ":" + cred.value()->password));
  }
  net::Response r = with_retries(req);
  std::string who = cred.value() ? " for user " + cred.value()->username : std::string();
  if (r.answered() && (r.status == 401 || r.status == 403))
    return op_error(ep.host + ": authentication failed" + who + " (" + std::to_string(r.status) + ")");
  if (!r.ok()) return detail::failure(ep.host + ": token service", r, req.url);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return op_error(ep.host + ": token service sent no JSON");
  std::string tok;
  if (j.contains("token") && j["token"].is_string()) tok = j["token"].get<std::string>();
  if (tok.empty() && j.contains("access_token") && j["access_token"].is_string()) tok = j["access_token"].get<std::string>();
  if (tok.empty()) return op_error(ep.host + ": token service sent no token");
  int expires = 60;  // the spec's default when expires_in is absent
  if (j.contains("expires_in") && j["expires_in"].is_number_integer()) expires = j["expires_in"].get<int>();
  if (expires < 60) expires = 60;
  std::lock_guard lock(m_auth_mutex);
  // Renew a little early so a token never expires mid-request.
  m_tokens[token_key(ep.host, scopes)] = Token{tok, SteadyClock::now() + std::chrono::seconds(expires - 10)};
  return tok;
}

// The Authorization header to send to `ep` now, or empty.
Result<std::string> RegistryClient::Impl::auth_header(const Endpoint& ep, const std::vector<std::string>& scopes) {
  HostAuth ha;
  {
    std::lock_guard lock(m_auth_mutex);
    auto it = m_host_auth.find(ep.host);
    if (it == m_host_auth.end()) return std::string();
    ha = it->second;
    if (ha.kind == HostAuth::Kind::Bearer) {
      auto t = m_tokens.find(token_key(ep.host, scopes));
      if (t != m_tokens.end() && t->second.expires > SteadyClock::now()) return "Authorization: Bearer " + t->second.value;
    }
  }
  if (ha.kind == HostAuth::Kind::Basic) {
    auto cred = credential(ep.host);
    if (!cred) return cred.error();
    if (!cred.value()) return std::string();
    return "Authorization: Basic " + net::base64_encode(cred.value()->username + ":" + cred.value()->password);
  }
  if (ha.kind == HostAuth::Kind::Bearer) {
    auto tok = fetch_token(ep, ha, scopes);
    if (!tok) return tok.error();
    return "Authorization: Bearer " + tok.value();
  }
  return std::string();
}

// Learns the host's scheme from a 401. False when nothing new can be tried.
Result<bool> RegistryClient::Impl::learn_challenge(const Endpoint& ep, const net::Response& r, std::vector<std::string>& scopes) {
  auto challenges = detail::parse_www_authenticate(r.header("www-authenticate"));
  HostAuth ha;
  for (const auto& c : challenges) {
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
  std::lock_guard lock(m_auth_mutex);
  m_host_auth[ep.host] = ha;
  m_tokens.erase(token_key(ep.host, scopes));  // a 401 with a cached token: it is stale
  return true;
}

// The one place where a request's credentials are chosen from its target:
// the endpoint's Authorization header and TLS client settings go only to the
// endpoint's own origin; any other origin (an upload Location, a redirect to
// storage, a Link page) gets neither.
void RegistryClient::Impl::address(net::Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers,
                                   const std::string& auth) const {
  req.headers = base_headers;
  if (net::same_origin(req.url, ep.base_url)) {
    req.tls = ep.tls;
    if (!auth.empty()) req.headers.push_back(auth);
  } else {
    req.tls = config.host(net::url_host(req.url));  // its own entry, if the config has one
  }
}

// One exchange plus the redirects of a `follow` request (at most 10), each
// hop addressed afresh. A 303 turns the request into a GET without a body.
net::Response RegistryClient::Impl::exchange(net::Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers,
                                              const std::string& auth, SendMode mode) {
  address(req, ep, base_headers, auth);
  net::Response r = mode.retry ? with_retries(req) : perform(req);
  for (int hop = 0; mode.follow && hop < net::k_max_redirects; ++hop) {
    auto next = net::redirect_target(req.url, r);
    if (!next) break;
    log_verbose(req.method + " " + redact_url(req.url) + " -> " + std::to_string(r.status) + " " + redact_url(*next));
    net::follow(req, r, std::move(*next));
    address(req, ep, base_headers, auth);
    r = mode.retry ? with_retries(req) : perform(req);
  }
  return r;
}

// Waits while another request makes the host's first exchange; the first
// one to come makes it, and answered() lets the others go.
class RegistryClient::Impl::FirstExchange {
public:
  FirstExchange(Impl& im, const std::string& host) : m_im(im), m_host(host) {
    std::unique_lock lock(m_im.m_first_mutex);
    if (m_im.m_first_open.try_emplace(host, true).second) {
      m_mine = true;
      return;
    }
    m_im.m_first_cv.wait(lock, [&] { return !m_im.m_first_open[m_host]; });
  }
  ~FirstExchange() { answered(); }
  FirstExchange(const FirstExchange&) = delete;
  FirstExchange& operator=(const FirstExchange&) = delete;
  bool mine() const { return m_mine; }
  void answered() {
    if (!m_mine) return;
    m_mine = false;
    {
      std::lock_guard lock(m_im.m_first_mutex);
      m_im.m_first_open[m_host] = false;
    }
    m_im.m_first_cv.notify_all();
  }

private:
  Impl& m_im;
  std::string m_host;
  bool m_mine = false;
};

Result<net::Response> RegistryClient::Impl::send(const Endpoint& ep, std::vector<std::string> scopes, net::Request req, SendMode mode) {
  const std::vector<std::string> base_headers = req.headers;
  FirstExchange first(*this, ep.host);
  if (req.read_body) first.answered();  // nobody waits for an upload
  if (first.mine() && req.on_body) {
    // A 2xx stream: the host wants nothing more; the others need not wait for its last byte.
    req.on_body = [&first, sink = std::move(req.on_body)](long status, std::string_view chunk) {
      first.answered();
      return sink(status, chunk);
    };
  }
  for (int round = 0; round < 2; ++round) {
    auto auth = auth_header(ep, scopes);
    if (!auth) return auth.error();
    if (round == 1) first.answered();  // the challenge is known and its token cached: the others ask with it
    net::Request hop = req;  // redirects rewrite it; each round starts from the request as given
    net::Response r = exchange(hop, ep, base_headers, auth.value(), mode);
    if (!r.answered() || r.status != 401) return r;
    // Another origin's challenge is not the endpoint's: report it as is.
    if (!net::same_origin(hop.url, ep.base_url)) return r;
    if (round == 0) {
      auto learned = learn_challenge(ep, r, scopes);
      if (!learned) return learned.error();
      if (learned.value()) continue;
    }
    auto cred = credential(ep.host);
    if (!cred) return cred.error();
    if (cred.value()) return op_error(ep.host + ": authentication failed for user " + cred.value()->username + " (401)");
    return op_error(detail::failure(ep.host, r, hop.url).message +
                    "; no credentials for this host (registry config, $REGISTRY_AUTH_FILE, "
                    "$DOCKER_CONFIG/config.json, ~/.docker/config.json)");
  }
  return op_error(ep.host + ": authentication failed (401)");
}

}  // namespace gb::mirror
