#pragma once
// Private to mirror/: the small text formats of the distribution API, kept
// free of libcurl so unit tests can reach them.

#include <map>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::http {

// One challenge of a WWW-Authenticate header: scheme lower-cased ("bearer",
// "basic"), parameter names lower-cased, values unquoted.
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
  std::string param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  }
};
std::vector<Challenge> parse_www_authenticate(std::string_view header);

// The registry's {"errors":[{"code","message"}]} body as "CODE: message"
// (several joined by "; "), or empty when the body has none.
struct RegistryError {
  std::string code;     // first error's code, e.g. "MANIFEST_UNKNOWN"
  std::string message;  // first error's message
};
std::optional<RegistryError> parse_registry_error(std::string_view body);

// The rel="next" target of a Link header, as written (often relative).
std::optional<std::string> next_link(std::string_view link_header);

// Resolves a Location or Link target against the URL of the request.
std::string resolve_url(std::string_view base, std::string_view ref);

// "https://host:5000/v2/x" -> "host:5000"
std::string url_host(std::string_view url);

// An origin (RFC 6454): scheme, host and port, lower-cased, the port filled
// in from the scheme's default. Credentials are issued for one origin and go
// to no other: not to an upload Location, a redirect or a Link page that
// names another host, port or scheme.
struct Origin {
  std::string scheme;
  std::string host;
  int port = 0;
  bool operator==(const Origin&) const = default;
};
// nullopt for anything but an absolute http(s) URL with a host and a valid port.
std::optional<Origin> url_origin(std::string_view url);
// False when either URL has no origin.
bool same_origin(std::string_view a, std::string_view b);

// A digest as the distribution API allows it in a URL or a path:
// "sha256:" + 64 or "sha512:" + 128 lower-case hex digits. Anything else that a
// manifest, a header or a lock names is refused before it is used.
bool is_valid_digest(std::string_view digest);

std::string base64_encode(std::string_view in);
std::string url_encode(std::string_view in);

// Seconds from a Retry-After header: delta-seconds, or an HTTP date (the
// seconds from `now` until then, 0 when past), at most 86400; nullopt when
// unreadable.
std::optional<int> retry_after_seconds(std::string_view value, std::time_t now = std::time(nullptr));

// How long to wait before retry number `attempt` (0-based): the server's
// Retry-After when it gave one, else backoff_ms doubled per attempt, capped at
// 10 s, times jitter (0.5..1). nullopt = do not retry: the server asks for
// more than retry_after_max_s (waiting that long for one request helps nobody).
std::optional<long> retry_delay_ms(int attempt, int backoff_ms, std::optional<int> retry_after_s, int retry_after_max_s,
                                   double jitter);

}  // namespace gb::http
