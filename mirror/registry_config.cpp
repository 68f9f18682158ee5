#include "mirror/registry_config.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "recipes/yaml_input.hpp"

namespace gb::mirror {

namespace {

// "https://host:5000/v1/" -> "host:5000"
std::string host_of(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  auto slash = url.find('/');
  if (slash != std::string_view::npos) url = url.substr(0, slash);
  return to_lower(url);
}

struct ConfigReader {
  std::string file;

  Failure fail(const YAML::Node& node, const std::string& path, const std::string& what) const {
    int line = node.IsDefined() ? node.Mark().line + 1 : 0;
    return input_error(file + (line > 0 ? ":" + std::to_string(line) : "") + ": " + path + ": " + what);
  }
};

std::string base64_decode(std::string_view in, bool& ok) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  ok = true;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    auto pos = chars.find(c);
    if (pos == std::string::npos) {
      ok = false;
      return {};
    }
    val = (val << 6) + static_cast<int>(pos);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

}  // namespace

Result<RegistryConfig> RegistryConfig::load(const std::filesystem::path& file) {
  auto text = read_file(file, k_registry_config_max_bytes);
  if (!text) return input_error("registry config: " + text.error().message);
  ConfigReader rd{file.string()};
  auto dir = std::filesystem::absolute(file).parent_path();
  auto rel = [&](const std::string& p) { return p.empty() ? p : (dir / p).lexically_normal().string(); };
  RegistryConfig cfg;
  cfg.file = file;
  auto loaded = recipes::load_yaml_input(text.value(), file.string());  // refuses a host or field written twice
  if (!loaded) return loaded.error();
  YAML::Node root = *loaded;
  if (root.IsNull()) return cfg;
  if (!root.IsMap()) return rd.fail(root, "(top level)", "must be a mapping with a 'hosts' key");
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!it->first.IsScalar()) return rd.fail(it->first, "(top level)", "keys must be plain names");
    auto key = it->first.as<std::string>();
    if (key != "hosts") return rd.fail(it->first, key, "unknown key (expected 'hosts')");
  }
  YAML::Node hosts = root["hosts"];
  if (!hosts || hosts.IsNull()) return cfg;
  if (!hosts.IsMap()) return rd.fail(hosts, "hosts", "must be a mapping of host names");
  for (auto it = hosts.begin(); it != hosts.end(); ++it) {
    if (!it->first.IsScalar()) return rd.fail(it->first, "hosts", "host names must be plain strings");
    std::string name = it->first.as<std::string>();
    std::string path = "hosts." + name;
    if (name.find("://") != std::string::npos || name.find('/') != std::string::npos)
      return rd.fail(it->first, path, "host names are written without scheme or path (e.g. 'nvcr.io', '127.0.0.1:5000')");
    YAML::Node h = it->second;  // a copy: it->second lives in a temporary proxy
    HostConfig hc;
    const std::map<std::string, std::string*> texts = {{"caFile", &hc.ca_file},     {"clientCert", &hc.client_cert},
                                                       {"clientKey", &hc.client_key}, {"username", &hc.username},
                                                       {"passwordFile", &hc.password_file}};
    const std::map<std::string, bool*> flags = {
        {"fallback", &hc.fallback}, {"insecureSkipVerify", &hc.insecure_skip_verify}, {"plainHttp", &hc.plain_http}};
    if (!h.IsNull()) {
      if (!h.IsMap()) return rd.fail(h, path, "must be a mapping");
      for (auto f = h.begin(); f != h.end(); ++f) {
        if (!f->first.IsScalar()) return rd.fail(f->first, path, "field names must be plain strings");
        std::string field = f->first.as<std::string>();
        std::string fpath = path + "." + field;
        YAML::Node v = f->second;
        if (field == "mirrors") {
          if (!v.IsSequence()) return rd.fail(v, fpath, "must be a list of URLs");
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (!v[i].IsScalar()) return rd.fail(v[i], fpath + "[" + std::to_string(i) + "]", "must be a URL string");
            auto url = v[i].as<std::string>();
            if (!starts_with(url, "https://") && !starts_with(url, "http://"))
              return rd.fail(v[i], fpath + "[" + std::to_string(i) + "]",
                             quote(redact_url(url)) + " must start with https:// or http://");
            while (ends_with(url, "/")) url.pop_back();
            hc.mirrors.push_back(url);
          }
        } else if (auto t = texts.find(field); t != texts.end()) {
          if (!v.IsScalar()) return rd.fail(v, fpath, "must be a string");
          *t->second = v.as<std::string>();
        } else if (auto b = flags.find(field); b != flags.end()) {
          if (!v.IsScalar() || !YAML::convert<bool>::decode(v, *b->second)) return rd.fail(v, fpath, "must be true or false");
        } else if (field == "password") {
          return rd.fail(f->first, fpath, "passwords are not written inline; use passwordFile");
        } else {
          return rd.fail(f->first, fpath,
                         "unknown field (expected mirrors, fallback, caFile, clientCert, clientKey, "
                         "insecureSkipVerify, plainHttp, username, passwordFile)");
        }
      }
    }
    if (hc.client_cert.empty() != hc.client_key.empty())
      return rd.fail(h, path, "clientCert and clientKey must be given together");
    if (!hc.password_file.empty() && hc.username.empty()) return rd.fail(h, path, "passwordFile needs a username");
    if (!hc.fallback && hc.mirrors.empty()) return rd.fail(h, path + ".fallback", "false needs at least one mirror");
    hc.ca_file = rel(hc.ca_file);
    hc.client_cert = rel(hc.client_cert);
    hc.client_key = rel(hc.client_key);
    hc.password_file = rel(hc.password_file);
    for (auto* p : {&hc.ca_file, &hc.client_cert, &hc.client_key}) {
      if (!p->empty() && !std::filesystem::exists(*p))
        return rd.fail(h, path, "file " + *p + " does not exist");
    }
    cfg.hosts[to_lower(name)] = std::move(hc);
  }
  return cfg;
}

