#include "mirror/oci.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "common/strings.hpp"
#include "signing/digest.hpp"

namespace gb::mirror::oci {

using nlohmann::json;

bool is_index(std::string_view media_type) { return media_type == k_oci_index || media_type == k_docker_list; }
bool is_manifest(std::string_view media_type) {
  return media_type == k_oci_manifest || media_type == k_docker_manifest;
}

std::string accept_header() {
  return std::string(k_oci_index) + ", " + std::string(k_oci_manifest) + ", " + std::string(k_docker_list) + ", " +
         std::string(k_docker_manifest);
}

std::string Platform::str() const {
  std::string s = os + "/" + architecture;
  if (!variant.empty()) s += "/" + variant;
  return s;
}

bool Platform::matches(std::string_view wanted) const {
  auto parts = split(wanted, '/');
  if (parts.size() < 2 || parts.size() > 3) return false;
  if (parts[0] != os || parts[1] != architecture) return false;
  if (parts.size() == 3) {
    // arm64 images usually omit the implied "v8".
    if (variant.empty() && architecture == "arm64" && parts[2] == "v8") return true;
    return parts[2] == variant;
  }
  return true;
}

bool is_attestation(const Descriptor& d) { return d.platform.os == "unknown" || d.platform.architecture == "unknown"; }

namespace {

// Media type parameters ("; charset=utf-8") are not part of the type.
std::string bare_type(std::string_view t) {
  auto semi = t.find(';');
  return std::string(trim(t.substr(0, semi)));
}

Result<Descriptor> descriptor(const json& j, const std::string& where) {
  if (!j.is_object()) return input_error(where + " is not an object");
  Descriptor d;
  auto mt = j.find("mediaType");
  if (mt != j.end()) {
    if (!mt->is_string()) return input_error(where + ".mediaType is not a string");
    d.media_type = mt->get<std::string>();
  }
  auto dg = j.find("digest");
  if (dg == j.end() || !dg->is_string()) return input_error(where + ".digest is missing");
  d.digest = dg->get<std::string>();
  auto colon = d.digest.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == d.digest.size())
    return input_error(where + ".digest '" + d.digest + "' is not a digest");
  if (starts_with(d.digest, "sha256:") && !signing::is_sha256_digest(d.digest))
    return input_error(where + ".digest '" + d.digest + "' is not a sha256 digest");
  auto sz = j.find("size");
  if (sz == j.end() || !sz->is_number_integer() || sz->get<std::int64_t>() < 0)
    return input_error(where + ".size is missing or negative");
  d.size = sz->get<std::uint64_t>();
  auto pl = j.find("platform");
  if (pl != j.end()) {
    if (!pl->is_object()) return input_error(where + ".platform is not an object");
    d.platform.os = pl->value("os", "");
    d.platform.architecture = pl->value("architecture", "");
    d.platform.variant = pl->value("variant", "");
  }
  auto an = j.find("annotations");
  if (an != j.end() && an->is_object()) {
    for (auto& [k, v] : an->items())
      if (v.is_string()) d.annotations[k] = v.get<std::string>();
  }
  return d;
}

}  // namespace

