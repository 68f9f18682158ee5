#include "node-images/driver_image.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "node-images/base_image.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string precompiled_tag(const std::string& branch, const std::string& kernel, const std::string& os_tag) {
  return branch + "-" + kernel + "-" + os_tag;
}

namespace {

// True when some base layer makes /lib a symlink (merged /usr) and no later one undoes it.
Result<bool> lib_is_symlink(const BaseImage& base, const BaseSource& src) {
  bool link = false;
  for (const auto& l : base.layers) {
    fs::path p = src.path(l.value("digest", ""));
    gb::detail::ArchiveReader a(archive_read_new());
    gb::detail::support_builtin_filters(a.get());
    archive_read_support_format_tar(a.get());
    if (archive_read_open_filename(a.get(), p.c_str(), 1 << 16) != ARCHIVE_OK)
      return op_error("base layer " + l.value("digest", "") + ": " + gb::detail::archive_error(a.get()));
    archive_entry* e;
    while (archive_read_next_header(a.get(), &e) == ARCHIVE_OK) {
      std::string name = archive_entry_pathname(e);
      while (starts_with(name, "./")) name = name.substr(2);
      while (!name.empty() && name.back() == '/') name.pop_back();
      if (name == "lib") link = archive_entry_filetype(e) == AE_IFLNK;
      archive_read_data_skip(a.get());
    }
  }
  return link;
}

}  // namespace

Result<std::vector<BuiltDriverImage>> build_driver_images(const PreparedDriver& driver, mirror::Store& store, const DriverImageOptions& options) {
  const auto& version = driver.installer.manifest.version;
  const std::string branch = driver_branch(version);
  if (options.os_tag.empty()) return input_error("no OS tag for the driver image tags (recipe target.os)");
  std::string base_ref = options.base.empty() ? options.repository + ":" + version + "-" + options.os_tag : options.base;
  auto opened = open_base(store, base_ref);
  if (!opened) return opened.error();
  auto& [src, top] = *opened;
  auto base = load_base(src, top.first, top.second, options.architecture, base_ref);
  if (!base) return base.error();
  auto merged = lib_is_symlink(*base, src);
  if (!merged) return merged.error();
  const std::string modules_root = *merged ? "usr/lib/modules" : "lib/modules";

  struct Pending {
    BuiltDriverImage image;
    LayerBlob layer;
    std::string config;
    std::string manifest;
  };
  std::vector<Pending> pending;
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  const std::int64_t mtime = epoch->value_or(0);
  for (const auto& km : driver.kernels) {
    LayerBuilder layer;
    std::string video = "kernel/drivers/video";
    add_modules(layer, km, modules_root + "/" + km.kernel + "/" + video);
    if (auto r = add_depmod_output(layer, km, video, driver.sandbox / ("depmod-" + km.kernel), modules_root); !r) return r.error();
    auto user = add_userspace(layer, driver.installer, "opt/lib/firmware/nvidia/" + version);
    if (!user) return user.error();
    layer.add_data("usr/local/bin/nvidia-driver", nvidia_driver_script(), 0755);

    fs::path tar = driver.sandbox / ("layer-" + km.kernel + ".tar");
    auto t = layer.write_tar(tar);
    if (!t) return t.error();
    auto gz = gzip_layer(tar, driver.sandbox / ("layer-" + km.kernel + ".tar.gz"));
    if (!gz) return gz.error();

    json cfg = base->config;
    if (!cfg["rootfs"].is_object()) cfg["rootfs"] = {{"type", "layers"}, {"diff_ids", json::array()}};
    cfg["rootfs"]["diff_ids"].push_back("sha256:" + t->sha256);
    cfg["created"] = rfc3339_utc(mtime);
    if (!cfg["config"].is_object()) cfg["config"] = json::object();
    bool has_path = false;
    for (const auto& e : cfg["config"].value("Env", json::array()))
      if (starts_with(e.get<std::string>(), "PATH=")) has_path = true;
    if (!has_path) set_env(cfg, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    set_env(cfg, "DRIVER_VERSION", version);
    set_env(cfg, "DRIVER_BRANCH", branch);
    set_env(cfg, "KERNEL_VERSION", km.kernel);
    set_env(cfg, "NVIDIA_VISIBLE_DEVICES", "void");
    auto& labels = cfg["config"]["Labels"];
    if (!labels.is_object()) labels = json::object();
    labels["io.gpubundle.driver.version"] = version;
    labels["io.gpubundle.driver.kernel"] = km.kernel;
    labels["io.gpubundle.driver.module-type"] = driver.module_type;
    labels["io.gpubundle.driver.signer"] = driver.signer ? driver.signer->fingerprint : "unsigned";
    labels["io.gpubundle.driver.installer-sha256"] = driver.installer.sha256;
    cfg["config"]["Entrypoint"] = json::array({"nvidia-driver"});
    cfg["config"]["Cmd"] = json::array({"init"});
    if (!cfg["history"].is_array()) cfg["history"] = json::array();
    cfg["history"].push_back({{"created", rfc3339_utc(mtime)},
                              {"created_by", "gpubundle driver build: NVIDIA " + version + " " + driver.module_type +
                                                 " modules for " + km.kernel + (driver.signer ? ", signed" : ", unsigned")},
                              {"comment", "modules, depmod, userspace, firmware in /opt/lib/firmware, nvidia-driver"}});
    std::string config_bytes = cfg.dump();

    std::string manifest_bytes = image_manifest(*base, config_bytes, *gz, base_ref);

    BuiltDriverImage img;
    img.kernel = km.kernel;
    img.ref = options.repository + ":" + precompiled_tag(branch, km.kernel, options.os_tag);
    img.digest = signing::sha256_digest(manifest_bytes);
    img.size = manifest_bytes.size();
    img.layer_digest = "sha256:" + gz->sha256;
    img.platform = "linux/" + options.architecture;
    pending.push_back({img, *gz, config_bytes, manifest_bytes});
  }

  // Blobs: base layers (when they come from outside), each kernel's layer and config;
  // then Store::publish() writes the manifests and index.json in one go.
  if (!src.in_store)
    for (const auto& l : base->layers) {
      std::string d = l.value("digest", "");
      if (auto r = store.put_blob_file(d, l.value("size", std::uint64_t(0)), src.path(d)); !r) return r.error();
    }
  std::vector<mirror::Publication> published;
  std::vector<BuiltDriverImage> out;
  for (auto& p : pending) {
    if (auto r = store.put_blob_file(p.image.layer_digest, p.layer.size, p.layer.file); !r) return r.error();
    if (auto r = store.put_blob(signing::sha256_digest(p.config), p.config); !r) return r.error();
    auto manifest = mirror::oci::parse_manifest(p.manifest, mirror::oci::k_oci_manifest);
    if (!manifest) return manifest.error();
    published.push_back({p.image.ref, std::move(*manifest), {}, {p.image.platform}, mirror::k_built_here});
    out.push_back(p.image);
  }
  if (auto r = store.publish(published); !r) return r.error();
  return out;
}

}  // namespace gb::node_images
