#pragma once
// Private to mirror/: the small text formats of the distribution API
// (challenges, error bodies, Link pages, digests), kept free of libcurl so
// unit tests and fuzz targets reach them.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gb::mirror::detail {

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

// A digest as the distribution API allows it in a URL or a path:
// "sha256:" + 64 or "sha512:" + 128 lower-case hex digits. Anything else that a
// manifest, a header or a lock names is refused before it is used.
bool is_valid_digest(std::string_view digest);

}  // namespace gb::mirror::detail
