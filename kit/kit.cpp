#include "kit/kit.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "kit/kit_detail.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "recipes/reference.hpp"
#include "recipes/resolver.hpp"
#include "recipes/chart_source.hpp"

namespace gb::kit {

using json = nlohmann::json;

// --- site registry and naming -------------------------------------------

Result<SiteRegistry> SiteRegistry::parse(std::string_view text) {
  const std::string given = redact_url(text);  // errors echo it: never a password
  SiteRegistry out;
  std::string_view rest = text;
  if (starts_with(rest, "http://")) {
    out.plain_http = true;
    rest.remove_prefix(7);
  } else if (starts_with(rest, "https://")) {
    rest.remove_prefix(8);
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  size_t slash = rest.find('/');
  out.host = to_lower(rest.substr(0, slash));
  if (slash != std::string_view::npos) out.prefix = std::string(rest.substr(slash + 1));
  // HOST is [a-z0-9]([a-z0-9.-]*[a-z0-9])? with an optional :PORT of 1 to 5 digits.
  const size_t colon = out.host.find(':');
  const std::string_view port = colon == std::string::npos ? std::string_view("0") : std::string_view(out.host).substr(colon + 1);
  if (!is_lower_name(std::string_view(out.host).substr(0, colon)) || port.size() > 5 || !is_digits(port))
    return input_error("--registry " + quote(given) + ": expected HOST[:PORT][/PREFIX], e.g. registry.site:5000/gpu");
  if (!out.prefix.empty()) {
    for (const auto& part : split(out.prefix, '/')) {
      if (!recipes::is_valid_path_component(part))
        return input_error("--registry " + quote(given) + ": prefix component " + quote(part) +
                           " is not a valid repository path component (lower case letters, digits, . _ -)");
    }
  }
  return out;
}

std::string SiteRegistry::str() const { return prefix.empty() ? host : host + "/" + prefix; }
std::string SiteRegistry::url() const { return (plain_http ? "http://" : "https://") + host; }

Result<Layout> parse_layout(std::string_view text) {
  if (text.empty() || text == "strip-host") return Layout::StripHost;
  if (text == "keep-host") return Layout::KeepHost;
  return input_error("--layout " + std::string(text) + ": expected strip-host or keep-host");
}

std::string to_string(Layout layout) { return layout == Layout::KeepHost ? "keep-host" : "strip-host"; }

recipes::Reference site_reference(const recipes::Reference& source, const SiteRegistry& site, Layout layout) {
  recipes::Reference out = source;
  out.registry = site.host;
  std::string p = detail::site_path_prefix(source.registry, site, layout);
  out.repository = p.empty() ? source.repository : p + "/" + source.repository;
  return out;
}

Result<std::vector<Placement>> place_images(const recipes::Lock& lock, const SiteRegistry& site, Layout layout) {
  std::vector<Placement> out;
  std::map<std::string, std::string> owner;  // destination name -> source name
  std::vector<std::string> problems;
  for (const auto& image : lock.images) {
    auto src = recipes::Reference::parse(image.source);
    if (!src) {
      problems.push_back("lock image " + image.source + ": " + src.error().message);
      continue;
    }
    Placement p;
    p.image = &image;
    p.source = *src;
    p.destination = site_reference(*src, site, layout);
    if (!image.digest.empty()) p.destination.digest = image.at_site();  // a filtered index, where only some platforms travel
    auto [it, fresh] = owner.emplace(p.destination.name(), src->name());
    if (!fresh && it->second != src->name()) {
      problems.push_back("images " + it->second + " and " + src->name() + " would both land on " + p.destination.name() +
                         (layout == Layout::StripHost ? " (use --layout keep-host, or drop one of them)" : ""));
      continue;
    }
    out.push_back(std::move(p));
  }
  if (!problems.empty()) return input_error(join(problems, "\n"));
  return out;
}

// --- recipe settings ------------------------------------------------------

Result<KitRecipe> kit_recipe(const recipes::Lock& lock) {
  KitRecipe r;
  if (lock.recipe_spec.empty()) return r;
  json spec = json::parse(lock.recipe_spec, nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) return input_error("lock recipe.spec: not a JSON object");
  try {
    if (spec.contains("toolkit") && spec["toolkit"].contains("mode")) r.toolkit_mode = spec["toolkit"]["mode"].get<std::string>();
    if (spec.contains("components")) {
      for (const auto& item : spec["components"].items()) {
        KitRecipe::Component& c = r.components[item.key()];
        const json& value = item.value();  // a plain reference: clang 14 cannot capture a structured binding
        auto flag = [&](const char* name, bool& has, bool& on) {
          has = value.contains(name) && value[name].is_boolean();
          if (has) on = value[name].get<bool>();
        };
        flag("enabled", c.has_enabled, c.enabled);
        flag("serviceMonitor", c.has_service_monitor, c.service_monitor);
      }
    }
    if (spec.contains("mig")) {
      r.mig_strategy = spec["mig"].value("strategy", "");
      r.mig_config = spec["mig"].value("config", "");
    }
    if (spec.contains("sharing") && spec["sharing"].contains("timeSlicing")) {
      const auto& ts = spec["sharing"]["timeSlicing"];
      r.time_slicing_replicas = ts.value("replicas", 0);
      r.time_slicing_rename = ts.value("renameByDefault", false);
    }
    if (spec.contains("extraImages")) r.extra_images = spec["extraImages"].get<std::vector<std::string>>();
    r.pull_secret = spec.value("pullSecret", "");
    if (spec.contains("acceptance") && spec["acceptance"].contains("nccl")) {
      const auto& n = spec["acceptance"]["nccl"];
      KitRecipe::Nccl a;
      a.nodes = n.value("nodes", a.nodes);
      a.gpus_per_node = n.value("gpusPerNode", a.gpus_per_node);
      a.min_bytes = n.value("minBytes", a.min_bytes);
      a.max_bytes = n.value("maxBytes", a.max_bytes);
      a.min_bus_bw = n.value("minBusBw", a.min_bus_bw);
      a.network = n.value("network", a.network);
      if (n.contains("mpiOperator")) a.mpi_operator_install = n["mpiOperator"].value("install", false);
      r.nccl = a;
    }
    // Labels land in the kit's YAML and install.sh: checked as the recipe checks them.
    if (spec.contains("monitoring")) {
      const auto& m = spec["monitoring"];
      for (auto [key, into] : {std::pair{"prometheusLabels", &r.monitoring.prometheus}, std::pair{"dashboardLabels", &r.monitoring.dashboard}}) {
        if (!m.contains(key)) continue;
        const auto& labels = m[key];
        if (!labels.is_object() || labels.size() > recipes::k_max_labels)
          return input_error(std::string("lock recipe.spec.monitoring.") + key + ": not a mapping of at most " + std::to_string(recipes::k_max_labels) + " labels");
        into->clear();
        for (const auto& [k, v] : labels.items()) {
          std::string value = v.get<std::string>();
          if (auto why = recipes::label_problem(k, value); !why.empty()) return input_error(std::string("lock recipe.spec.monitoring.") + key + ": " + why);
          (*into)[k] = value;
        }
      }
    }
  } catch (const json::exception& e) {
    return input_error(std::string("lock recipe.spec: ") + e.what());
  }
  if (r.time_slicing_replicas < 0) return input_error("lock recipe.spec.sharing.timeSlicing.replicas must be > 0");
  return r;
}

std::string kit_chart_file(const recipes::Lock& lock) {
  return recipes::chart_file_name(lock.chart.name.empty() ? "gpu-operator" : lock.chart.name, lock.chart.version);
}

const KitFile* Kit::find(std::string_view path) const {
  for (const auto& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

namespace detail {

std::string site_path_prefix(const std::string& source_host, const SiteRegistry& site, Layout layout) {
  std::string p = site.prefix;
  if (layout == Layout::KeepHost) {
    std::string kept = to_lower(source_host);
    std::replace(kept.begin(), kept.end(), ':', '_');
    p += (p.empty() ? "" : "/") + kept;
  }
  return p;
}

std::string yaml_header(const recipes::Lock& lock, const KitOptions& options, std::string_view what) {
  std::string s = "# " + std::string(what) + "\n";
  s += "# Generated by gpubundle " GPUBUNDLE_VERSION " from the lock of recipe " + lock.recipe_name + " (GPU Operator " +
       lock.operator_version + ", chart " + lock.chart.name + " " + lock.chart.version + ") for registry " +
       options.registry.str() + ". Regenerate rather than edit.\n";
  return s;
}

}  // namespace detail

namespace {

// --- time-slicing.yaml -----------------------------------------------------

// The recipe's mig.strategy, else the chart default, else "single".
std::string effective_mig_strategy(const recipes::Chart& chart, const KitRecipe& recipe) {
  if (!recipe.mig_strategy.empty()) return recipe.mig_strategy;
  const YAML::Node& values = chart.values;
  if (values.IsMap() && values["mig"] && values["mig"]["strategy"] && values["mig"]["strategy"].IsScalar())
    return values["mig"]["strategy"].as<std::string>();
  return "single";
}


std::string time_slicing_yaml(const recipes::Lock& lock, const recipes::Chart& chart, const KitRecipe& recipe, const KitOptions& options) {
  YAML::Emitter cfg;
  cfg << YAML::BeginMap;
  cfg << YAML::Key << "version" << YAML::Value << "v1";
  cfg << YAML::Key << "flags" << YAML::Value << YAML::BeginMap;
  cfg << YAML::Key << "migStrategy" << YAML::Value << effective_mig_strategy(chart, recipe) << YAML::EndMap;
  cfg << YAML::Key << "sharing" << YAML::Value << YAML::BeginMap;
  cfg << YAML::Key << "timeSlicing" << YAML::Value << YAML::BeginMap;
  cfg << YAML::Key << "renameByDefault" << YAML::Value << recipe.time_slicing_rename;
  cfg << YAML::Key << "resources" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  cfg << YAML::Key << "name" << YAML::Value << "nvidia.com/gpu";
  cfg << YAML::Key << "replicas" << YAML::Value << recipe.time_slicing_replicas;
  cfg << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap << YAML::EndMap;

  return detail::yaml_header(lock, options,
                             "Device plugin time-slicing config; install.sh applies it to namespace " + options.namespace_name +
                                 " before the chart (values.yaml devicePlugin.config points at it).") +
         detail::managed_config_map(k_time_slicing_configmap, {}, k_time_slicing_key, std::string(cfg.c_str()) + "\n");
}

// --- manifest.json ---------------------------------------------------------

std::string manifest_json(const recipes::Lock& lock, const std::vector<Placement>& placements, const KitOptions& options,
                          const std::vector<std::string>& files) {
  json j;
  j["schemaVersion"] = 1;
  j["generator"] = "gpubundle " GPUBUNDLE_VERSION;
  j["bundleId"] = options.bundle_id;
  j["registry"] = {{"host", options.registry.host},
                   {"prefix", options.registry.prefix},
                   {"layout", to_string(options.layout)},
                   {"plainHttp", options.registry.plain_http}};
  j["chart"] = {{"name", lock.chart.name},
                {"version", lock.chart.version},
                {"appVersion", lock.chart.app_version},
                {"sha256", lock.chart.sha256},
                {"file", kit_chart_file(lock)}};
  j["operator"] = {{"version", lock.operator_version}};
  j["recipe"] = {{"name", lock.recipe_name}, {"sha256", lock.recipe_sha256}};
  j["target"] = {{"gpus", lock.gpus},
                 {"os", lock.os},
                 {"osTag", lock.os_tag},
                 {"kernels", lock.kernels},
                 {"platforms", lock.platforms}};
  j["driver"] = {{"mode", lock.driver.mode},
                 {"version", lock.driver.version},
                 {"branch", lock.driver.branch},
                 {"kernelModuleType", lock.driver.kernel_module_type},
                 {"usePrecompiled", lock.driver.use_precompiled}};
  json images = json::array();
  for (const auto& p : placements) {
    json i = {{"source", p.image->source},
              {"destination", detail::tag_reference(p.destination)},
              {"digest", p.image->at_site()},
              {"upstreamDigest", p.image->digest},
              {"platforms", p.image->platforms},
              {"components", p.image->components},
              {"origin", recipes::origin_word(*p.image)}};
    if (auto it = options.image_sizes.find(p.image->source); it != options.image_sizes.end()) i["size"] = it->second;
    images.push_back(std::move(i));
  }
  j["images"] = std::move(images);
  j["files"] = files;
  return j.dump(2) + "\n";
}

}  // namespace

// --- the kit ---------------------------------------------------------------

Result<Kit> make_kit(const recipes::Lock& lock, const recipes::Chart& chart, const KitOptions& options) {
  auto placements = place_images(lock, options.registry, options.layout);
  if (!placements) return placements.error();
  auto recipe = kit_recipe(lock);
  if (!recipe) return recipe.error();
  // These land inside the scripts as plain words.
  constexpr std::string_view safe_word = "._+-";  // after a letter or digit
  if (!is_word(kit_chart_file(lock), safe_word))
    return input_error("lock chart " + quote(lock.chart.name) + " " + quote(lock.chart.version) +
                       ": name or version holds characters a file name cannot");
  if (!is_word(options.namespace_name, safe_word)) return input_error("namespace " + quote(options.namespace_name) + " is not a valid name");
  auto values = make_values_yaml(lock, chart, options);
  if (!values) return values.error();

  Kit kit;
  kit.files.push_back({"values.yaml", *values, 0644});
  kit.files.push_back({"install.sh", detail::install_sh(lock, *recipe, options), 0755});
  for (auto& f : detail::verify_files(lock, *placements, *recipe, options)) kit.files.push_back(std::move(f));
  kit.files.push_back({"upgrade.sh", detail::upgrade_sh(lock, *recipe, options), 0755});
  if (!recipe->mig_config.empty()) kit.files.push_back({"mig.sh", detail::mig_sh(lock, *recipe, options), 0755});
  if (recipe->time_slicing_replicas > 0)
    kit.files.push_back({"time-slicing.yaml", time_slicing_yaml(lock, chart, *recipe, options), 0644});
  for (auto& f : detail::monitoring_files(lock, *recipe, options)) kit.files.push_back(std::move(f));
  if (lock.network) {
    if (!options.network_chart)
      return input_error("the lock has a network section, but the network-operator chart " + lock.network->chart.name + " " +
                         lock.network->chart.version + " is not at hand: run `gpubundle mirror` on its recipe");
    auto net_values = detail::network_values_yaml(lock, *options.network_chart, *placements, *recipe, options);
    if (!net_values) return net_values.error();
    kit.files.push_back({"network-operator-values.yaml", *net_values, 0644});
    auto policy = detail::nic_cluster_policy_yaml(lock, *placements, *recipe, options);
    if (!policy) return policy.error();
    kit.files.push_back({"nic-cluster-policy.yaml", *policy, 0644});
    // network.sh names the chart's file next to it (cmd_overrides writes it there).
    if (!is_word(detail::network_chart_file(lock), safe_word))
      return input_error("lock network chart " + quote(lock.network->chart.name) + " " + quote(lock.network->chart.version) +
                         ": name or version holds characters a file name cannot");
    kit.files.push_back({"network.sh", detail::network_sh(lock, *recipe, options), 0755});
    for (auto& f : detail::network_repo_files(lock, options)) kit.files.push_back(std::move(f));
  }
  if (recipe->nccl) {
    auto acceptance = detail::acceptance_files(lock, *placements, *recipe, options);
    if (!acceptance) return acceptance.error();
    for (auto& f : *acceptance) kit.files.push_back(std::move(f));
  }
  if (lock.package_repo) {
    if (!options.package_repo_url.empty() && !starts_with(options.package_repo_url, "http://") &&
        !starts_with(options.package_repo_url, "https://"))
      return input_error("package repository URL " + quote(options.package_repo_url) + " is not http:// or https://");
    if (!options.package_repo_url.empty() && options.package_repo_url.find_first_of(" \t\n\"'") != std::string::npos)
      return input_error("package repository URL " + quote(options.package_repo_url) + " holds blanks or quotes");
    bool image = std::any_of(placements->begin(), placements->end(), [](const Placement& p) { return p.image->built == recipes::BuiltKind::PackageRepo; });
    if (!image && options.package_repo_url.empty())
      return input_error("the lock has packageRepo but no package repository image (components [packageRepo]) to serve it: "
                         "give --package-repo-url, or build the lock again from its recipe");
    kit.files.push_back({"package-repo.yaml", detail::package_repo_yaml(lock, *placements, *recipe, options), 0644});
  }

  for (auto& f : detail::runtime_files(*placements, options)) kit.files.push_back(std::move(f));
  if (options.serve) {
    auto files = detail::serve_files(lock, options);
    if (!files) return files.error();
    for (auto& f : files.value()) kit.files.push_back(std::move(f));
  }

  std::vector<std::string> names;
  for (const auto& f : kit.files) names.push_back(f.path);
  names.push_back("manifest.json");
  std::sort(names.begin(), names.end());
  kit.files.push_back({"manifest.json", manifest_json(lock, *placements, options, names), 0644});
  std::sort(kit.files.begin(), kit.files.end(), [](const KitFile& a, const KitFile& b) { return a.path < b.path; });
  return kit;
}

Result<void> write_kit(const Kit& kit, const std::filesystem::path& dir) {
  for (const auto& f : kit.files) {
    if (f.path.empty() || f.path.front() == '/' || f.path.find("..") != std::string::npos)
      return op_error("kit file name " + f.path + " is not a relative path");
    fs::path target = dir / f.path;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return op_error("cannot create " + target.parent_path().string() + ": " + ec.message());
    if (auto r = write_atomic(target, f.content, f.mode); !r) return r;
  }
  return {};
}

}  // namespace gb::kit
