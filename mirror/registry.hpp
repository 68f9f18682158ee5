#pragma once
// A client for the OCI distribution API. One RegistryClient serves many hosts
// and threads. It speaks HTTP through a net::Transport (net/transport.hpp:
// libcurl by default, a scripted fake in unit tests); the rules live above
// that seam: auth, resume, the endpoint fall-through rule and the error kinds
// (mirror/registry_session.hpp), with net/retry.hpp's one retry and redirect
// policy.
//
// Credentials go only to the origin (scheme, host, port) of the endpoint they
// belong to: a Location (uploads, redirects) or Link page on another origin is
// reached without Authorization and without the client certificate. Redirects
// are followed here, not by libcurl, so that one place decides it.
// Digests are checked (registry_text.hpp is_valid_digest) before they reach a URL.
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
#include "net/retry.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb::mirror {

struct ClientOptions {
  int max_parallel = 8;                 // blob transfers at once, all hosts
  int max_per_host = 6;                 // blob transfers at once, one host
  net::RetryPolicy retry;               // per request (net/retry.hpp: which failures, how long)
  int stall_timeout_s = 30;             // abort a transfer that moves no byte this long
  int connect_timeout_s = 15;
  // A hostile or broken server must not hold a run for long:
  int request_timeout_s = 60;   // whole exchange of a request with a small body (manifest, tag list, token,
                                // index.yaml, chart); $GPUBUNDLE_HTTP_TIMEOUT_S overrides it. Blobs have
                                // only the stall limit: a multi-GB layer must never hit a wall clock.
  std::uint64_t monolithic_max = 32ull << 20;  // larger blobs are pushed in chunks
  std::uint64_t chunk_size = 16ull << 20;      // PATCH size of a chunked upload
  std::string user_agent = "gpubundle";
};

// Where blob bytes go. write() is called with chunks in order; on a retry that
// resumes, the client continues where the last good byte ended (sink.size()).
// When a fetch starts, the client calls resume(): a sink that holds bytes from
// an earlier run feeds them to the client's hasher and returns their count
// (the client asks the registry for the rest and checks the whole digest);
// the default starts over.
class BlobSink {
public:
  virtual ~BlobSink() = default;
  virtual Result<void> write(std::string_view chunk) = 0;
  virtual std::uint64_t size() const = 0;  // bytes written so far (resume offset)
  virtual Result<void> truncate() = 0;     // start over (server ignored Range, bytes corrupt)
  virtual Result<std::uint64_t> resume(signing::Sha256& /*hasher*/) {
    if (auto t = truncate(); !t) return t.error();
    return std::uint64_t{0};
  }
  // A sink that hashes what it is given (the store) says so, and the client
  // asks it for the sha256 (hex) of its bytes instead of hashing them twice.
  virtual bool hashes() const { return false; }
  virtual std::string sha256_hex() { return {}; }
};

// A blob held in memory: small ones only (a chart, test blobs).
class MemorySink final : public BlobSink {
public:
  std::string data;
  int truncations = 0;  // starts over, the first included
  Result<void> write(std::string_view chunk) override {
    data.append(chunk);
    return {};
  }
  std::uint64_t size() const override { return data.size(); }
  Result<void> truncate() override {
    data.clear();
    ++truncations;
    return {};
  }
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
  recipes::Reference repo;  // registry + repository; tag/digest ignored
  std::string digest;
  std::uint64_t size = 0;
  std::function<std::unique_ptr<BlobSink>()> open_sink;
  std::function<Result<void>(BlobSink&)> on_done;  // verify + publish; called once the digest matched
};

// Every call below is thread-safe. Pulls try the host's configured mirrors in
// order, then the host itself, under one rule for every call: a failure of
// that endpoint (any HTTP status, unreachable, TLS, auth) falls through to the
// next; bad input, bytes that fail verification and local write failures stop
// at once (registry_session.hpp). Pushes go to the host itself. Errors are one
// line naming the reference, the HTTP status and the registry's error code, e.g.
//   "nvcr.io/nvidia/driver:550-x: manifest unknown (404 MANIFEST_UNKNOWN)".
// HTTP and network failures are ErrorKind::Failed, bad input ErrorKind::Input.

