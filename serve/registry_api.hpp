#pragma once
// The OCI distribution pull API (distribution-spec 1.1, "pull" and "content
// discovery"), read-only, over content fixed at start:
//
//   GET|HEAD /v2/                                  200 {} (401 without valid credentials)
//   GET|HEAD /v2/<name>/manifests/<tag|digest>     the bytes as carried, Content-Type the
//                                                  manifest's own, Docker-Content-Digest
//   GET|HEAD /v2/<name>/blobs/<digest>             200, or 206 for one Range "bytes=a-b",
//                                                  "bytes=a-" or "bytes=-n"
//   GET      /v2/<name>/tags/list[?n=&last=]       {"name","tags"}, sorted; Link rel="next"
//   GET      /v2/_catalog[?n=&last=]               {"repositories"}, sorted; Link rel="next"
//
// Anything else is refused before content is looked at: another method 405
// UNSUPPORTED (the server is read-only: no push, delete or upload session),
// a <name> that is not distribution's grammar 400 NAME_INVALID, a digest
// that is not "sha256:" and 64 lower-case hex 400 DIGEST_INVALID, a
// repository not served 404 NAME_UNKNOWN, a manifest or blob the repository
// does not hold 404 MANIFEST_UNKNOWN / BLOB_UNKNOWN (a repository reads only
// its own images' closure), a Range that is not one satisfiable range 416
// RANGE_INVALID with "Content-Range: bytes */<size>". A manifest whose type
// is not among a client's Accept types (when it names any, and no wildcard)
// is 404 MANIFEST_UNKNOWN: the bytes are never converted, so digests hold.
// Error bodies are {"errors":[{"code","message","detail"}]}.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "serve/http_server.hpp"
#include "serve/users.hpp"

namespace gb::serve {

struct Repository {
  std::map<std::string, std::string> tags;       // tag -> manifest digest
  std::set<std::string, std::less<>> digests;    // every manifest and blob it may read
};

struct ServedManifest {
  std::string media_type;
  std::string bytes;
};

// What is served, by name. Fixed once serving starts.
struct Catalog {
  std::map<std::string, Repository, std::less<>> repositories;
  std::map<std::string, ServedManifest, std::less<>> manifests;  // by digest
};

// A blob's bytes, verified before any is handed out: a range of a file
// (sent with sendfile), or a reader.
struct BlobBody {
  std::uint64_t size = 0;
  std::string file;  // "" when `read` is set
  std::uint64_t offset = 0;
  std::function<Result<std::size_t>(std::uint64_t offset, char* buf, std::size_t len)> read;
};

// Where blob bytes come from (a bundle, a store; a map in unit tests).
class BlobBodies {
public:
  virtual ~BlobBodies() = default;
  // nullopt: not here. A failure: its bytes are not what their digest says.
  virtual Result<std::optional<BlobBody>> open(std::string_view digest) = 0;
};

class RegistryApi {
public:
  // `users` nullptr: no authentication.
  RegistryApi(const Catalog& catalog, BlobBodies& blobs, const Users* users);
  HttpResponse handle(const HttpRequest& request) const;

  static constexpr std::size_t k_max_page = 1000;  // n beyond this is cut to it

private:
  HttpResponse manifest(const HttpRequest& r, const std::string& repo, const std::string& ref) const;
  HttpResponse blob(const HttpRequest& r, const std::string& repo, const std::string& digest) const;
  const Catalog& m_catalog;
  BlobBodies& m_blobs;
  const Users* m_users;
};

// The parts, exposed for unit tests and fuzzing.
struct ByteRange {
  std::uint64_t first = 0, length = 0;
};
// One "Range: bytes=..." header against a body of `size` bytes: nullopt when
// absent; a failure (416) when it is not exactly one satisfiable range.
Result<std::optional<ByteRange>> parse_range(std::string_view header, std::uint64_t size);

// "/v2/<name>/<kind>/<ref>": kind is "manifests", "blobs" or "tags" (ref
// "list"); the name must match distribution's grammar. nullopt: not this shape.
struct Route {
  std::string name, kind, ref;
};
std::optional<Route> parse_route(std::string_view path);
bool is_valid_repository_name(std::string_view name);

}  // namespace gb::serve
