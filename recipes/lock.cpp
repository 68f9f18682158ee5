#include "recipes/lock.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/network.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb::recipes {

using nlohmann::json;

LockImage* Lock::find(const std::string& source) {
  for (auto& i : images)
    if (i.source == source) return &i;
  return nullptr;
}

std::vector<std::string> Lock::platforms_of(const LockImage& image) const {
  if (!image.platforms.empty()) return image.platforms;
  if (!platforms.empty()) return platforms;
  return {"linux/amd64"};
}

std::vector<LockImage*> Lock::precompiled_driver_images() {
  std::vector<LockImage*> out;
  if (driver.mode != "precompiled") return out;
  // The resolver's only "driver" entries in this mode: <repo>:<branch>-<kernel>-<osTag>.
  for (auto& i : images)
    if (std::find(i.components.begin(), i.components.end(), "driver") != i.components.end()) out.push_back(&i);
  return out;
}

namespace {
const char* built_component(BuiltKind kind) {
  switch (kind) {
    case BuiltKind::NodeOverlay: return k_node_overlay_component;
    case BuiltKind::PackageRepo: return k_package_repo_component;
    case BuiltKind::ToolImage: return k_tool_image_component;
    case BuiltKind::DriverImage: break;
  }
  return "driver";
}

json chart_json(const LockChart& c) {
  return {{"name", c.name}, {"version", c.version}, {"appVersion", c.app_version}, {"source", c.source}, {"sha256", c.sha256}};
}

bool one_of(const std::string& v, std::initializer_list<const char*> words) {
  for (auto* w : words)
    if (v == w) return true;
  return false;
}

std::string bad(const std::string& field, const std::string& value, const std::string& what) {
  return field + ": " + quote(value) + " " + what;
}

// A chart's fields; the GPU Operator's may be left empty in hand-written locks (`named` false).
std::string check_chart(const LockChart& c, const std::string& at, bool named) {
  if (c.name.size() > k_lock_max_chart_word || ((named || !c.name.empty()) && !is_word(c.name, "._-")))
    return bad(at + ".name", c.name, "is not a chart name");
  if (c.version.size() > k_lock_max_chart_word || ((named || !c.version.empty()) && !is_word(c.version, "._+-")))
    return bad(at + ".version", c.version, "is not a chart version");
  if (!c.app_version.empty() && !is_word(c.app_version, "._+-")) return bad(at + ".appVersion", c.app_version, "is not a version");
  if (!c.sha256.empty() && !signing::is_sha256_hex(c.sha256)) return bad(at + ".sha256", c.sha256, "is not 64 hex digits");
  return "";
}

// Everything parse_lock() keeps that lands in a file, a script or a URL later.
// Returns "" or "FIELD: what is wrong".
std::string check_lock(const Lock& l) {
  // Hand-written locks that only list images may leave the recipe-derived
  // fields empty: nothing is composed from an empty one.
  if (!l.recipe_name.empty() && !is_recipe_name(l.recipe_name)) return bad("recipe.name", l.recipe_name, "is not a recipe name");
  if (!l.recipe_sha256.empty() && !signing::is_sha256_hex(l.recipe_sha256)) return bad("recipe.sha256", l.recipe_sha256, "is not 64 hex digits");
  if (!l.operator_version.empty() && !is_release_tag(l.operator_version)) return bad("operator.version", l.operator_version, "is not a release tag like v24.9.2");
  if (auto e = check_chart(l.chart, "chart", false); !e.empty()) return e;
  // Printed by diff, inventory and node check, compared with the catalog.
  for (size_t i = 0; i < l.gpus.size(); ++i)
    if (l.gpus[i].size() > 64 || !is_word(l.gpus[i], "._:+-"))
      return bad("target.gpus[" + std::to_string(i) + "]", l.gpus[i], "is not a GPU name or PCI id");
  // Empty in hand-written locks that only list images: nothing is composed from it then.
  if (!l.os.empty() && !is_os_name(l.os)) return bad("target.os", l.os, "is not an OS name like ubuntu22.04");
  if (!l.os_tag.empty() && !is_os_name(l.os_tag)) return bad("target.osTag", l.os_tag, "is not an OS tag like ubuntu22.04");
  for (size_t i = 0; i < l.kernels.size(); ++i)
    if (!is_kernel_release(l.kernels[i])) return bad("target.kernels[" + std::to_string(i) + "]", l.kernels[i], "is not a kernel release");
  for (size_t i = 0; i < l.platforms.size(); ++i)
    if (!starts_with(l.platforms[i], "linux/") || !is_word(l.platforms[i], "/._-"))
      return bad("target.platforms[" + std::to_string(i) + "]", l.platforms[i], "is not a platform like linux/amd64");
  for (size_t i = 0; i < l.workloads.size(); ++i)
    if (!one_of(l.workloads[i], {"container", "vm-passthrough", "vm-vgpu"}))
      return bad("target.workloads[" + std::to_string(i) + "]", l.workloads[i], "is not container, vm-passthrough or vm-vgpu");
  if (!l.driver.mode.empty() && !one_of(l.driver.mode, {"conventional", "precompiled", "host"}))
    return bad("driver.mode", l.driver.mode, "is not conventional, precompiled or host");
  if (!l.driver.version.empty() && !is_driver_version(l.driver.version))
    return bad("driver.version", l.driver.version, "is not a driver version or sha256 digest");
  if (!l.driver.branch.empty() && !is_driver_branch(l.driver.branch)) return bad("driver.branch", l.driver.branch, "is not a driver branch");
  if (!l.driver.kernel_module_type.empty() && !one_of(l.driver.kernel_module_type, {"auto", "open", "proprietary"}))
    return bad("driver.kernelModuleType", l.driver.kernel_module_type, "is not auto, open or proprietary");
  if (!l.destination_registry.empty()) {
    auto probe = Reference::parse(l.destination_registry + "/" +
                                  (l.destination_prefix.empty() ? "x" : l.destination_prefix + "/x") + ":t");
    if (!probe || probe->registry != l.destination_registry)
      return bad("destination", l.destination_registry + "/" + l.destination_prefix, "is not a registry host[:port] with a path prefix");
  }
  for (size_t n = 0; n < l.images.size(); ++n) {
    const auto& i = l.images[n];
    const std::string at = "images[" + std::to_string(n) + "]";
    if (auto r = Reference::parse(i.source); !r) return at + ".source: " + r.error().message;
    if (!i.destination.empty())
      if (auto r = Reference::parse(i.destination); !r) return at + ".destination: " + r.error().message;
    if (!i.digest.empty() && !signing::is_sha256_digest(i.digest)) return bad(at + ".digest", i.digest, "is not sha256:<64 hex>");
    if (!i.site_digest.empty()) {
      if (!signing::is_sha256_digest(i.site_digest)) return bad(at + ".siteDigest", i.site_digest, "is not sha256:<64 hex>");
      if (i.digest.empty() || i.site_digest == i.digest || i.built)
        return bad(at + ".siteDigest", i.site_digest, "is only for a mirrored index the site gets filtered (digest set, and different)");
    }
    for (size_t c = 0; c < i.components.size(); ++c)
      if (!is_word(i.components[c], "._:-"))
        return bad(at + ".components[" + std::to_string(c) + "]", i.components[c], "is not a component key");
    for (size_t p = 0; p < i.platforms.size(); ++p)
      if (!is_word(i.platforms[p], "/._-")) return bad(at + ".platforms[" + std::to_string(p) + "]", i.platforms[p], "is not a platform");
  }
  if (const auto& p = l.package_repo) {
    if (!one_of(p->format, {"apt", "rpm-md"})) return bad("packageRepo.format", p->format, "is not apt or rpm-md");
    if (p->fingerprint.size() != 40 || !std::all_of(p->fingerprint.begin(), p->fingerprint.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
        }))
      return bad("packageRepo.fingerprint", p->fingerprint, "is not 40 upper-case hex digits");
    // The key lands in a ConfigMap file: armoured text and nothing else.
    const std::string begin = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n", end = "-----END PGP PUBLIC KEY BLOCK-----\n";
    const auto& k = p->public_key;
    if (!starts_with(k, begin) || k.size() < begin.size() + end.size() || k.compare(k.size() - end.size(), end.size(), end) != 0 ||
        !std::all_of(k.begin(), k.end(), [](char c) { return c == '\n' || (c >= ' ' && c <= '~'); }))
      return "packageRepo.publicKey: not one ASCII-armoured OpenPGP public key";
  }
  if (const auto& n = l.network) {
    if (!is_release_tag(n->version)) return bad("network.version", n->version, "is not a release tag like v26.4.1");
    if (auto e = check_chart(n->chart, "network.chart", true); !e.empty()) return e;
    if (n->release_file.empty() || n->release_file.find_first_of("\n\r") != std::string::npos)
      return bad("network.releaseFile", n->release_file, "is not a path or URL");
    if (!signing::is_sha256_hex(n->release_sha256)) return bad("network.releaseSha256", n->release_sha256, "is not 64 hex digits");
    for (size_t i = 0; i < n->operands.size(); ++i)
      if (!Catalog::builtin().network_operand(n->operands[i]))
        return bad("network.operands[" + std::to_string(i) + "]", n->operands[i], "is not a Network Operator operand");
    // The NicClusterPolicy's ofedDriver.version: a tag prefix or a digest.
    if (!n->doca_version.empty() && !signing::is_sha256_digest(n->doca_version) && !is_word(n->doca_version, "._+-"))
      return bad("network.docaDriver.version", n->doca_version, "is not a DOCA driver version");
    // Written into nic-cluster-policy.yaml: held to the recipe's rules.
    const bool ib = std::find(n->operands.begin(), n->operands.end(), "ibKubernetes") != n->operands.end();
    if (ib != !n->ib_ufm_secret.empty())
      return "network.ibKubernetes: " + std::string(ib ? "missing, but network.operands lists ibKubernetes" : "set, but network.operands does not list ibKubernetes");
    if (ib) {
      if (!is_pkey_guid(n->ib_pkey_guid_pool_start)) return bad("network.ibKubernetes.pKeyGUIDPoolRangeStart", n->ib_pkey_guid_pool_start, "is not a GUID");
      if (!is_pkey_guid(n->ib_pkey_guid_pool_end)) return bad("network.ibKubernetes.pKeyGUIDPoolRangeEnd", n->ib_pkey_guid_pool_end, "is not a GUID");
      if (pkey_guid_value(n->ib_pkey_guid_pool_start) > pkey_guid_value(n->ib_pkey_guid_pool_end))
        return bad("network.ibKubernetes.pKeyGUIDPoolRangeEnd", n->ib_pkey_guid_pool_end, "is below pKeyGUIDPoolRangeStart");
      if (!is_recipe_name(n->ib_ufm_secret)) return bad("network.ibKubernetes.ufmSecret", n->ib_ufm_secret, "is not a Kubernetes secret name");
    }
  }
  // The NCCL acceptance against the network section, as the recipe parser holds it.
  if (auto spec = json::parse(l.recipe_spec.empty() ? "{}" : l.recipe_spec, nullptr, false);
      spec.is_object() && spec.contains("acceptance") && spec["acceptance"].is_object() && spec["acceptance"].contains("nccl")) {
    const json& nccl = spec["acceptance"]["nccl"];
    std::string attach = nccl.is_object() && nccl.contains("network") && nccl["network"].is_string() ? nccl["network"].get<std::string>() : "";
    if (!attach.empty() && !l.network)
      return bad("recipe.spec.acceptance.nccl.network", attach, "names a secondary network, but the lock has no network section");
    if (l.network && rdma_resource(l.network->operands).empty())
      return "recipe.spec.acceptance.nccl: with a network section the NCCL run tests the fabric, but network.operands has no RDMA "
             "device plugin (rdmaSharedDevicePlugin or sriovDevicePlugin)";
  }
  return "";
}

