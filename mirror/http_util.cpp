#include "mirror/http_util.hpp"

#include <algorithm>
#include <ctime>

#include <cctype>
#include <nlohmann/json.hpp>

#include "common/strings.hpp"

namespace gb::http {

std::vector<Challenge> parse_www_authenticate(std::string_view h) {
  std::vector<Challenge> out;
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == ',')) ++i;
  };
  auto token = [&] {
    std::size_t s = i;
    while (i < h.size() && h[i] != ' ' && h[i] != '\t' && h[i] != '=' && h[i] != ',') ++i;
    return std::string(h.substr(s, i - s));
  };
  while (true) {
    skip_ws();
    if (i >= h.size()) break;
    std::size_t save = i;
    std::string word = token();
    if (i < h.size() && h[i] == '=' && !out.empty()) {
      // A parameter of the current challenge.
      ++i;
      std::string value;
      if (i < h.size() && h[i] == '"') {
        ++i;
        while (i < h.size() && h[i] != '"') {
          if (h[i] == '\\' && i + 1 < h.size()) ++i;
          value.push_back(h[i++]);
        }
        if (i < h.size()) ++i;
      } else {
        std::size_t s = i;
        while (i < h.size() && h[i] != ',' && h[i] != ' ') ++i;
        value = std::string(h.substr(s, i - s));
      }
      out.back().params[to_lower(word)] = value;
    } else if (!word.empty()) {
      Challenge c;
      c.scheme = to_lower(word);
      out.push_back(std::move(c));
    } else if (i == save) {
      ++i;  // stray character: step over it
    }
  }
  return out;
}

std::optional<RegistryError> parse_registry_error(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto errs = j.find("errors");
  if (errs == j.end() || !errs->is_array() || errs->empty()) return std::nullopt;
  const auto& e = (*errs)[0];
  if (!e.is_object()) return std::nullopt;
  RegistryError r;
  if (e.contains("code") && e["code"].is_string()) r.code = e["code"].get<std::string>();
  if (e.contains("message") && e["message"].is_string()) r.message = e["message"].get<std::string>();
  if (r.code.empty() && r.message.empty()) return std::nullopt;
  return r;
}

std::optional<std::string> next_link(std::string_view link) {
  // <url>; rel="next", <url2>; rel="prev"
  std::size_t pos = 0;
  while ((pos = link.find('<', pos)) != std::string_view::npos) {
    auto end = link.find('>', pos);
    if (end == std::string_view::npos) break;
    std::string url(link.substr(pos + 1, end - pos - 1));
    auto next = link.find('<', end);
    std::string params(link.substr(end + 1, next == std::string_view::npos ? std::string_view::npos : next - end - 1));
    std::string p = to_lower(params);
    if (p.find("rel=\"next\"") != std::string::npos || p.find("rel=next") != std::string::npos) return url;
    pos = end;
  }
  return std::nullopt;
}

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

bool is_valid_digest(std::string_view d) {
  std::size_t hex_len = 0;
  if (starts_with(d, "sha256:")) hex_len = 64;
  else if (starts_with(d, "sha512:")) hex_len = 128;
  else return false;
  auto hex = d.substr(7);
  return hex.size() == hex_len && hex.find_first_not_of("0123456789abcdef") == std::string_view::npos;
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

std::optional<int> retry_after_seconds(std::string_view value, std::time_t now) {
  auto v = trim(value);
  if (v.empty()) return std::nullopt;
  if (v.find_first_not_of("0123456789") == std::string_view::npos) {
    if (v.size() > 5) return 86400;  // a day or more: as long as an HTTP date can ask
    int n = 0;
    for (char c : v) n = n * 10 + (c - '0');
    return n;
  }
  // An HTTP date (IMF-fixdate, RFC 9110 5.6.7): the wait is until then.
  std::tm tm{};
  std::string text(v);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  std::time_t at = timegm(&tm);
  if (at == static_cast<std::time_t>(-1)) return std::nullopt;
  return at > now ? static_cast<int>(std::min<std::time_t>(at - now, 86400)) : 0;
}

std::optional<long> retry_delay_ms(int attempt, int backoff_ms, std::optional<int> retry_after_s, int retry_after_max_s,
                                   double jitter) {
  if (retry_after_s) {
    if (*retry_after_s > retry_after_max_s) return std::nullopt;
    return static_cast<long>(*retry_after_s) * 1000;
  }
  double base = backoff_ms * static_cast<double>(1u << std::clamp(attempt, 0, 10));
  base = std::min(base, 10000.0);
  return static_cast<long>(base * std::clamp(jitter, 0.0, 1.0));
}

}  // namespace gb::http
