#include "node-images/kernel_packages.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "mirror/catalog_db.hpp"
#include "mirror/oci.hpp"
#include "packages/packages.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"
#include "packages/names.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string media_type(recipes::PackageFormat f) {
  return f == recipes::PackageFormat::Apt ? "application/vnd.debian.binary-package" : "application/x-rpm";
}

Result<void> store_artifact(mirror::Store& store, const std::string& ref, const std::string& kernel, recipes::PackageFormat format,
                            const std::vector<packages::Fetched>& files) {
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  const std::string empty = "{}";
  json man = {{"schemaVersion", 2}, {"mediaType", std::string(mirror::oci::k_oci_manifest)},
              {"artifactType", k_kernel_packages_artifact_type}};
  man["config"] = {{"mediaType", mirror::oci::k_oci_empty}, {"digest", signing::sha256_digest(empty)}, {"size", empty.size()}, {"data", "e30="}};
  json layers = json::array();
  for (const auto& f : files) {
    const auto& p = f.package;
    layers.push_back({{"mediaType", media_type(format)},
                      {"digest", "sha256:" + p.sha256},
                      {"size", p.size},
                      {"annotations",
                       {{mirror::oci::k_oci_title, p.file_name()},
                        {"io.gpubundle.package", p.name + " " + p.version + " " + p.arch},
                        {"io.gpubundle.package.origin", p.origin}}}});
  }
  man["layers"] = layers;
  man["annotations"] = {{"org.opencontainers.image.created", rfc3339_utc(epoch->value_or(0))}, {"io.gpubundle.kernel", kernel}};
  if (auto r = store.put_blob(signing::sha256_digest(empty), empty); !r) return r.error();
  for (const auto& f : files)
    if (auto r = store.put_blob_file("sha256:" + f.package.sha256, f.package.size, f.file); !r) return r.error();
  auto manifest = mirror::oci::parse_manifest(man.dump(), mirror::oci::k_oci_manifest);
  if (!manifest) return manifest.error();
  mirror::Publication pub{ref, std::move(*manifest), {}, {"linux/amd64"}, mirror::k_built_here};
  return store.publish({pub});
}

// Copies the artifact's packages out of the store into `dir`, each checked.
Result<std::vector<fs::path>> export_artifact(const mirror::Store& store, const mirror::StoredImage& image, const fs::path& dir) {
  auto bytes = store.read_blob(image.digest);
  if (!bytes) return bytes.error();
  json man = json::parse(*bytes, nullptr, false);
  if (!man.is_object() || man.value("artifactType", "") != k_kernel_packages_artifact_type || !man["layers"].is_array())
    return op_error(image.ref + ": not a kernel packages artifact");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return op_error(dir.string() + ": " + ec.message());
  std::vector<fs::path> out;
  for (const auto& l : man["layers"]) {
    std::string digest = l.value("digest", "");
    std::string title = l.contains("annotations") ? l["annotations"].value(mirror::oci::k_oci_title, "") : "";
    if (title.empty() || title[0] == '.' || title.find('/') != std::string::npos)
      return op_error(image.ref + ": layer title '" + title + "' is not a plain file name");
    fs::path dst = dir / title;
    auto file = AtomicFile::create(dst);
    if (!file) return file.error();
    std::ifstream in(store.blob_path(digest), std::ios::binary);
    if (!in) return op_error(image.ref + ": blob " + digest + " is not in the store");
    signing::Sha256 h;
    std::string buf(1 << 16, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      std::string_view chunk(buf.data(), static_cast<size_t>(in.gcount()));
      h.update(chunk);
      if (auto w = file->write(chunk); !w) return w.error();
    }
    if ("sha256:" + h.hex() != digest)
      return op_error(image.ref + ": blob " + digest + " in the store does not match its digest (run `gpubundle store fsck`)");
    if (auto c = file->commit(); !c) return c.error();
    out.push_back(dst);
  }
  return out;
}

}  // namespace

std::optional<fs::path> StorePackageCache::find(const std::string& sha256, std::uint64_t size) {
  const std::string digest = "sha256:" + sha256;
  if (!m_store.has_blob(digest, size)) return std::nullopt;
  fs::path file = m_store.blob_path(digest);
  if (auto have = signing::sha256_file_hex(file); have && *have == sha256) return file;
  log_warn(file.string() + ": stored bytes do not match " + digest + "; fetching the package again");
  std::error_code ec;
  fs::remove(file, ec);
  return std::nullopt;
}

Result<fs::path> StorePackageCache::keep(const fs::path& file, const std::string& sha256, std::uint64_t size) {
  const std::string digest = "sha256:" + sha256;
  if (auto r = m_store.put_blob_file(digest, size, file); !r) return r.error();
  return m_store.blob_path(digest);
}

Result<std::vector<fs::path>> kernel_header_packages(const recipes::Recipe& recipe, const std::string& kernel, mirror::Store& store,
                                                     const fs::path& work, Progress* progress) {
  const std::string ref = std::string(k_kernel_packages_repository) + ":" + kernel;
  fs::path dir = work / ("packages-" + kernel);
  if (auto have = store.find_image(ref)) {
    log_info("kernel " + kernel + ": header packages from the store (" + ref + ")");
    return export_artifact(store, *have, dir);
  }
  recipes::PackageFormat format = recipes::os_package_format(recipe.os);
  std::vector<recipes::PackageSource> sources;
  for (const auto& s : recipe.packages.sources)
    if (s.format == format) sources.push_back(s);
  if (sources.empty())
    return input_error(recipe.where("packages.sources") + "kernel " + kernel + ": no " + to_string(format) +
                       " package source to fetch its headers from (target.os " + recipe.os +
                       "); add one under packages.sources, or pass --kernel-build/--kernel-headers");
  packages::FetchRequest req;
  req.names = {format == recipes::PackageFormat::Apt ? "linux-headers-" + kernel : "kernel-devel-" + kernel};
  req.arch = packages::package_arch(recipe.platforms.empty() ? "linux/amd64" : recipe.platforms.front(), format);
  req.closure = packages::Closure::SameSource;
  req.dest = dir;
  req.why = "kernel " + kernel;
  StorePackageCache cache(store);
  packages::FetchOptions fo;
  fo.progress = progress;
  fo.cache = &cache;
  auto fetched = packages::fetch_packages(sources, req, fo);
  if (!fetched) return fetched.error();
  if (auto r = store_artifact(store, ref, kernel, format, *fetched); !r) return r.error();
  log_info("kernel " + kernel + ": " + std::to_string(fetched->size()) + " header packages fetched and stored as " + ref);
  // Out of the artifact, as a later build gets them: named files (kbuild
  // tells .deb from .rpm by name), each checked.
  auto stored = store.find_image(ref);
  if (!stored) return op_error(ref + ": not in the store after it was stored");
  return export_artifact(store, *stored, dir);
}

Result<void> add_fetched_headers(const recipes::Recipe& recipe, const std::vector<std::string>& kernels, mirror::Store& store,
                                 const fs::path& work, DriverInputs& in, Progress* progress) {
  if (!in.kernel_builds.empty() || !in.kernel_headers.empty() || recipe.packages.sources.empty()) return {};
  if (auto r = check_driver_inputs(in); !r) return r.error();
  for (const auto& k : kernels) {
    auto files = kernel_header_packages(recipe, k, store, work, progress);
    if (!files) return files.error();
    in.kernel_headers.insert(in.kernel_headers.end(), files->begin(), files->end());
  }
  return {};
}

}  // namespace gb::node_images
