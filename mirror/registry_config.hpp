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
//       username: robot
//       passwordFile: pw.txt
//
// A host with no entry is reached at https://HOST with system CAs.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb {

struct HostConfig {
  std::vector<std::string> mirrors;  // "http://127.0.0.1:5101", "https://mirror.local"
  bool fallback = true;
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
  bool insecure_skip_verify = false;
  std::string username;
  std::string password_file;
};

struct Endpoint {
  std::string base_url;  // "https://nvcr.io" or "http://127.0.0.1:5101"
  std::string host;      // host[:port] of base_url
  const HostConfig* tls = nullptr;  // settings that apply to this endpoint
};

struct RegistryConfig {
  std::map<std::string, HostConfig> hosts;

  static Result<RegistryConfig> load(const std::filesystem::path& file);
  // Endpoints to try for a registry host, in order. docker.io maps to
  // registry-1.docker.io.
  std::vector<Endpoint> endpoints(const std::string& registry_host) const;
  const HostConfig* host(const std::string& host) const;
};

struct Credential {
  std::string username;
  std::string password;  // or an identity token
};

// Looks up credentials for a host: registry config first, then
// $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json.
std::optional<Credential> find_credential(const RegistryConfig& config, const std::string& host);

}  // namespace gb
