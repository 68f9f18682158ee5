#include "builder/pipeline_packages.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "packages/site_repo.hpp"
#include "packages/packages.hpp"

#include "mirror/store.hpp"
#include "node-images/kernel_packages.hpp"
#include "node-images/repo_image.hpp"
#include "node-images/unpack.hpp"
#include "recipes/lock.hpp"
#include "recipes/reference.hpp"
#include "recipes/recipe.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"
#include "packages/names.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

namespace {

// Loads the repository key, making the store's default one on first use.
signing::openpgp::SigningKey repo_signing_key(const mirror::Store& store, const fs::path& given) {
  fs::path file = package_repo_key_path(store, given);
  std::error_code ec;
  if (!given.empty() || fs::exists(file, ec)) return signing::openpgp::SigningKey::load(file).value_or_throw();
  fs::create_directories(file.parent_path(), ec);
  if (ec) throw Error(ErrorKind::Failed, "cannot create " + file.parent_path().string() + ": " + ec.message());
  fs::permissions(file.parent_path(), fs::perms::owner_all, ec);
  auto key = signing::openpgp::SigningKey::generate(file, "gpubundle site package repository").value_or_throw();
  log_info("made the package repository signing key " + file.string() + " (" + key.fingerprint() +
            "); sites trust it once, so keep it with the store or pass --repo-key");
  return key;
}

std::string arch_of(const std::string& platform) {
  auto slash = platform.find('/');
  std::string arch = slash == std::string::npos ? platform : platform.substr(slash + 1);
  return arch.substr(0, arch.find('/'));  // linux/arm64/v8 -> arm64
}

// The compiler package for `kernel` (packages::kernel_compiler_package()), from the
// CONFIG_CC_VERSION_TEXT of the .config its headers package carries; "" with a
// warning in the lock when that package or line is not there.
std::string kernel_compiler(const std::vector<packages::Fetched>& got, const std::string& kernel, recipes::PackageFormat format,
                            const fs::path& work, recipes::Lock& lock) {
  const std::string file = format == recipes::PackageFormat::Apt ? "" : "kernel-devel-" + kernel + ".rpm";
  const packages::Fetched* headers = nullptr;
  for (const auto& f : got)
    if (format == recipes::PackageFormat::Apt ? f.package.name == "linux-headers-" + kernel : f.package.file_name() == file) headers = &f;
  auto missing = [&](const std::string& why) {
    lock.warnings.push_back("kernel " + kernel + ": " + why + ", so the site repository carries no compiler at the kernel's own "
                            "version, which the driver container installs when its own differs");
    return std::string();
  };
  if (!headers) return missing(format == recipes::PackageFormat::Apt ? "no linux-headers-" + kernel + " package" : "no " + file);
  const std::string member = (format == recipes::PackageFormat::Apt ? "usr/src/linux-headers-" + kernel : "usr/src/kernels/" + kernel) + "/.config";
  node_images::UnpackLimits just_config;
  just_config.only = {member};  // not the ~0.3 GiB of headers around it
  auto unpacked = format == recipes::PackageFormat::Apt ? node_images::unpack_deb(headers->file, work, just_config)
                                               : node_images::unpack_rpm(headers->file, work, just_config);
  if (!unpacked) throw Error(unpacked.error());
  fs::path config = work / member;
  auto text = read_file(config, 16 << 20);
  std::error_code ec;
  if (!text) {
    fs::remove_all(work, ec);
    return missing(headers->package.file_name() + " has no .config");
  }
  std::string compiler;
  for (const auto& line : split(*text, '\n'))
    if (starts_with(line, "CONFIG_CC_VERSION_TEXT=")) compiler = packages::kernel_compiler_package(format, line.substr(23));
  fs::remove_all(work, ec);
  if (compiler.empty()) return missing(headers->package.file_name() + "'s .config names no gcc (CONFIG_CC_VERSION_TEXT)");
  return compiler;
}

}  // namespace

bool wants_package_repo(const recipes::Recipe& r) { return wants_site_packages(r); }

fs::path package_repo_key_path(const mirror::Store& store, const fs::path& repo_key) {
  return repo_key.empty() ? store.keys_dir() / "package-repo.asc" : repo_key;
}

