#include "builder/pipeline_packages.hpp"

#include <unistd.h>

#include <algorithm>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/package_repo.hpp"
#include "mirror/packages.hpp"
#include "mirror/rpm_repo.hpp"
#include "mirror/store.hpp"
#include "node-images/repo_image.hpp"
#include "recipes/lock.hpp"
#include "recipes/reference.hpp"
#include "recipes/recipe.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

namespace {

// Loads the repository key, making the store's default one on first use.
openpgp::SigningKey repo_signing_key(const fs::path& store_root, const fs::path& given) {
  fs::path file = package_repo_key_path(store_root, given);
  std::error_code ec;
  if (!given.empty() || fs::exists(file, ec)) return openpgp::SigningKey::load(file).value_or_throw();
  fs::create_directories(file.parent_path(), ec);
  if (ec) throw Error(ErrorKind::Failed, "cannot create " + file.parent_path().string() + ": " + ec.message());
  fs::permissions(file.parent_path(), fs::perms::owner_all, ec);
  auto key = openpgp::SigningKey::generate(file, "gpubundle site package repository").value_or_throw();
  log::info("made the package repository signing key " + file.string() + " (" + key.fingerprint() +
            "); sites trust it once, so keep it with the store or pass --repo-key");
  return key;
}

std::string arch_of(const std::string& platform) {
  auto slash = platform.find('/');
  std::string arch = slash == std::string::npos ? platform : platform.substr(slash + 1);
  return arch.substr(0, arch.find('/'));  // linux/arm64/v8 -> arm64
}

}  // namespace

bool wants_package_repo(const Recipe& r) { return r.driver_mode == DriverMode::Conventional && !r.packages.sources.empty(); }

fs::path package_repo_key_path(const fs::path& store_root, const fs::path& repo_key) {
  return repo_key.empty() ? store_root / "keys" / "package-repo.asc" : repo_key;
}

PackageRepoBuilt build_package_repo(const Recipe& recipe, Lock& lock, Store& store, const fs::path& repo_key, int jobs,
                                    Progress& progress) {
  const PackageFormat format = os_package_format(recipe.os);
  auto key = repo_signing_key(store.root(), repo_key);

  std::vector<std::string> archs;
  for (const auto& p : lock.platforms.empty() ? std::vector<std::string>{"linux/amd64"} : lock.platforms) {
    std::string a = arch_of(p);
    if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  }

  std::vector<packages::Fetched> all;
  for (const auto& arch : archs)
    for (const auto& kernel : recipe.kernels) {
      packages::FetchRequest req;
      req.names = kernel_package_names(recipe.packages, recipe.os, kernel);
      req.arch = package_arch("linux/" + arch, format);
      req.closure = packages::Closure::Full;
      req.dest = store.root() / "packages";
      req.why = "kernel " + kernel;
      req.jobs = jobs;
      packages::FetchOptions fo;
      fo.progress = &progress;
      auto got = packages::fetch_packages(recipe.packages.sources, req, fo).value_or_throw();
      all.insert(all.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
    }

  ScratchDir scratch(store.root() / "packages" / (".site-repo." + std::to_string(::getpid())));
  package_repo::WrittenRepo repo;
  if (format == PackageFormat::Apt) {
    repo = package_repo::write_apt_repo(all, archs, key, scratch.path() / "repo").value_or_throw();
  } else {
    // dnf's layout, metadata by createrepo_c (mirror/rpm_repo.hpp); its signed repomd.xml names the content.
    repo.root = scratch.path() / "repo";
    packages::rpm_md::write_site_repo(all, key, repo.root).value_or_throw();
    repo.release_sha256 = sha256_file_hex(repo.root / "repodata" / "repomd.xml").value_or_throw();
    std::vector<std::string> seen;
    for (const auto& f : all)
      if (std::find(seen.begin(), seen.end(), f.package.file_name()) == seen.end()) {
        seen.push_back(f.package.file_name());
        repo.bytes += f.package.size;
        ++repo.packages;
      }
  }

  RepoImageOptions io;
  io.base = recipe.packages.server_image.empty() ? k_default_package_server_image : recipe.packages.server_image;
  io.base = Reference::parse(io.base).value_or_throw().str();  // as the lock lists it
  io.architecture = archs.front();
  io.os_tag = lock.os_tag;
  io.format = to_string(format);
  io.fingerprint = key.fingerprint();
  io.release_sha256 = repo.release_sha256;
  io.work = scratch.path() / "image";
  auto image = build_repo_image(store, repo.root, io).value_or_throw();

  // One repository image per lock: a rebuild with other packages replaces it.
  std::erase_if(lock.images, [&](const LockImage& i) { return i.built == BuiltKind::PackageRepo && i.source != image.ref; });
  record_built(lock, image.built());
  if (auto* li = lock.find(image.ref); li && !lock.destination_registry.empty())
    li->destination = Reference::parse(image.ref).value_or_throw().rehomed(lock.destination_registry, lock.destination_prefix).str();
  lock.package_repo = LockPackageRepo{io.format, key.fingerprint(), key.public_armored()};
  return {image.ref, repo.bytes, repo.packages, key.fingerprint()};
}

}  // namespace gb::cli
