#pragma once
// An image reference as the distribution spec defines it:
//   [registry[:port]/]path[:tag][@algorithm:hex]
// parse() normalises Docker Hub short names the way docker does:
// "ubuntu" -> "docker.io/library/ubuntu:latest".

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace gb::recipes {

struct Reference {
  std::string registry;    // "nvcr.io", "127.0.0.1:5000", "docker.io"
  std::string repository;  // "nvidia/driver"
  std::string tag;         // may be empty when a digest is given
  std::string digest;      // "sha256:..." or empty

  static Result<Reference> parse(std::string_view text);

  std::string name() const { return registry + "/" + repository; }  // no tag, no digest
  // "registry/repository:tag", "registry/repository@digest" or both.
  std::string str() const;
  // The reference the way a tag-pinned puller uses it: tag when there is one, else digest.
  std::string pinned() const;
  // Same repository path under another registry and prefix:
  // nvcr.io/nvidia/driver -> HOST/PREFIX/nvidia/driver (keep_host: HOST/PREFIX/nvcr.io/nvidia/driver).
  Reference rehomed(std::string_view registry_host, std::string_view prefix, bool keep_host = false) const;

  bool operator==(const Reference&) const = default;
};

bool is_valid_tag(std::string_view tag);
// One repository path component: [a-z0-9]+(([._]|__|-+)[a-z0-9]+)*
bool is_valid_path_component(std::string_view component);

}  // namespace gb::recipes
