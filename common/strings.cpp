#include "common/strings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

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

std::string fill_template(std::string_view text, const std::map<std::string, std::string>& vars) {
  // One pass over the template: a value is copied, never searched.
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t at = text.find('@', i);
    size_t end = at == std::string_view::npos ? at : text.find('@', at + 1);
    if (end == std::string_view::npos) break;
    out.append(text, i, at - i);
    auto var = vars.find(std::string(text.substr(at + 1, end - at - 1)));
    if (var != vars.end()) {
      out += var->second;
      i = end + 1;
    } else {
      out += '@';  // not a token: the next '@' may start one
      i = at + 1;
    }
  }
  out.append(text.substr(std::min(i, text.size())));
  return out;
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string_view t = trim(text);
  std::uint64_t mult = 1;
  if (ends_with(t, "B") || ends_with(t, "b")) t.remove_suffix(1);
  if (ends_with(t, "i")) t.remove_suffix(1);
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) {
    switch (std::toupper(static_cast<unsigned char>(t.back()))) {
      case 'K': mult = 1ull << 10; break;
      case 'M': mult = 1ull << 20; break;
      case 'G': mult = 1ull << 30; break;
      case 'T': mult = 1ull << 40; break;
      default: return input_error("size '" + std::string(text) + "': unknown unit (use K, M, G or T)");
    }
    t.remove_suffix(1);
  }
  std::uint64_t n = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || n == 0)
    return input_error("size '" + std::string(text) + "' is not a size like 4G, 700M or 1048576");
  if (n > UINT64_MAX / mult) return input_error("size '" + std::string(text) + "' is too large");
  return n * mult;
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

bool json_nests_deeper_than(std::string_view text, int levels) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > levels) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_dotted_number(std::string_view s, size_t min_parts, size_t max_parts) {
  size_t parts = 0;
  while (true) {
    size_t dot = s.find('.');
    if (!is_digits(s.substr(0, dot)) || ++parts > max_parts) return false;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts >= min_parts;
}

bool is_lower_name(std::string_view s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

bool is_word(std::string_view s, std::string_view extra) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !alnum(s.front())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || extra.find(c) != std::string_view::npos; });
}

namespace {

void append_escaped(std::string& out, char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u != 0x7f) {
    out += c;
  } else if (c == '\n') {
    out += "\\n";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c == '\t') {
    out += "\\t";
  } else {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    out += buf;
  }
}

// At most n bytes of s, not ending inside a UTF-8 sequence.
size_t utf8_cut(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::string quote(std::string_view value, size_t max_chars) {
  size_t keep = utf8_cut(value, max_chars);
  std::string out = "'";
  for (size_t i = 0; i < keep; ++i) append_escaped(out, value[i]);
  out += keep < value.size() ? "\u2026' (" + std::to_string(value.size()) + " bytes)" : "'";
  return out;
}

std::string bounded_line(std::string_view message) {
  constexpr size_t k_max_run = 256, k_max_line = 4096;
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    if (out.size() >= k_max_line) {
      out += "\u2026 (" + std::to_string(message.size()) + " bytes in all)";
      break;
    }
    size_t end = message[i] == ' ' ? i + 1 : std::min(message.find(' ', i), message.size());
    std::string_view run = message.substr(i, end - i);
    size_t keep = utf8_cut(run, k_max_run);
    for (size_t j = 0; j < keep; ++j) append_escaped(out, run[j]);
    if (keep < run.size()) out += "\u2026 (" + std::to_string(run.size()) + " bytes)";
    i = end;
  }
  return out;
}

}  // namespace gb