// recipe.spec as the resolver writes it (resolver.cpp recipe_spec()): the
// recipe's settings that reach the kit's values, scripts and YAML, each held
// to the rule the recipe parser applies. Returns "" or "FIELD: what is wrong".
std::string check_recipe_spec(const json& spec) {
  auto at = [](const std::string& field) { return "recipe.spec." + field; };
  auto only = [&](const json& obj, const std::string& field, std::initializer_list<const char*> keys) -> std::string {
    if (!obj.is_object()) return at(field) + ": must be a mapping";
    for (const auto& [k, v] : obj.items()) {
      bool known = false;
      for (auto* key : keys) known = known || k == key;
      if (!known) return at(field.empty() ? k : field + "." + k) + ": unknown field " + quote(k);
    }
    return "";
  };
  auto is = [](const json& obj, const char* key, auto pred) { return !obj.contains(key) || pred(obj[key]); };
  auto boolean = [](const json& v) { return v.is_boolean(); };
  auto text = [](const json& v) { return v.is_string(); };
  auto reference = [](const json& v) { return v.is_string() && Reference::parse(v.get<std::string>()).ok(); };
  if (auto e = only(spec, "", {"toolkit", "components", "mig", "sharing", "extraImages", "pullSecret", "acceptance", "monitoring"}); !e.empty())
    return e;
  if (spec.contains("toolkit")) {
    if (auto e = only(spec["toolkit"], "toolkit", {"mode"}); !e.empty()) return e;
    if (!is(spec["toolkit"], "mode", [](const json& v) { return v == "container" || v == "host"; }))
      return at("toolkit.mode") + ": must be container or host";
  }
  if (spec.contains("components")) {
    const json& c = spec["components"];
    if (!c.is_object() || c.size() > k_lock_max_list) return at("components") + ": must be a mapping of at most " + std::to_string(k_lock_max_list) + " components";
    for (const auto& [key, value] : c.items()) {
      if (key.size() > k_lock_max_chart_word || !is_word(key, "._-")) return at("components") + ": " + quote(key) + " is not a component key";
      if (auto e = only(value, "components." + key, {"enabled", "serviceMonitor"}); !e.empty()) return e;
      if (!is(value, "enabled", boolean) || !is(value, "serviceMonitor", boolean)) return at("components." + key) + ": enabled and serviceMonitor are true or false";
    }
  }
  if (spec.contains("mig")) {
    const json& m = spec["mig"];
    if (auto e = only(m, "mig", {"strategy", "config"}); !e.empty()) return e;
    if (!is(m, "strategy", [](const json& v) { return v == "" || v == "single" || v == "mixed"; }))
      return at("mig.strategy") + ": must be single or mixed";
    if (!is(m, "config", text)) return at("mig.config") + ": must be a string";
    // mig.sh writes it as the nvidia.com/mig.config label's value.
    if (std::string c = m.value("config", ""); !c.empty())
      if (auto why = label_problem("nvidia.com/mig.config", c); !why.empty()) return at("mig.config") + ": " + why;
  }
  if (spec.contains("sharing")) {
    if (auto e = only(spec["sharing"], "sharing", {"timeSlicing"}); !e.empty()) return e;
    if (spec["sharing"].contains("timeSlicing")) {
      const json& t = spec["sharing"]["timeSlicing"];
      if (auto e = only(t, "sharing.timeSlicing", {"replicas", "renameByDefault"}); !e.empty()) return e;
      if (!is(t, "replicas", [](const json& v) { return v.is_number_integer() && (v == 0 || (v >= 2 && v <= 128)); }))
        return at("sharing.timeSlicing.replicas") + ": must be 0 (off) or between 2 and 128";
      if (!is(t, "renameByDefault", boolean)) return at("sharing.timeSlicing.renameByDefault") + ": must be true or false";
    }
  }
  if (spec.contains("extraImages")) {
    const json& e = spec["extraImages"];
    if (!e.is_array() || e.size() > k_lock_max_list) return at("extraImages") + ": must be a list of at most " + std::to_string(k_lock_max_list) + " images";
    for (size_t i = 0; i < e.size(); ++i)
      if (!reference(e[i])) return at("extraImages[" + std::to_string(i) + "]") + ": not an image reference";
  }
  if (spec.contains("pullSecret")) {
    const json& p = spec["pullSecret"];
    if (!p.is_string() || (!p.get<std::string>().empty() && !is_recipe_name(p.get<std::string>())))
      return at("pullSecret") + ": " + (p.is_string() ? quote(p.get<std::string>()) : p.dump()) + " is not a Kubernetes secret name";
  }
  if (spec.contains("acceptance")) {
    if (auto e = only(spec["acceptance"], "acceptance", {"nccl"}); !e.empty()) return e;
    if (spec["acceptance"].contains("nccl")) {
      const json& n = spec["acceptance"]["nccl"];
      if (auto e = only(n, "acceptance.nccl", {"image", "nodes", "gpusPerNode", "minBytes", "maxBytes", "minBusBw", "network", "mpiOperator"});
          !e.empty())
        return e;
      if (!n.contains("image") || !reference(n["image"])) return at("acceptance.nccl.image") + ": not an image reference";
      if (!is(n, "nodes", [](const json& v) { return v.is_number_integer() && v >= 1 && v <= 1024; }))
        return at("acceptance.nccl.nodes") + ": must be between 1 and 1024";
      if (!is(n, "gpusPerNode", [](const json& v) { return v.is_number_integer() && v >= 1 && v <= 64; }))
        return at("acceptance.nccl.gpusPerNode") + ": must be between 1 and 64";
      for (const char* key : {"minBytes", "maxBytes"})
        if (!is(n, key, [](const json& v) { return v.is_string() && is_nccl_size(v.get<std::string>()); }))
          return at(std::string("acceptance.nccl.") + key) + ": not a size all_reduce_perf reads, like 8, 64K, 1M or 8G";
      if (!is(n, "minBusBw", [](const json& v) { return v.is_number() && v >= 0 && v.get<double>() <= 1e9; }))
        return at("acceptance.nccl.minBusBw") + ": must be 0 or more GB/s";
      // The MPIJob's Multus annotation holds it.
      if (!is(n, "network", [](const json& v) { return v == "" || (v.is_string() && is_network_attachment(v.get<std::string>())); }))
        return at("acceptance.nccl.network") + ": not a NetworkAttachmentDefinition name ([namespace/]name)";
      if (n.contains("mpiOperator")) {
        const json& m = n["mpiOperator"];
        if (auto e = only(m, "acceptance.nccl.mpiOperator", {"install", "image"}); !e.empty()) return e;
        if (!is(m, "install", boolean)) return at("acceptance.nccl.mpiOperator.install") + ": must be true or false";
        if (!is(m, "image", [&](const json& v) { return v == "" || reference(v); }))
          return at("acceptance.nccl.mpiOperator.image") + ": not an image reference";
      }
    }
  }
  if (spec.contains("monitoring")) {
    const json& m = spec["monitoring"];
    if (auto e = only(m, "monitoring", {"prometheusLabels", "dashboardLabels"}); !e.empty()) return e;
    for (const char* key : {"prometheusLabels", "dashboardLabels"}) {
      if (!m.contains(key)) continue;
      const json& labels = m[key];
      if (!labels.is_object() || labels.size() > k_max_labels)
        return at(std::string("monitoring.") + key) + ": not a mapping of at most " + std::to_string(k_max_labels) + " labels";
      for (const auto& [k, v] : labels.items()) {
        if (!v.is_string()) return at(std::string("monitoring.") + key + "." + k) + ": must be a string";
        if (auto why = label_problem(k, v.get<std::string>()); !why.empty()) return at(std::string("monitoring.") + key) + ": " + why;
      }
    }
  }
  return "";
}

}  // namespace