Result<Manifest> parse_manifest(std::string bytes, std::string_view media_type) {
  Manifest m;
  m.digest = signing::sha256_digest(bytes);
  if (bytes.size() > k_max_manifest_bytes)
    return input_error("manifest " + m.digest + " is " + std::to_string(bytes.size()) + " bytes, more than the " +
                       std::to_string(k_max_manifest_bytes) + " a manifest may have");
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    return input_error("manifest " + m.digest + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) return input_error("manifest " + m.digest + " is not a JSON object");
  std::string served = bare_type(media_type);
  std::string own;
  if (auto mt = j.find("mediaType"); mt != j.end()) {
    if (!mt->is_string()) return input_error("manifest " + m.digest + ": mediaType is not a string");
    own = mt->get<std::string>();
  }
  // The spec says to reject a body whose mediaType contradicts Content-Type.
  // Registries answering with a generic type (application/json, octet-stream) are tolerated.
  if (!own.empty() && (is_index(served) || is_manifest(served)) && own != served)
    return input_error("manifest " + m.digest + ": served as " + served + " but its mediaType is " + own);
  m.media_type = !own.empty() ? own : served;
  if (m.media_type.empty() || (!is_index(m.media_type) && !is_manifest(m.media_type))) {
    // An OCI manifest may omit mediaType; infer it from the shape.
    if (own.empty() && j.contains("manifests"))
      m.media_type = std::string(k_oci_index);
    else if (own.empty() && j.contains("config") && j.contains("layers"))
      m.media_type = std::string(k_oci_manifest);
    else if (j.value("schemaVersion", 0) == 1)
      return input_error("manifest " + m.digest + " is Docker schema 1, which is not supported");
    else
      return input_error("manifest " + m.digest + " has unsupported media type '" +
                         (m.media_type.empty() ? std::string("(none)") : m.media_type) + "'");
  }
  if (j.value("schemaVersion", 0) != 2)
    return input_error("manifest " + m.digest + ": schemaVersion must be 2");
  if (is_index(m.media_type)) {
    auto ms = j.find("manifests");
    if (ms == j.end() || !ms->is_array()) return input_error("index " + m.digest + ": manifests is missing");
    for (std::size_t i = 0; i < ms->size(); ++i) {
      auto d = descriptor((*ms)[i], "manifests[" + std::to_string(i) + "]");
      if (!d) return input_error("index " + m.digest + ": " + d.error().message);
      m.manifests.push_back(std::move(d.value()));
    }
  } else {
    auto cfg = j.find("config");
    if (cfg == j.end()) return input_error("manifest " + m.digest + ": config is missing");
    auto c = descriptor(*cfg, "config");
    if (!c) return input_error("manifest " + m.digest + ": " + c.error().message);
    m.config = std::move(c.value());
    auto ls = j.find("layers");
    if (ls == j.end() || !ls->is_array()) return input_error("manifest " + m.digest + ": layers is missing");
    for (std::size_t i = 0; i < ls->size(); ++i) {
      auto d = descriptor((*ls)[i], "layers[" + std::to_string(i) + "]");
      if (!d) return input_error("manifest " + m.digest + ": " + d.error().message);
      m.layers.push_back(std::move(d.value()));
    }
  }
  m.bytes = std::move(bytes);
  return m;
}

std::vector<const Descriptor*> carried_children(const Manifest& index, const std::vector<std::string>& platforms,
                                                std::vector<std::string>* missing) {
  bool all = std::find(platforms.begin(), platforms.end(), k_all_platforms) != platforms.end();
  std::set<std::string> picked;
  for (const auto& want : platforms) {
    if (want == k_all_platforms) continue;
    bool hit = false;
    for (const auto& c : index.manifests)
      if (!is_attestation(c) && c.platform.matches(want)) {
        picked.insert(c.digest);
        hit = true;
      }
    if (!hit && missing && !all) missing->push_back(want);
  }
  std::vector<const Descriptor*> out;
  for (const auto& c : index.manifests) {
    bool take = all || (!is_attestation(c) && picked.count(c.digest));
    if (!take && is_attestation(c)) {
      auto a = c.annotations.find(k_reference_digest_annotation);
      take = a != c.annotations.end() && picked.count(a->second);
    }
    if (take) out.push_back(&c);
  }
  return out;
}

Result<std::optional<Manifest>> filter_index(const Manifest& index, const std::vector<std::string>& carried) {
  if (!index.index()) return input_error("manifest " + index.digest + " is not an index");
  std::set<std::string> keep(carried.begin(), carried.end());
  bool every = std::all_of(index.manifests.begin(), index.manifests.end(), [&](const Descriptor& d) { return keep.count(d.digest); });
  if (every) return std::optional<Manifest>();
  json j;
  try {
    j = json::parse(index.bytes);
  } catch (const json::exception& e) {
    return input_error("index " + index.digest + " is not valid JSON: " + e.what());
  }
  json kept = json::array();
  for (const auto& entry : j.at("manifests")) {
    auto d = entry.find("digest");
    if (d != entry.end() && d->is_string() && keep.count(d->get<std::string>())) kept.push_back(entry);
  }
  if (kept.empty()) return input_error("index " + index.digest + ": none of its manifests is carried");
  j["manifests"] = std::move(kept);
  auto m = parse_manifest(j.dump(), index.media_type);
  if (!m) return m.error();
  return std::optional<Manifest>(std::move(m.value()));
}

Result<std::optional<Manifest>> site_index(const Manifest& index, const std::vector<std::string>& platforms) {
  std::vector<std::string> carried;
  for (const auto* d : carried_children(index, platforms)) carried.push_back(d->digest);
  return filter_index(index, carried);
}

}  // namespace gb::mirror::oci