const HostConfig* RegistryConfig::host(const std::string& h) const {
  auto it = hosts.find(to_lower(h));
  if (it != hosts.end()) return &it->second;
  if (h == "registry-1.docker.io" || h == "index.docker.io") return host("docker.io");
  return nullptr;
}

static std::string api_host(const std::string& registry_host) {
  std::string h = to_lower(registry_host);
  if (h == "docker.io" || h == "index.docker.io") return "registry-1.docker.io";
  return h;
}

std::vector<Endpoint> RegistryConfig::endpoints(const std::string& registry_host) const {
  std::vector<Endpoint> out;
  const HostConfig* hc = host(registry_host);
  if (hc) {
    for (auto& m : hc->mirrors) {
      Endpoint e;
      e.base_url = m;
      e.host = host_of(m);
      e.tls = host(e.host);
      e.mirror = true;
      out.push_back(e);
    }
  }
  if (!hc || hc->fallback) out.push_back(push_endpoint(registry_host));
  return out;
}

Endpoint RegistryConfig::push_endpoint(const std::string& registry_host) const {
  const HostConfig* hc = host(registry_host);
  Endpoint e;
  e.host = api_host(registry_host);
  e.base_url = std::string(hc && hc->plain_http ? "http://" : "https://") + e.host;
  e.tls = hc;
  return e;
}

Result<std::optional<Credential>> credential_from_auth_file(std::string_view json_text, const std::string& host,
                                                            const std::string& file_name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    return input_error(file_name + ": not valid JSON");
  }
  if (!j.is_object()) return input_error(file_name + ": not a JSON object");
  auto auths = j.find("auths");
  if (auths == j.end() || !auths->is_object()) return std::optional<Credential>{};
  std::string want = to_lower(host);
  bool hub = want == "docker.io" || want == "registry-1.docker.io" || want == "index.docker.io";
  for (auto& [key, entry] : auths->items()) {
    std::string k = host_of(key);
    bool match = k == want || (hub && (k == "docker.io" || k == "index.docker.io" || k == "registry-1.docker.io"));
    if (!match || !entry.is_object()) continue;
    Credential c;
    c.source = file_name;
    if (auto a = entry.find("auth"); a != entry.end() && a->is_string() && !a->get<std::string>().empty()) {
      bool ok = false;
      std::string decoded = base64_decode(a->get<std::string>(), ok);
      auto colon = decoded.find(':');
      if (!ok || colon == std::string::npos)
        return input_error(file_name + ": auths." + key + ".auth is not base64 of user:password");
      c.username = decoded.substr(0, colon);
      c.password = decoded.substr(colon + 1);
    }
    if (c.username.empty() && entry.contains("username") && entry["username"].is_string()) {
      c.username = entry["username"].get<std::string>();
      if (entry.contains("password") && entry["password"].is_string()) c.password = entry["password"].get<std::string>();
    }
    if (auto t = entry.find("identitytoken"); t != entry.end() && t->is_string() && !t->get<std::string>().empty()) {
      c.identity_token = t->get<std::string>();
      c.password.clear();
    }
    if (c.username.empty() && c.identity_token.empty()) continue;  // e.g. a credential-helper stub
    return std::optional<Credential>(std::move(c));
  }
  return std::optional<Credential>{};
}

Result<std::optional<Credential>> find_credential(const RegistryConfig& config, const std::string& host) {
  if (const HostConfig* hc = config.host(host); hc && !hc->username.empty()) {
    Credential c;
    c.username = hc->username;
    c.source = config.file.empty() ? std::string("registry config") : config.file.string();
    if (!hc->password_file.empty()) {
      auto pw = read_file(hc->password_file);
      if (!pw) return input_error("registry config: host " + host + ": passwordFile: " + pw.error().message);
      std::string p = pw.value();
      while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
      c.password = p;
    }
    return std::optional<Credential>(std::move(c));
  }
  std::vector<std::string> files;
  if (const char* f = std::getenv("REGISTRY_AUTH_FILE"); f && *f) files.push_back(f);
  if (const char* d = std::getenv("DOCKER_CONFIG"); d && *d) files.push_back(std::string(d) + "/config.json");
  if (const char* h = std::getenv("HOME"); h && *h) files.push_back(std::string(h) + "/.docker/config.json");
  for (auto& f : files) {
    if (!std::filesystem::exists(f)) continue;
    auto text = read_file(f);
    if (!text) return input_error(text.error().message);
    auto c = credential_from_auth_file(text.value(), host, f);
    if (!c) return c.error();
    if (c.value()) return c;
  }
  return std::optional<Credential>{};
}

}  // namespace gb::mirror