void record_built(Lock& lock, const BuiltImage& image) {
  LockImage* li = lock.find(image.ref);
  if (!li) {
    LockImage n;
    n.components = {built_component(image.kind)};
    n.source = image.ref;
    n.platforms = {image.platform};
    // Where the site gets it, by the lock's destination rule like every other image.
    if (!lock.destination_registry.empty())
      if (auto ref = Reference::parse(image.ref))
        n.destination = ref->rehomed(lock.destination_registry, lock.destination_prefix).str();
    lock.images.push_back(std::move(n));
    li = &lock.images.back();
  }
  li->digest = image.digest;
  li->site_digest.clear();  // built here whole: the site gets exactly this
  li->built = image.kind;
  std::sort(lock.images.begin(), lock.images.end(), [](const auto& x, const auto& y) { return x.source < y.source; });
}

const char* origin_word(const LockImage& image) { return image.built ? "built" : "upstream"; }

std::string lock_to_json(const Lock& l) {
  json j;
  j["schemaVersion"] = l.schema_version;
  j["generator"] = l.generator;
  json spec = l.recipe_spec.empty() ? json::object() : json::parse(l.recipe_spec);
  j["recipe"] = {{"name", l.recipe_name}, {"file", l.recipe_file}, {"sha256", l.recipe_sha256}, {"spec", spec}};
  j["operator"] = {{"version", l.operator_version}};
  j["chart"] = chart_json(l.chart);
  j["target"] = {{"gpus", l.gpus},       {"os", l.os},           {"osTag", l.os_tag},
                 {"kernels", l.kernels}, {"platforms", l.platforms}, {"workloads", l.workloads}};
  j["driver"] = {{"mode", l.driver.mode}, {"version", l.driver.version}, {"branch", l.driver.branch},
                 {"kernelModuleType", l.driver.kernel_module_type}, {"usePrecompiled", l.driver.use_precompiled}};
  j["destination"] = l.destination_registry.empty()
                         ? json(nullptr)
                         : json{{"registry", l.destination_registry}, {"prefix", l.destination_prefix}};
  if (l.destination_plain_http) j["destination"]["plainHttp"] = true;
  json images = json::array();
  for (const auto& i : l.images) {
    images.push_back({{"components", i.components}, {"source", i.source}, {"platforms", i.platforms},
                      {"destination", i.destination}, {"digest", i.digest}, {"origin", origin_word(i)}});
    if (!i.site_digest.empty()) images.back()["siteDigest"] = i.site_digest;
  }
  j["images"] = images;
  if (l.package_repo)
    j["packageRepo"] = {{"format", l.package_repo->format},
                        {"fingerprint", l.package_repo->fingerprint},
                        {"publicKey", l.package_repo->public_key}};
  if (const auto& n = l.network) {
    j["network"] = {{"version", n->version},
                    {"chart", chart_json(n->chart)},
                    {"releaseFile", n->release_file},
                    {"releaseSha256", n->release_sha256},
                    {"operands", n->operands},
                    {"docaDriver", n->doca_version.empty() ? json(nullptr)
                                                           : json{{"version", n->doca_version}, {"precompiled", n->doca_precompiled}}}};
    if (!n->ib_ufm_secret.empty())
      j["network"]["ibKubernetes"] = {{"pKeyGUIDPoolRangeStart", n->ib_pkey_guid_pool_start},
                                      {"pKeyGUIDPoolRangeEnd", n->ib_pkey_guid_pool_end},
                                      {"ufmSecret", n->ib_ufm_secret}};
  }
  j["warnings"] = l.warnings;
  return j.dump(2) + "\n";
}