class RegistryClient {
public:
  RegistryClient(RegistryConfig config, ClientOptions options = {});
  // Tests: the exchanges go to `transport`, waits and the wall clock to `clock`.
  RegistryClient(RegistryConfig config, ClientOptions options, std::shared_ptr<net::Transport> transport, net::Clock clock);
  ~RegistryClient();
  RegistryClient(const RegistryClient&) = delete;

  // GET by tag or digest; checks Docker-Content-Digest and, for a digest
  // reference, that the bytes hash to it.
  Result<oci::Manifest> get_manifest(const recipes::Reference& ref);
  // HEAD; the digest, or nullopt when the registry answers 404.
  Result<std::optional<std::string>> head_manifest(const recipes::Reference& ref);
  // All tags, following Link pagination; page_size > 0 asks for pages of n.
  Result<std::vector<std::string>> list_tags(const recipes::Reference& repo, int page_size = 0);

  // One blob, streamed into sink, sha256 and size checked while it streams.
  // `size` is the exact size from the descriptor. on_bytes gets new bytes only
  // (a restart never makes the total go backwards).
  Result<void> fetch_blob(const recipes::Reference& repo, const std::string& digest, std::uint64_t size, BlobSink& sink,
                          const std::function<void(std::uint64_t)>& on_bytes = {});
  // Many blobs in parallel (options.max_parallel, options.max_per_host per
  // registry). on_bytes is called from worker threads, one call at a time.
  // Returns every failure, one per line.
  Result<void> fetch_blobs(std::vector<BlobRequest> requests, const std::function<void(std::uint64_t)>& on_bytes = {});

  // Plain HTTP(S) GET of a URL (Helm index.yaml and chart .tgz), TLS and
  // credentials per host as for registries. Bodies larger than k_url_max_bytes
  // are refused.
  static constexpr std::uint64_t k_url_max_bytes = 64ull << 20;
  Result<std::string> get_url(const std::string& url);

  // Push side.
  Result<bool> blob_exists(const recipes::Reference& repo, const std::string& digest);
  // Tries a cross-repository mount from `mount_from` first when given (same
  // registry only). Blobs up to options.monolithic_max go in one PUT, larger
  // ones in PATCH chunks that resume from the registry's Range on failure.
  Result<void> push_blob(const recipes::Reference& repo, const std::string& digest, BlobSource& source,
                         const std::optional<recipes::Reference>& mount_from = std::nullopt);
  // Only a cross-repository mount (same registry): true when mounted; false
  // when the registry refused and opened an upload instead (cancelled here),
  // so the caller uploads the bytes itself.
  Result<bool> mount_blob(const recipes::Reference& repo, const std::string& digest, const recipes::Reference& from);
  // PUT by ref's tag, else its digest, with Content-Type media_type.
  Result<void> put_manifest(const recipes::Reference& ref, std::string_view media_type, std::string_view bytes);

  // Counters for summaries and tests.
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t blob_bytes_downloaded = 0;
    std::uint64_t blobs_pushed = 0;
    std::uint64_t blobs_mounted = 0;
    std::uint64_t retries = 0;
  };
  Stats stats() const;

  // One line per host this client could not talk to at all (nothing
  // listening, an unknown name, no answer, TLS, a plain HTTP server at an
  // https:// URL), with the fix, sorted: e.g. "127.0.0.1:5000 refused the
  // connection (nothing listens on that port): is the registry running, and
  // is the port right?". Such a host is asked once per run: later requests
  // to it fail at once with the same words.
  std::vector<std::string> host_problems() const;
  // Failure lines of many requests told per host: host_problems() first,
  // then the lines that no host problem explains (those that end with one
  // are dropped). `lines` unchanged when every host answered.
  std::vector<std::string> by_host(const std::vector<std::string>& lines) const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::mirror
