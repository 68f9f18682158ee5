#include "recipes/reference.hpp"

#include <cctype>

#include "common/strings.hpp"

namespace gb::recipes {

namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool valid_host(std::string_view host) {
  if (host.empty()) return false;
  auto colon = host.rfind(':');
  std::string_view name = host, port;
  if (!host.empty() && host.front() == '[') {  // [::1]:5000
    auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return false;
      port = host.substr(close + 2);
      if (port.empty()) return false;
    }
  } else if (colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
    if (port.empty()) return false;
  }
  for (char c : port)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  if (name.front() == '[') return true;
  for (auto& label : split(name, '.')) {
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

bool valid_digest(std::string_view d) {
  auto colon = d.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto algo = d.substr(0, colon), hex = d.substr(colon + 1);
  if (algo == "sha256" && hex.size() != 64) return false;
  if (algo == "sha512" && hex.size() != 128) return false;
  if (hex.size() < 32) return false;
  for (char c : algo)
    if (!is_lower_alnum(c) && c != '+' && c != '.' && c != '_' && c != '-') return false;
  for (char c : hex)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

// path-component := alnum+ (separator alnum+)*, separator := [_.] | __ | -+
bool is_valid_path_component(std::string_view c) {
  if (c.empty() || !is_lower_alnum(c.front()) || !is_lower_alnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (is_lower_alnum(ch)) continue;
    if (ch == '.' || ch == '_') {
      if (ch == '_' && i + 1 < c.size() && c[i + 1] == '_') ++i;  // "__"
      if (!is_lower_alnum(c[i + 1])) return false;
      continue;
    }
    if (ch == '-') {
      while (i + 1 < c.size() && c[i + 1] == '-') ++i;
      if (!is_lower_alnum(c[i + 1])) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool is_valid_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  char first = tag.front();
  if (!(std::isalnum(static_cast<unsigned char>(first)) || first == '_')) return false;
  for (char c : tag)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

Result<Reference> Reference::parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return input_error("invalid image reference '" + std::string(text) + "': " + why);
  };
  if (text.empty()) return bad("empty");
  if (text.size() > 512) return bad("longer than 512 characters");
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c))) return bad("contains white space");

  Reference ref;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!valid_digest(ref.digest)) return bad("malformed digest '" + ref.digest + "'");
  }
  // A tag follows the last ':' that comes after the last '/' (a ':' before it is a port).
  auto slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!is_valid_tag(ref.tag)) return bad("malformed tag '" + ref.tag + "'");
  }
  auto first_slash = rest.find('/');
  std::string_view first = rest.substr(0, first_slash);
  bool has_host = first_slash != std::string_view::npos &&
                  (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
                   first == "localhost" || first.front() == '[');
  std::string_view path = rest;
  if (has_host) {
    ref.registry = std::string(first);
    path = rest.substr(first_slash + 1);
    if (!valid_host(ref.registry)) return bad("malformed registry host '" + ref.registry + "'");
  } else {
    ref.registry = "docker.io";
  }
  if (ref.registry == "index.docker.io" || ref.registry == "registry-1.docker.io") ref.registry = "docker.io";
  if (path.empty()) return bad("no repository");
  for (auto& component : split(path, '/')) {
    if (!is_valid_path_component(component)) return bad("invalid path component '" + component + "'");
  }
  ref.repository = std::string(path);
  if (ref.registry == "docker.io" && ref.repository.find('/') == std::string::npos)
    ref.repository = "library/" + ref.repository;
  if (ref.name().size() > 255) return bad("name longer than 255 characters");
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

std::string Reference::str() const {
  std::string out = name();
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string Reference::pinned() const { return tag.empty() ? name() + "@" + digest : name() + ":" + tag; }

Reference Reference::rehomed(std::string_view registry_host, std::string_view prefix, bool keep_host) const {
  Reference out = *this;
  out.registry = std::string(registry_host);
  std::string path;
  if (!prefix.empty()) path = std::string(prefix) + "/";
  if (keep_host) path += registry + "/";
  out.repository = path + repository;
  return out;
}

}  // namespace gb::recipes
