#pragma once
// A client for the OCI distribution API on libcurl. One RegistryClient serves
// many hosts and threads; libcurl stays behind this header.
//
// Auth: anonymous, basic, or bearer tokens from the WWW-Authenticate
// challenge, cached per (host, scope) until they expire. Credentials come from
// the registry config, $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json or
// ~/.docker/config.json, and never reach a log line.
// TLS is verified unless a host's config says insecureSkipVerify; plain HTTP
// only for endpoints written as http://.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry_config.hpp"
#include "recipes/reference.hpp"

namespace gb {

struct ClientOptions {
  int max_parallel = 8;                 // blob transfers at once, all hosts
  int max_per_host = 6;                 // blob transfers at once, one host
  int retries = 4;                      // per request, on connection errors, 5xx and 429
  int stall_timeout_s = 30;             // abort a transfer that moves no byte this long
  int connect_timeout_s = 15;
  std::string user_agent = "gpubundle";
};

// Where blob bytes go. write() is called with chunks in order; on a retry that
// resumes, the client continues where the last good byte ended.
class BlobSink {
public:
  virtual ~BlobSink() = default;
  virtual Result<void> write(std::string_view chunk) = 0;
  virtual std::uint64_t size() const = 0;  // bytes written so far (resume offset)
  virtual Result<void> truncate() = 0;     // start over (server ignored Range)
};

// Where pushed blob bytes come from.
class BlobSource {
public:
  virtual ~BlobSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads up to buf.size() bytes at offset; returns the count (0 at end).
  virtual Result<std::size_t> read(std::uint64_t offset, char* buf, std::size_t len) = 0;
};

struct BlobRequest {
  Reference repo;  // registry + repository; tag/digest ignored
  std::string digest;
  std::uint64_t size = 0;
  std::function<std::unique_ptr<BlobSink>()> open_sink;
  std::function<Result<void>(BlobSink&)> on_done;  // verify + publish; called once the digest matched
};

class RegistryClient {
public:
  RegistryClient(RegistryConfig config, ClientOptions options = {});
  ~RegistryClient();
  RegistryClient(const RegistryClient&) = delete;

  // GET by tag or digest; checks Docker-Content-Digest and, for a digest
  // reference, that the bytes hash to it.
  Result<oci::Manifest> get_manifest(const Reference& ref);
  // HEAD; the digest, or nullopt when the registry answers 404.
  Result<std::optional<std::string>> head_manifest(const Reference& ref);
  Result<std::vector<std::string>> list_tags(const Reference& repo);

  // One blob, streamed into sink, sha256 and size checked while it streams.
  Result<void> fetch_blob(const Reference& repo, const std::string& digest, std::uint64_t size, BlobSink& sink,
                          const std::function<void(std::uint64_t)>& on_bytes = {});
  // Many blobs in parallel (options.max_parallel). Returns every failure, one per line.
  Result<void> fetch_blobs(std::vector<BlobRequest> requests, const std::function<void(std::uint64_t)>& on_bytes = {});

  // Plain HTTP(S) GET of a URL (Helm index.yaml and chart .tgz), TLS and
  // credentials per host as for registries.
  Result<std::string> get_url(const std::string& url);

  // Push side.
  Result<bool> blob_exists(const Reference& repo, const std::string& digest);
  // Tries a cross-repository mount from `mount_from` first when given.
  Result<void> push_blob(const Reference& repo, const std::string& digest, BlobSource& source,
                         const std::optional<Reference>& mount_from = std::nullopt);
  Result<void> put_manifest(const Reference& ref, std::string_view media_type, std::string_view bytes);

  // Counters for summaries and tests.
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t blob_bytes_downloaded = 0;
    std::uint64_t blobs_pushed = 0;
    std::uint64_t blobs_mounted = 0;
    std::uint64_t retries = 0;
  };
  Stats stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb
