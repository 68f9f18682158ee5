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

std::string base64_encode(std::string_view in);
std::string url_encode(std::string_view in);

// Seconds from a Retry-After header: delta-seconds, or an HTTP date (the
// seconds from `now` until then, 0 when past); nullopt when unreadable.
std::optional<int> retry_after_seconds(std::string_view value, std::time_t now = std::time(nullptr));

}  // namespace gb::http
