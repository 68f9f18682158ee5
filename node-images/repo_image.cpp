#include "node-images/repo_image.hpp"

#include <algorithm>

#include "common/strings.hpp"
#include "common/time.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "node-images/base_image.hpp"
#include "node-images/layer.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

Result<BuiltRepoImage> build_repo_image(mirror::Store& store, const fs::path& repo_root, const RepoImageOptions& o) {
  if (o.os_tag.empty() || o.release_sha256.size() < 12) return input_error("package repository image: no OS tag or content digest");
  auto opened = open_base(store, o.base);
  if (!opened) return opened.error();
  auto& [src, top] = *opened;
  if (!src.in_store) return input_error("package server image " + o.base + ": must be an image in the store");
  auto base = load_base(src, top.first, top.second, o.architecture, o.base);
  if (!base) return base.error();
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  const std::int64_t mtime = epoch->value_or(0);

  LayerBuilder layer;
  layer.add_dir(recipes::k_package_repo_root);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(repo_root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string rel = std::string(recipes::k_package_repo_root) + "/" + fs::relative(it->path(), repo_root).generic_string();
    if (it->is_directory()) layer.add_dir(rel);
    else if (it->is_regular_file()) layer.add_file(rel, it->path(), 0644);
    else return op_error(it->path().string() + ": the package repository holds only files and folders");
  }
  if (ec) return op_error("cannot read " + repo_root.string() + ": " + ec.message());
  fs::create_directories(o.work, ec);
  if (ec) return op_error("cannot create " + o.work.string() + ": " + ec.message());
  auto tar = layer.write_tar(o.work / "package-repo.tar");
  if (!tar) return tar.error();
  auto gz = gzip_layer(tar->file, o.work / "package-repo.tar.gz");
  if (!gz) return gz.error();
  fs::remove(tar->file, ec);

  json cfg = base->config;
  if (!cfg["rootfs"].is_object()) cfg["rootfs"] = {{"type", "layers"}, {"diff_ids", json::array()}};
  cfg["rootfs"]["diff_ids"].push_back("sha256:" + tar->sha256);
  cfg["created"] = rfc3339_utc(mtime);
  if (!cfg["config"].is_object()) cfg["config"] = json::object();
  auto& c = cfg["config"];
  const std::string port = std::to_string(recipes::k_package_repo_port);
  c["Entrypoint"] = json::array({"httpd", "-f", "-v", "-p", port, "-h", std::string("/") + recipes::k_package_repo_root});
  c.erase("Cmd");  // the base's (busybox: sh) would become httpd's arguments
  c["User"] = "65534:65534";
  c["ExposedPorts"] = {{port + "/tcp", json::object()}};
  if (!c["Labels"].is_object()) c["Labels"] = json::object();
  c["Labels"]["io.gpubundle.package-repo.format"] = o.format;
  c["Labels"]["io.gpubundle.package-repo.fingerprint"] = o.fingerprint;
  c["Labels"]["io.gpubundle.package-repo.release-sha256"] = o.release_sha256;
  if (!cfg["history"].is_array()) cfg["history"] = json::array();
  cfg["history"].push_back({{"created", rfc3339_utc(mtime)},
                            {"created_by", "gpubundle build: " + o.format + " repository of kernel packages, signed by " + o.fingerprint},
                            {"comment", std::string("/") + recipes::k_package_repo_root + ", served by httpd on port " + port}});
  std::string config_bytes = cfg.dump();
  std::string manifest_bytes = image_manifest(*base, config_bytes, *gz, o.base);

  BuiltRepoImage img;
  img.ref = std::string(k_package_repo_repository) + ":" + o.os_tag + "-" + o.release_sha256.substr(0, 12);
  img.digest = signing::sha256_digest(manifest_bytes);
  img.size = gz->size;
  img.platform = "linux/" + o.architecture;
  if (auto r = store.put_blob_file("sha256:" + gz->sha256, gz->size, gz->file); !r) return r.error();
  if (auto r = store.put_blob(signing::sha256_digest(config_bytes), config_bytes); !r) return r.error();
  auto manifest = mirror::oci::parse_manifest(manifest_bytes, mirror::oci::k_oci_manifest);
  if (!manifest) return manifest.error();
  if (auto r = store.publish({{img.ref, std::move(*manifest), {}, {img.platform}, mirror::k_built_here}}); !r) return r.error();
  fs::remove(gz->file, ec);
  return img;
}

}  // namespace gb::node_images
