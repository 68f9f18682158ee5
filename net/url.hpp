#pragma once
// URLs as the HTTP clients need them: resolving a Location, a host, an
// origin (where credentials may go), and the encodings of a query and a
// Basic header.

#include <optional>
#include <string>
#include <string_view>

namespace gb::net {

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

std::string base64_encode(std::string_view in);
std::string url_encode(std::string_view in);

}  // namespace gb::net
