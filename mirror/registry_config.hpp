#pragma once
// Per-host registry settings, from --registry-config (YAML, docs/registries.md):
//
//   hosts:
//     nvcr.io:
//       mirrors: ["http://127.0.0.1:5101"]   # endpoints tried in order
//       fallback: false                      # do not fall back to https://nvcr.io
//       caFile: ca.pem                       # paths relative to the config file
//       clientCert: c.pem
//       clientKey: k.pem
//       insecureSkipVerify: false
//       plainHttp: false                     # reach HOST itself over http:// (push and pull)
//       username: robot
//       passwordFile: pw.txt
//
// A host with no entry is reached at https://HOST with system CAs. Each
// mirror URL is itself a host: its TLS and credentials come from its own
// entry (keyed "host:port") when there is one.
// A key written twice (a host, a field) is refused; the file may be at most
// k_registry_config_max_bytes.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "net/transport.hpp"

namespace gb::mirror {

constexpr std::size_t k_registry_config_max_bytes = 1 << 20;

// The TLS fields (caFile, clientCert, clientKey, insecureSkipVerify) are the
// base: the transport reads them.
struct HostConfig : net::TlsOptions {
  std::vector<std::string> mirrors;  // "http://127.0.0.1:5101", "https://mirror.local"
  bool fallback = true;
  bool plain_http = false;  // https://HOST becomes http://HOST
  std::string username;
  std::string password_file;
};

struct Endpoint {
  std::string base_url;  // "https://nvcr.io" or "http://127.0.0.1:5101"
  std::string host;      // host[:port] of base_url
  const HostConfig* tls = nullptr;  // settings that apply to this endpoint
  bool mirror = false;              // a configured mirror, not the registry itself
};

struct RegistryConfig {
  std::map<std::string, HostConfig> hosts;
  std::filesystem::path file;  // where it was loaded from (empty when built in code)

  static Result<RegistryConfig> load(const std::filesystem::path& file);
  // Endpoints to try for a registry host, in order. docker.io maps to
  // registry-1.docker.io.
  std::vector<Endpoint> endpoints(const std::string& registry_host) const;
  // Where pushes go: the host itself (never a mirror).
  Endpoint push_endpoint(const std::string& registry_host) const;
  const HostConfig* host(const std::string& host) const;
};

struct Credential {
  std::string username;
  std::string password;        // empty when identity_token is set
  std::string identity_token;  // docker "identitytoken": an OAuth2 refresh token
  std::string source;          // where it came from, for messages (a file path, never the secret)
};

// Looks up credentials for a host: registry config first, then
// $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json.
// An unreadable passwordFile is reported as an error rather than ignored.
Result<std::optional<Credential>> find_credential(const RegistryConfig& config, const std::string& host);

// One Docker-style auth file ({"auths": {HOST: {auth | username+password | identitytoken}}}).
// Keys may be "host", "https://host" or "https://host/v1/"; docker.io also
// matches "https://index.docker.io/v1/". nullopt when the file has no entry.
Result<std::optional<Credential>> credential_from_auth_file(std::string_view json_text, const std::string& host,
                                                            const std::string& file_name);

}  // namespace gb::mirror
