#pragma once
// What `gpubundle serve` offers, loaded once before it listens.
//
// From bundles: the volumes given are grouped by bundle id; each bundle is
// verified as import verifies it (signature, every tar header, every
// non-blob entry, the manifests and the OCI closure) and must be given
// whole. A delta's omitted blobs must be carried by another bundle given
// (its base). Blob bytes stay in the volumes, read in place at their tar
// offsets; each blob is hashed on its first read (or all at load with
// verify_all), and served only once it matched, so a tampered blob gets
// the client an error, never wrong bytes.
//
// From a store: every image of index.json, the store held with a shared
// lock (no mirror or gc writes it while it is served); blobs are hashed
// on first read too, so a blob rotted on disk is refused.
//
// Names: each image is served under the repository and tag it would have
// at a site registry with this prefix and layout (kit::site_reference), the
// names the install kit's values and runtime mirror config use.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "kit/kit.hpp"
#include "serve/registry_api.hpp"

namespace gb::signing {
class Keyring;
}

namespace gb::serve {

struct ContentOptions {
  std::string prefix;                      // repositories are <prefix>/<path>
  kit::Layout layout = kit::Layout::StripHost;
  const signing::Keyring* trusted = nullptr;        // bundles; nullptr: --insecure-skip-signature
  bool verify_all = false;                 // hash every blob before serving
};

class Content final : public BlobBodies {
public:
  static Result<std::unique_ptr<Content>> from_bundles(const std::vector<std::filesystem::path>& volumes, const ContentOptions& options);
  static Result<std::unique_ptr<Content>> from_store(const std::filesystem::path& store, const ContentOptions& options);
  ~Content() override;

  const Catalog& catalog() const;
  Result<std::optional<BlobBody>> open(std::string_view digest) override;
  std::size_t images() const;

  struct Impl;

private:
  explicit Content(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gb::serve