PackageRepoBuilt build_package_repo(const recipes::Recipe& recipe, recipes::Lock& lock, mirror::Store& store, const fs::path& repo_key, int jobs,
                                    Progress& progress) {
  const recipes::PackageFormat format = recipes::os_package_format(recipe.os);
  auto key = repo_signing_key(store, repo_key);

  std::vector<std::string> archs;
  for (const auto& p : lock.platforms.empty() ? std::vector<std::string>{"linux/amd64"} : lock.platforms) {
    std::string a = arch_of(p);
    if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  }

  ScratchDir scratch(store.packages_dir() / (".site-repo." + std::to_string(::getpid())));
  node_images::StorePackageCache cache(store);
  std::vector<packages::Fetched> all;
  std::set<std::string> seen;  // file name and sha256 of what `all` holds
  const bool gpu_driver = recipe.driver_mode == recipes::DriverMode::Conventional;
  const bool doca = recipes::doca_builds_on_node(recipe);
  for (const auto& arch : archs)
    for (const auto& kernel : recipe.kernels) {
      packages::FetchRequest req;
      if (gpu_driver) req.names = packages::kernel_package_names(recipe.packages, recipe.os, kernel);
      if (doca) {
        auto d = packages::doca_build_package_names(recipe.os, kernel);
        for (auto& n : d.required)
          if (std::find(req.names.begin(), req.names.end(), n) == req.names.end()) req.names.push_back(std::move(n));
        req.optional_names = std::move(d.optional);
      }
      req.arch = packages::package_arch("linux/" + arch, format);
      req.closure = packages::Closure::Full;
      req.dest = scratch.path() / "downloads";  // on their way into the cache
      req.why = "kernel " + kernel;
      req.jobs = jobs;
      packages::FetchOptions fo;
      fo.progress = &progress;
      fo.cache = &cache;
      auto got = packages::fetch_packages(recipe.packages.sources, req, fo).value_or_throw();
      // The RHEL driver script installs gcc at the kernel's own version, the
      // DOCA build gcc-<major> on Ubuntu: read off the kernel's headers.
      if ((gpu_driver && format == recipes::PackageFormat::RpmMd) || (doca && format == recipes::PackageFormat::Apt)) {
        std::string compiler = kernel_compiler(got, kernel, format, scratch.path() / ("headers-" + arch + "-" + kernel), lock);
        if (!compiler.empty()) {
          packages::FetchRequest cc = req;
          cc.names = {compiler};
          cc.optional_names.clear();
          cc.why = "kernel " + kernel + "'s compiler";
          auto more = packages::fetch_packages(recipe.packages.sources, cc, fo).value_or_throw();
          got.insert(got.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        }
      }
      // Kernels and requests share packages (glibc): each file once.
      for (auto& f : got)
        if (seen.insert(f.package.file_name() + " " + f.package.sha256).second) all.push_back(std::move(f));
    }

  auto repo = packages::write_site_repo(format, all, archs, key, scratch.path() / "repo").value_or_throw();

  node_images::RepoImageOptions io;
  io.base = recipe.packages.server_image.empty() ? recipes::k_default_package_server_image : recipe.packages.server_image;
  io.base = recipes::Reference::parse(io.base).value_or_throw().str();  // as the lock lists it
  io.architecture = archs.front();
  io.os_tag = lock.os_tag;
  io.format = to_string(format);
  io.fingerprint = key.fingerprint();
  io.release_sha256 = repo.release_sha256;
  io.work = scratch.path() / "image";
  auto image = node_images::build_repo_image(store, repo.root, io).value_or_throw();

  // One repository image per lock: a rebuild with other packages replaces it.
  std::erase_if(lock.images, [&](const recipes::LockImage& i) { return i.built == recipes::BuiltKind::PackageRepo && i.source != image.ref; });
  recipes::record_built(lock, image.built());
  lock.package_repo = recipes::LockPackageRepo{io.format, key.fingerprint(), key.public_armored()};
  return {image.ref, repo.bytes, repo.packages, key.fingerprint()};
}

}  // namespace gb::cli
