#include "recipes/lock.hpp"

#include <nlohmann/json.hpp>

#include "common/files.hpp"

namespace gb {

using nlohmann::json;

LockImage* Lock::find(const std::string& source) {
  for (auto& i : images)
    if (i.source == source) return &i;
  return nullptr;
}

std::string lock_to_json(const Lock& l) {
  json j;
  j["schemaVersion"] = l.schema_version;
  j["generator"] = l.generator;
  json spec = l.recipe_spec.empty() ? json::object() : json::parse(l.recipe_spec);
  j["recipe"] = {{"name", l.recipe_name}, {"file", l.recipe_file}, {"sha256", l.recipe_sha256}, {"spec", spec}};
  j["operator"] = {{"version", l.operator_version}};
  j["chart"] = {{"name", l.chart.name},
                {"version", l.chart.version},
                {"appVersion", l.chart.app_version},
                {"source", l.chart.source},
                {"sha256", l.chart.sha256}};
  j["target"] = {{"gpus", l.gpus},       {"os", l.os},           {"osTag", l.os_tag},
                 {"kernels", l.kernels}, {"platforms", l.platforms}, {"workloads", l.workloads}};
  j["driver"] = {{"mode", l.driver.mode},
                 {"version", l.driver.version},
                 {"branch", l.driver.branch},
                 {"kernelModuleType", l.driver.kernel_module_type},
                 {"usePrecompiled", l.driver.use_precompiled}};
  j["destination"] = l.destination_registry.empty()
                         ? json(nullptr)
                         : json{{"registry", l.destination_registry}, {"prefix", l.destination_prefix}};
  json images = json::array();
  for (const auto& i : l.images) {
    images.push_back({{"components", i.components},
                      {"source", i.source},
                      {"platforms", i.platforms},
                      {"destination", i.destination},
                      {"digest", i.digest},
                      {"origin", i.origin}});
  }
  j["images"] = images;
  j["warnings"] = l.warnings;
  return j.dump(2) + "\n";
}

Result<Lock> parse_lock(const std::string& text, const std::string& file) {
  Lock l;
  std::string field;
  try {
    json j = json::parse(text);
    auto need = [&](const json& obj, const char* key) -> const json& {
      field = key;
      if (!obj.is_object() || !obj.contains(key)) throw Error(ErrorKind::Input, std::string("missing field ") + key);
      return obj.at(key);
    };
    l.schema_version = need(j, "schemaVersion").get<int>();
    if (l.schema_version > k_lock_schema_version)
      return input_error(file + ": lock schema " + std::to_string(l.schema_version) + " is newer than this gpubundle reads (" +
                         std::to_string(k_lock_schema_version) + "); upgrade gpubundle");
    l.generator = need(j, "generator").get<std::string>();
    const auto& r = need(j, "recipe");
    l.recipe_name = need(r, "name").get<std::string>();
    l.recipe_file = need(r, "file").get<std::string>();
    l.recipe_sha256 = need(r, "sha256").get<std::string>();
    l.recipe_spec = need(r, "spec").dump();
    l.operator_version = need(need(j, "operator"), "version").get<std::string>();
    const auto& c = need(j, "chart");
    l.chart = {need(c, "name").get<std::string>(), need(c, "version").get<std::string>(),
               need(c, "appVersion").get<std::string>(), need(c, "source").get<std::string>(),
               need(c, "sha256").get<std::string>()};
    const auto& t = need(j, "target");
    l.gpus = need(t, "gpus").get<std::vector<std::string>>();
    l.os = need(t, "os").get<std::string>();
    l.os_tag = need(t, "osTag").get<std::string>();
    l.kernels = need(t, "kernels").get<std::vector<std::string>>();
    l.platforms = need(t, "platforms").get<std::vector<std::string>>();
    l.workloads = need(t, "workloads").get<std::vector<std::string>>();
    const auto& d = need(j, "driver");
    l.driver = {need(d, "mode").get<std::string>(), need(d, "version").get<std::string>(),
                need(d, "branch").get<std::string>(), need(d, "kernelModuleType").get<std::string>(),
                need(d, "usePrecompiled").get<bool>()};
    const auto& dest = need(j, "destination");
    if (!dest.is_null()) {
      l.destination_registry = need(dest, "registry").get<std::string>();
      l.destination_prefix = need(dest, "prefix").get<std::string>();
    }
    const auto& images = need(j, "images");
    for (size_t n = 0; n < images.size(); ++n) {
      const auto& i = images[n];
      field = "images[" + std::to_string(n) + "]";
      LockImage img;
      img.components = need(i, "components").get<std::vector<std::string>>();
      img.source = need(i, "source").get<std::string>();
      img.platforms = need(i, "platforms").get<std::vector<std::string>>();
      img.destination = need(i, "destination").get<std::string>();
      img.digest = need(i, "digest").get<std::string>();
      img.origin = need(i, "origin").get<std::string>();
      l.images.push_back(std::move(img));
    }
    l.warnings = need(j, "warnings").get<std::vector<std::string>>();
  } catch (const json::parse_error& e) {
    return input_error(file + ": not valid JSON: " + e.what());
  } catch (const json::exception& e) {
    return input_error(file + ": field " + field + ": " + e.what());
  } catch (const Error& e) {
    return input_error(file + ": " + e.what());
  }
  return l;
}

Result<Lock> load_lock(const std::string& file) {
  auto text = read_file(file);
  if (!text) return text.error();
  return parse_lock(text.value(), file);
}

}  // namespace gb
