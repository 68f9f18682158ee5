#pragma once
// A base image that gpubundle builds on (driver images, the package
// repository image): read from the store or an OCI layout folder, one
// platform picked from an index, Docker media types rewritten as OCI (same
// blobs), and the manifest of the base's layers plus one layer made here.

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "node-images/layer.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::node_images {

inline constexpr std::string_view k_oci_config = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view k_oci_layer_gzip = "application/vnd.oci.image.layer.v1.tar+gzip";

// Where the base image's blobs come from: the store itself or an OCI layout folder.
struct BaseSource {
  std::function<Result<std::string>(const std::string&)> read;
  std::function<std::filesystem::path(const std::string&)> path;
  bool in_store = true;
};

struct BaseImage {
  nlohmann::ordered_json manifest;
  nlohmann::ordered_json config;
  std::vector<nlohmann::ordered_json> layers;  // descriptors, OCI media types
};

// `ref` in the store, or oci:DIR[:TAG]; returns the source and its top
// manifest's (digest, media type).
Result<std::pair<BaseSource, std::pair<std::string, std::string>>> open_base(mirror::Store& store, const std::string& ref);
// The linux/<arch> image below that manifest or index.
Result<BaseImage> load_base(const BaseSource& src, const std::string& manifest_digest, const std::string& media_type,
                            const std::string& arch, const std::string& ref);

// Sets KEY=value in the config's Env, replacing an earlier KEY.
void set_env(nlohmann::ordered_json& cfg, const std::string& key, const std::string& value);

// The OCI manifest of the base's layers plus `layer` (gzip), with the config
// `config_bytes`, annotated with the base's name.
std::string image_manifest(const BaseImage& base, const std::string& config_bytes, const LayerBlob& layer,
                           const std::string& base_ref);

}  // namespace gb::node_images
