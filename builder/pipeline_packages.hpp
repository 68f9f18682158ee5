#pragma once
// The package step of `gpubundle build` (driver.mode conventional with
// packages.sources): the kernel packages of every target kernel, fetched and
// verified (packages/packages.hpp), written as a signed site repository
// (packages/site_repo.hpp), stored as an image (node-images/repo_image.hpp)
// and recorded in the lock with its key (recipes/lock.hpp packageRepo).
//
// The signing key is stable across builds, so that a site trusts it once:
// --repo-key FILE, else STORE/keys/package-repo.asc, made on first use. Only
// its public half leaves the build machine (in the lock, then the kit).
// Verified package files are kept in STORE/packages/ for the next build.

#include <cstdint>
#include <filesystem>
#include <string>

namespace gb::mirror {
class Store;
}
namespace gb::recipes {
struct Lock;
struct Recipe;
}

namespace gb {
class Progress;
}  // namespace gb

namespace gb::cli {

// True when the recipe asks for a site package repository.
bool wants_package_repo(const recipes::Recipe& recipe);

struct PackageRepoBuilt {
  std::string ref;
  std::uint64_t bytes = 0;  // the packages
  std::size_t packages = 0;
  std::string fingerprint;
};

PackageRepoBuilt build_package_repo(const recipes::Recipe& recipe, recipes::Lock& lock, mirror::Store& store, const std::filesystem::path& repo_key,
                                    int jobs, Progress& progress);

// The repository signing key's file: `repo_key` when given, else the store's.
std::filesystem::path package_repo_key_path(const mirror::Store& store, const std::filesystem::path& repo_key);

}  // namespace gb::cli
