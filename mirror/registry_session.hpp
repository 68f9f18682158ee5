#pragma once
// Private to mirror/: what registry.cpp (pull) and registry_push.cpp (push)
// share. One request goes through send(): auth (challenge, token cache),
// retries with backoff, redirects followed here, and the rule of which
// origin gets the credentials. Below it is an net::Transport.
//
// Error kinds, decided here and nowhere else (exit codes: builder/cli.cpp):
//   - An HTTP status or a transport failure is ErrorKind::Failed (exit 1),
//     whichever call met it, and reads "WHAT: <words> (<status> <CODE>)" or
//     "WHAT: cannot connect to HOST: ..." (failure()).
//   - Bad input found before a request (an invalid digest, a reference with
//     no tag, an unreadable credentials file) is ErrorKind::Input (exit 2).
//
// The endpoint rule, for every pull that walks a host's endpoints (its
// mirrors in order, then the host unless `fallback: false`; walk()):
//   - falls through to the next endpoint: anything that is about this
//     endpoint: any HTTP status (404, 401/403, 5xx or 429 once retries are
//     spent, ...), a transport failure (unreachable, TLS, stall), a failed
//     token service;
//   - stops at once: bad input (the same everywhere), content that fails
//     verification (a digest or size mismatch, a body over its cap: reported,
//     not hidden behind another endpoint's copy), and a local failure (the
//     sink could not write).
// When every endpoint fails, the last endpoint's failure is the answer.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "net/transport.hpp"
#include "mirror/registry.hpp"

namespace gb::mirror {

namespace detail {

inline constexpr std::uint64_t k_manifest_cap = 16ull << 20;  // larger "manifests" are refused
inline constexpr std::uint64_t k_small_cap = 8ull << 20;      // error bodies, tag lists, tokens

// A transport failure as one line naming the URL's host and the fix, e.g.
// "127.0.0.1:5000 answered plain HTTP to a TLS hello: use http://...".
std::string transport_problem(const net::Response& r, const std::string& url);
// The one mapping from an unsuccessful response to a Failure (see above).
// `fallback` replaces the status's generic words ("manifest unknown").
Failure failure(const std::string& what, const net::Response& r, const std::string& url, const std::string& fallback = {});
// A Failure about `what`: the kind kept, the message prefixed.
inline Failure about(const std::string& what, const Failure& f) { return {f.kind, what + ": " + f.message}; }

// A digest from a manifest, a header, a lock or a caller, checked before it
// reaches a URL; the message quotes at most 80 characters of it.
Result<void> check_digest(const std::string& what, std::string_view digest);

std::string pull_scope(const recipes::Reference& r);
std::string push_scope(const recipes::Reference& r);

// Request bodies: bytes in memory (kept alive by the caller) or a BlobSource range.
void body_from(net::Request& req, std::string_view bytes);
void body_from(net::Request& req, BlobSource& source, std::uint64_t offset, std::uint64_t len);

// One endpoint's answer: a value, or a failure and whether the next endpoint
// may still be tried (the rule above).
template <typename T>
struct Answer {
  std::optional<T> value;
  Failure failure;
  bool next = false;       // fall through to the next endpoint
  bool not_found = false;  // the endpoint answered 404

  static Answer of(T v) { return {std::move(v), {}, false, false}; }
  static Answer stop(Failure f) { return {std::nullopt, std::move(f), false, false}; }
  // A failure from send(): bad input stops; auth and token failures are the endpoint's.
  static Answer sent(Failure f) {
    const bool next = f.kind != ErrorKind::Input;
    return {std::nullopt, std::move(f), next, false};
  }
  // An unsuccessful response: the endpoint's, except a body over its cap
  // (content) or a sink that stopped (local).
  static Answer refused(const std::string& what, const net::Response& r, const std::string& url, const std::string& fallback = {}) {
    return {std::nullopt, detail::failure(what, r, url, fallback),
            r.error != net::NetError::TooLarge && r.error != net::NetError::Aborted, r.answered() && r.status == 404};
  }
  Result<T> result() && {
    if (value) return std::move(*value);
    return failure;
  }
};

// Tries `one` on each endpoint in order until one gives a value or a failure
// that stops; returns that answer, or the last one.
template <typename T, typename Fn>
Answer<T> walk(const std::vector<Endpoint>& endpoints, const std::string& what, Fn&& one) {
  Answer<T> a = Answer<T>::stop(op_error(what + ": no endpoint to try"));
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    a = one(endpoints[i]);
    if (a.value || !a.next) return a;
    if (i + 1 < endpoints.size()) log_verbose(a.failure.message + "; trying the next endpoint");
  }
  return a;
}

struct SendMode {
  bool follow = false;  // follow redirects (blob and URL GETs reach storage that way)
  bool retry = true;    // retry transport failures and 429/5xx here
};

}  // namespace detail

