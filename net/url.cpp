#include "net/url.hpp"

#include <algorithm>
#include <ctime>

#include <cctype>

#include "common/strings.hpp"

namespace gb::net {

std::string resolve_url(std::string_view base, std::string_view ref) {
  if (ref.find("://") != std::string_view::npos) return std::string(ref);
  auto scheme = base.find("://");
  std::size_t host_end = base.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  std::string origin(base.substr(0, host_end));
  if (starts_with(ref, "//")) return std::string(base.substr(0, scheme + 1)) + std::string(ref);
  if (starts_with(ref, "/")) return origin + std::string(ref);
  // Relative path: replace the last segment of base's path.
  std::string b(base.substr(0, base.find('?')));
  auto slash = b.rfind('/');
  if (slash == std::string::npos || slash < origin.size()) return origin + "/" + std::string(ref);
  return b.substr(0, slash + 1) + std::string(ref);
}

std::string url_host(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  auto end = url.find_first_of("/?#");
  if (end != std::string_view::npos) url = url.substr(0, end);
  auto at = url.rfind('@');
  if (at != std::string_view::npos) url.remove_prefix(at + 1);
  return to_lower(url);
}

std::optional<Origin> url_origin(std::string_view url) {
  Origin o;
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::nullopt;
  o.scheme = to_lower(url.substr(0, scheme));
  if (o.scheme == "https") o.port = 443;
  else if (o.scheme == "http") o.port = 80;
  else return std::nullopt;
  std::string host = url_host(url);  // lower-cased, userinfo dropped
  if (host.empty()) return std::nullopt;
  // "[::1]:5000", "host:5000", "host"
  auto bracket = host.rfind(']');
  auto colon = host.rfind(':');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    std::string_view port = std::string_view(host).substr(colon + 1);
    if (!port.empty()) {
      if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
      o.port = std::stoi(std::string(port));
      if (o.port < 1 || o.port > 65535) return std::nullopt;
    }
    host.resize(colon);
  }
  if (host.empty()) return std::nullopt;
  o.host = host;
  return o;
}

bool same_origin(std::string_view a, std::string_view b) {
  auto x = url_origin(a), y = url_origin(b);
  return x && y && *x == *y;
}

std::string base64_encode(std::string_view in) {
  static const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(chars[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(chars[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

std::string url_encode(std::string_view in) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace gb::net