Result<Lock> parse_lock(const std::string& text, const std::string& file) {
  if (text.size() > k_lock_max_bytes)
    return input_error(file + ": larger than " + std::to_string(k_lock_max_bytes) + " bytes; not a lock");
  Lock l;
  std::string field;
  try {
    // Nesting is bounded before parsing: dump() and the destructor recurse.
    if (json_nests_deeper_than(text, k_lock_max_depth))
      throw Error(ErrorKind::Input, "nested deeper than " + std::to_string(k_lock_max_depth) + " levels");
    json j = json::parse(text);
    auto need = [&](const json& obj, const char* key) -> const json& {
      field = key;
      if (!obj.is_object() || !obj.contains(key)) throw Error(ErrorKind::Input, std::string("missing field ") + key);
      return obj.at(key);
    };
    auto str = [&](const json& obj, const char* key) {
      std::string v = need(obj, key).get<std::string>();
      if (v.size() > k_lock_max_string) throw Error(ErrorKind::Input, "field " + field + ": longer than " + std::to_string(k_lock_max_string) + " bytes");
      return v;
    };
    auto list = [&](const json& obj, const char* key, size_t max = k_lock_max_list) -> const json& {
      const json& v = need(obj, key);
      if (!v.is_array()) throw Error(ErrorKind::Input, "field " + field + ": must be a list");
      if (v.size() > max) throw Error(ErrorKind::Input, "field " + field + ": more than " + std::to_string(max) + " entries");
      return v;
    };
    auto strs = [&](const json& obj, const char* key) {
      std::vector<std::string> out;
      for (const auto& v : list(obj, key)) {
        out.push_back(v.get<std::string>());
        if (out.back().size() > k_lock_max_string) throw Error(ErrorKind::Input, "field " + field + ": an entry longer than " + std::to_string(k_lock_max_string) + " bytes");
      }
      return out;
    };
    if (!j.is_object()) return input_error(file + ": not a lock (a JSON object with schemaVersion)");
    const auto& schema = need(j, "schemaVersion");
    // Compared as JSON numbers: get<int>() would wrap 2^40 to 0.
    if (!schema.is_number_integer() || schema < 1)
      return input_error(file + ": schemaVersion must be a whole number from 1");
    if (schema > k_lock_schema_version)
      return input_error(file + ": lock schema " + schema.dump() + " is newer than this gpubundle reads (" +
                         std::to_string(k_lock_schema_version) + "); upgrade gpubundle");
    l.schema_version = schema.get<int>();
    l.generator = str(j, "generator");
    const auto& r = need(j, "recipe");
    l.recipe_name = str(r, "name");
    l.recipe_file = str(r, "file");
    l.recipe_sha256 = str(r, "sha256");
    if (!need(r, "spec").is_object()) throw Error(ErrorKind::Input, "field spec: must be an object");
    if (auto problem = check_recipe_spec(r.at("spec")); !problem.empty()) return input_error(file + ": " + problem);
    l.recipe_spec = r.at("spec").dump();
    l.operator_version = str(need(j, "operator"), "version");
    const auto& c = need(j, "chart");
    l.chart = {str(c, "name"), str(c, "version"), str(c, "appVersion"), str(c, "source"), str(c, "sha256")};
    const auto& t = need(j, "target");
    l.gpus = strs(t, "gpus");
    l.os = str(t, "os");
    l.os_tag = str(t, "osTag");
    l.kernels = strs(t, "kernels");
    l.platforms = strs(t, "platforms");
    l.workloads = strs(t, "workloads");
    const auto& d = need(j, "driver");
    l.driver = {str(d, "mode"), str(d, "version"), str(d, "branch"), str(d, "kernelModuleType"),
                need(d, "usePrecompiled").get<bool>()};
    const auto& dest = need(j, "destination");
    if (!dest.is_null()) {
      l.destination_registry = str(dest, "registry");
      l.destination_prefix = str(dest, "prefix");
      if (dest.contains("plainHttp")) l.destination_plain_http = need(dest, "plainHttp").get<bool>();
    }
    const auto& images = list(j, "images", k_lock_max_images);
    for (size_t n = 0; n < images.size(); ++n) {
      const auto& i = images[n];
      const std::string at = "images[" + std::to_string(n) + "]";
      field = at;
      LockImage img;
      img.components = strs(i, "components");
      img.source = str(i, "source");
      img.platforms = strs(i, "platforms");
      img.destination = str(i, "destination");
      img.digest = str(i, "digest");
      if (i.contains("siteDigest")) img.site_digest = str(i, "siteDigest");
      std::string origin = str(i, "origin");
      if (origin == "built") {
        // The kind is the component (see the header): older locks read the same.
        auto only = [&](const char* kind) { return img.components == std::vector<std::string>{kind}; };
        if (only(k_node_overlay_component)) img.built = BuiltKind::NodeOverlay;
        else if (only(k_package_repo_component)) img.built = BuiltKind::PackageRepo;
        else if (only(k_tool_image_component)) img.built = BuiltKind::ToolImage;
        else if (only("driver")) img.built = BuiltKind::DriverImage;
        else
          throw Error(ErrorKind::Input, at + ".origin: \"built\" is for a driver image (components [driver]), "
                                        "a node overlay (components [nodeOverlay]), a package repository (components [packageRepo]) "
                                        "or the tool image (components [toolImage])");
      } else if (origin != "upstream") {
        throw Error(ErrorKind::Input, at + ".origin: " + quote(origin) + " is not upstream or built");
      }
      l.images.push_back(std::move(img));
    }
    if (j.contains("packageRepo")) {
      const auto& p = need(j, "packageRepo");
      l.package_repo = LockPackageRepo{str(p, "format"), str(p, "fingerprint"), str(p, "publicKey")};
    }
    if (j.contains("network")) {
      const auto& n = need(j, "network");
      LockNetwork net;
      net.version = str(n, "version");
      const auto& nc = need(n, "chart");
      net.chart = {str(nc, "name"), str(nc, "version"), str(nc, "appVersion"), str(nc, "source"), str(nc, "sha256")};
      net.release_file = str(n, "releaseFile");
      net.release_sha256 = str(n, "releaseSha256");
      net.operands = strs(n, "operands");
      const auto& doca = need(n, "docaDriver");
      if (!doca.is_null()) {
        net.doca_version = str(doca, "version");
        if (net.doca_version.empty()) throw Error(ErrorKind::Input, "field network.docaDriver.version: empty");
        net.doca_precompiled = need(doca, "precompiled").get<bool>();
      }
      if (n.contains("ibKubernetes")) {
        const auto& ib = need(n, "ibKubernetes");
        net.ib_pkey_guid_pool_start = str(ib, "pKeyGUIDPoolRangeStart");
        net.ib_pkey_guid_pool_end = str(ib, "pKeyGUIDPoolRangeEnd");
        net.ib_ufm_secret = str(ib, "ufmSecret");
      }
      l.network = std::move(net);
    }
    l.warnings = strs(j, "warnings");
  } catch (const json::parse_error& e) {
    return input_error(file + ": not valid JSON: " + e.what());
  } catch (const json::exception& e) {
    return input_error(file + ": field " + field + ": " + e.what());
  } catch (const Error& e) {
    return input_error(file + ": " + e.what());
  }
  if (auto problem = check_lock(l); !problem.empty()) return input_error(file + ": " + problem);
  return l;
}

Result<Lock> load_lock(const std::string& file) {
  auto text = read_file(file, k_lock_max_bytes);
  if (!text) return text.error();
  return parse_lock(text.value(), file);
}

}  // namespace gb::recipes