struct RegistryClient::Impl {
  Impl(RegistryConfig c, ClientOptions o, std::shared_ptr<net::Transport> t, net::Clock k);

  RegistryConfig config;
  ClientOptions options;
  std::shared_ptr<net::Transport> transport;
  net::Clock clock;

  std::atomic<std::uint64_t> n_requests{0}, n_bytes{0}, n_pushed{0}, n_mounted{0}, n_retries{0};

  // One request with auth: sends, answers a 401 challenge once (a fresh
  // token), follows redirects when asked, and turns a final 401 into a clear
  // failure. The response may still be any status or a transport failure.
  Result<net::Response> send(const Endpoint& ep, std::vector<std::string> scopes, net::Request req, detail::SendMode mode = {});

  // Sleeps before retry number `attempt`; `waited` sums the sleeps of one
  // request. False (no sleep) when the server asks for longer than
  // retry_after_max_s or the sum would pass retry_total_s: the caller gives
  // up and reports the last answer.
  bool backoff(int attempt, const net::Response& r, std::chrono::milliseconds& waited);

  std::string api(const Endpoint& ep, const recipes::Reference& r, const std::string& rest) const {
    return ep.base_url + "/v2/" + r.repository + rest;
  }

  struct BlobFetch;

  // A host that could not be talked to at all (net::host_level): later
  // requests to it get its failure without a request.
  struct HostDown {
    net::Response response;
    std::string summary;  // what each request's failure ends with (detail::transport_problem)
    std::string line;     // the host's one line, with the fix for what it was (a mirror, the host itself)
  };
  std::vector<HostDown> hosts_down() const;  // sorted by line

private:
  using SteadyClock = std::chrono::steady_clock;
  struct Token {
    std::string value;
    SteadyClock::time_point expires;
  };
  // What a host asked for on its last 401.
  struct HostAuth {
    enum class Kind { Unknown, Basic, Bearer } kind = Kind::Unknown;
    std::string realm;
    std::string service;
  };

  std::optional<net::Response> known_down(const std::string& url);
  void note_down(const std::string& url, const net::Response& r);

  net::Response perform(const net::Request& req);
  net::Response with_retries(const net::Request& req);
  net::Response exchange(net::Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers,
                          const std::string& auth, detail::SendMode mode);
  void address(net::Request& req, const Endpoint& ep, const std::vector<std::string>& base_headers, const std::string& auth) const;
  Result<std::optional<Credential>> credential(const std::string& host);
  Result<std::string> fetch_token(const Endpoint& ep, const HostAuth& ha, const std::vector<std::string>& scopes);
  Result<std::string> auth_header(const Endpoint& ep, const std::vector<std::string>& scopes);
  Result<bool> learn_challenge(const Endpoint& ep, const net::Response& r, std::vector<std::string>& scopes);
  std::time_t now() const;

  // The first exchange with a host goes alone: its answer says whether the
  // host wants credentials (a 401 and its challenge); parallel first requests
  // would each meet the same 401 and fetch the same token. The others wait
  // until it has an answer (a status, a first body byte, or a challenge and
  // the credentials for it); uploads wait for nobody.
  class FirstExchange;
  std::mutex m_first_mutex;
  std::condition_variable m_first_cv;
  std::map<std::string, bool> m_first_open;  // by endpoint host: true while its first exchange has no answer

  std::mutex m_auth_mutex;
  std::map<std::string, HostAuth> m_host_auth;                     // by endpoint host
  std::map<std::string, Token> m_tokens;                           // by host + " " + scopes
  std::map<std::string, std::optional<Credential>> m_credentials;  // by host
  mutable std::mutex m_down_mutex;
  std::map<std::string, HostDown> m_down;  // by origin ("https://host:443")
};

}  // namespace gb::mirror
