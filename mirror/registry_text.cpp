#include "mirror/registry_text.hpp"

#include <nlohmann/json.hpp>

#include "common/strings.hpp"

namespace gb::mirror::detail {

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

bool is_valid_digest(std::string_view d) {
  std::size_t hex_len = 0;
  if (starts_with(d, "sha256:")) hex_len = 64;
  else if (starts_with(d, "sha512:")) hex_len = 128;
  else return false;
  auto hex = d.substr(7);
  return hex.size() == hex_len && hex.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace gb::mirror::detail
