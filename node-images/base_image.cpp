#include "node-images/base_image.hpp"

#include "common/files.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string oci_media_type(const std::string& mt) {
  if (mt == "application/vnd.docker.image.rootfs.diff.tar.gzip") return std::string(k_oci_layer_gzip);
  if (mt == "application/vnd.docker.image.rootfs.diff.tar") return "application/vnd.oci.image.layer.v1.tar";
  if (mt == "application/vnd.docker.container.image.v1+json") return std::string(k_oci_config);
  return mt;
}

}  // namespace

Result<BaseImage> load_base(const BaseSource& src, const std::string& manifest_digest, const std::string& media_type,
                            const std::string& arch, const std::string& ref) {
  auto bytes = src.read(manifest_digest);
  if (!bytes) return bytes.error();
  json m = json::parse(*bytes, nullptr, false);
  if (m.is_discarded()) return input_error("base image " + ref + ": manifest " + manifest_digest + " is not JSON");
  std::string mt = m.value("mediaType", media_type);
  if (mirror::oci::is_index(mt) || m.contains("manifests")) {
    for (const auto& child : m["manifests"]) {
      const auto& p = child.value("platform", json::object());
      if (p.value("os", "") == "linux" && p.value("architecture", "") == arch)
        return load_base(src, child.value("digest", ""), child.value("mediaType", ""), arch, ref);
    }
    return input_error("base image " + ref + " has no linux/" + arch + " manifest");
  }
  BaseImage b;
  b.manifest = m;
  auto cfg = src.read(m["config"].value("digest", ""));
  if (!cfg) return cfg.error();
  b.config = json::parse(*cfg, nullptr, false);
  if (b.config.is_discarded()) return input_error("base image " + ref + ": config is not JSON");
  for (auto l : m["layers"]) {
    l["mediaType"] = oci_media_type(l.value("mediaType", ""));
    b.layers.push_back(l);
  }
  return b;
}

Result<std::pair<BaseSource, std::pair<std::string, std::string>>> open_base(mirror::Store& store, const std::string& ref) {
  BaseSource src;
  if (starts_with(ref, "oci:")) {
    std::string rest = ref.substr(4);
    auto colon = rest.rfind(':');
    std::string tag = colon == std::string::npos ? "latest" : rest.substr(colon + 1);
    fs::path dir = colon == std::string::npos ? rest : rest.substr(0, colon);
    auto index = read_file(dir / "index.json");
    if (!index) return input_error("--base " + ref + ": " + dir.string() + " is not an OCI layout (no index.json)");
    json idx = json::parse(*index, nullptr, false);
    if (idx.is_discarded() || !idx.contains("manifests")) return input_error("--base " + ref + ": bad index.json");
    for (const auto& e : idx["manifests"]) {
      auto name = e.value("annotations", json::object()).value(std::string(mirror::k_ref_name_annotation), "");
      if (name == tag) {
        src.in_store = false;
        src.path = [dir](const std::string& d) { return dir / "blobs/sha256" / d.substr(7); };
        src.read = [dir, ref](const std::string& d) -> Result<std::string> {
          if (!signing::is_sha256_digest(d)) return input_error("--base " + ref + ": bad digest '" + d + "'");
          auto r = read_file(dir / "blobs/sha256" / d.substr(7));
          if (!r) return input_error("--base " + ref + ": blob " + d + " is missing");
          return r;
        };
        return std::make_pair(src, std::make_pair(e.value("digest", ""), e.value("mediaType", "")));
      }
    }
    return input_error("--base " + ref + ": no image tagged '" + tag + "' in " + dir.string());
  }
  auto img = store.find_image(ref);
  if (!img)
    return input_error("base image " + ref + " is not in the store " + store.root().string() +
                       ": mirror it first (it is the conventional driver image of the lock) or pass --base");
  src.path = [&store](const std::string& d) { return store.blob_path(d); };
  src.read = [&store](const std::string& d) { return store.read_blob(d); };
  return std::make_pair(src, std::make_pair(img->digest, img->media_type));
}

void set_env(json& cfg, const std::string& key, const std::string& value) {
  auto& env = cfg["config"]["Env"];
  if (!env.is_array()) env = json::array();
  for (auto& e : env)
    if (starts_with(e.get<std::string>(), key + "=")) {
      e = key + "=" + value;
      return;
    }
  env.push_back(key + "=" + value);
}

std::string image_manifest(const BaseImage& base, const std::string& config_bytes, const LayerBlob& layer,
                           const std::string& base_ref) {
  json man = {{"schemaVersion", 2}, {"mediaType", std::string(mirror::oci::k_oci_manifest)}};
  man["config"] = {{"mediaType", std::string(k_oci_config)}, {"digest", signing::sha256_digest(config_bytes)}, {"size", config_bytes.size()}};
  json layers = json::array();
  for (const auto& l : base.layers) layers.push_back({{"mediaType", l["mediaType"]}, {"digest", l["digest"]}, {"size", l["size"]}});
  layers.push_back({{"mediaType", std::string(k_oci_layer_gzip)}, {"digest", "sha256:" + layer.sha256}, {"size", layer.size}});
  man["layers"] = layers;
  man["annotations"] = {{"org.opencontainers.image.base.name", base_ref}};
  return man.dump();
}

}  // namespace gb::node_images
