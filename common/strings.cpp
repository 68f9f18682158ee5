#include "common/strings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace gb {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

int compare_versions(std::string_view a, std::string_view b) {
  if (!a.empty() && a.front() == 'v') a.remove_prefix(1);
  if (!b.empty() && b.front() == 'v') b.remove_prefix(1);
  auto pa = split(a, '.');
  auto pb = split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    std::string_view x = i < pa.size() ? std::string_view(pa[i]) : "0";
    std::string_view y = i < pb.size() ? std::string_view(pb[i]) : "0";
    long nx = 0, ny = 0;
    auto rx = std::from_chars(x.data(), x.data() + x.size(), nx);
    auto ry = std::from_chars(y.data(), y.data() + y.size(), ny);
    bool numx = rx.ec == std::errc() && rx.ptr == x.data() + x.size();
    bool numy = ry.ec == std::errc() && ry.ptr == y.data() + y.size();
    if (numx && numy) {
      if (nx != ny) return nx < ny ? -1 : 1;
    } else if (x != y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

}  // namespace gb
