#include "node-images/driver_plan.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "kit/kit.hpp"
#include "mirror/catalog_db.hpp"
#include "mirror/mirror.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "node-images/driver_image.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace {

using PlanJson = nlohmann::json;  // not `json`: driver_image.cpp names an ordered one so (unity builds)

constexpr const char* k_plan_kind = "DriverBuildPlan";
constexpr const char* k_result_kind = "DriverBuildResult";
constexpr const char* k_api = "gpubundle/v1";
constexpr const char* k_platform = "linux/amd64";  // what driver build makes (node-images/driver_files.hpp k_libdir)

Result<std::string> pushed_name(const std::string& image, const std::string& push, const std::string& layout) {
  if (push.empty()) return std::string();
  auto site = kit::SiteRegistry::parse(push);
  if (!site) return site.error();
  auto lay = kit::parse_layout(layout);
  if (!lay) return lay.error();
  auto ref = recipes::Reference::parse(image);
  if (!ref) return ref.error();
  recipes::Reference at = kit::site_reference(ref.value(), site.value(), lay.value());
  at.digest.clear();
  return at.str();
}

// A plain relative or absolute path for a job, no control characters.
bool is_path(const std::string& s) {
  if (s.size() > 4096) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

void set_entry_args(DriverPlan& p) {
  for (auto& e : p.entries) {
    e.result = "driver-result-" + std::to_string(e.index) + ".json";
    std::vector<std::string> a{"driver", "build", p.recipe, "--kernel", e.kernel, "--installer", p.installer,
                               "--repository", e.repository, "--os-tag", e.os_tag};
    auto add = [&](const char* flag, const std::string& v) {
      if (!v.empty()) a.insert(a.end(), {flag, v});
    };
    add("--base", p.base);
    add("--sign-key", p.sign_key);
    add("--sign-cert", p.sign_cert);
    add("--registry-config", p.registry_config);
    add("--push", p.push);
    if (!p.push.empty() && p.layout != "strip-host") add("--layout", p.layout);
    a.insert(a.end(), {"--result", e.result});
    e.args = std::move(a);
  }
}

Result<DriverPlan> plan_driver_builds(const recipes::Lock& lock, const DriverPlan& in) {
  if (lock.driver.mode != "precompiled")
    return input_error("lock: driver.mode is " + quote(lock.driver.mode) + "; only precompiled driver images are built per kernel");
  DriverPlan p = in;
  if (p.recipe.empty()) return input_error("the plan needs the recipe its jobs read");
  if (p.installer.empty()) {
    if (lock.driver.version.empty()) return input_error("the lock names no driver version: give the installer the jobs use with --installer");
    p.installer = "NVIDIA-Linux-x86_64-" + lock.driver.version + ".run";
  }
  for (const auto& k : lock.kernels) {
    std::string tag = precompiled_tag(lock.driver.branch, k, lock.os_tag);
    const recipes::LockImage* found = nullptr;
    for (const auto& img : lock.images) {
      auto ref = recipes::Reference::parse(img.source);
      if (ref && ref->tag == tag && std::find(img.components.begin(), img.components.end(), "driver") != img.components.end()) found = &img;
    }
    if (!found) return input_error("lock: no driver image tagged " + tag + " for kernel " + k + " (resolve the recipe again)");
    auto ref = recipes::Reference::parse(found->source).value_or_throw();
    for (const auto& platform : lock.platforms_of(*found)) {
      // Precompiled drivers are made for x86_64 only; another platform in the
      // lock has no entry (the single-machine build makes none either).
      if (platform != k_platform) continue;
      DriverPlanEntry e;
      e.index = p.entries.size();
      e.kernel = k;
      e.os_tag = lock.os_tag;
      e.platform = platform;
      e.branch = lock.driver.branch;
      e.version = lock.driver.version;
      e.repository = ref.name();
      e.image = found->source;
      auto pushed = pushed_name(e.image, p.push, p.layout);
      if (!pushed) return pushed.error();
      e.pushed = pushed.value();
      p.entries.push_back(std::move(e));
    }
  }
  if (p.entries.empty()) return input_error("lock: no kernel of target.kernels has a linux/amd64 driver image to build");
  set_entry_args(p);
  return p;
}

std::string plan_to_json(const DriverPlan& p) {
  PlanJson entries = PlanJson::array();
  for (const auto& e : p.entries)
    entries.push_back({{"index", e.index},   {"kernel", e.kernel},         {"osTag", e.os_tag}, {"platform", e.platform},
                       {"branch", e.branch}, {"version", e.version},       {"repository", e.repository},
                       {"image", e.image},   {"pushed", e.pushed},         {"result", e.result}, {"args", e.args}});
  PlanJson j = {{"apiVersion", k_api},        {"kind", k_plan_kind},          {"recipe", p.recipe},
            {"installer", p.installer},   {"base", p.base},               {"signKey", p.sign_key},
            {"signCert", p.sign_cert},    {"registryConfig", p.registry_config}, {"push", p.push},
            {"layout", p.layout},         {"entries", entries}};
  return j.dump(2) + "\n";
}

Result<DriverPlan> parse_plan(const std::string& text, const std::string& file) {
  if (text.size() > (16u << 20)) return input_error(file + ": larger than 16 MiB");
  PlanJson j = PlanJson::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return input_error(file + ": not a JSON object");
  if (j.value("apiVersion", "") != k_api || j.value("kind", "") != k_plan_kind)
    return input_error(file + ": not a gpubundle/v1 DriverBuildPlan (make it with `gpubundle driver plan --json`)");
  DriverPlan p;
  auto str = [&](const PlanJson& o, const char* key, std::string& out, bool required) -> Result<void> {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (required) return input_error(file + ": " + key + " is missing");
      return {};
    }
    if (!it->is_string() || it->get_ref<const std::string&>().size() > 4096) return input_error(file + ": " + key + " is not a string");
    out = it->get<std::string>();
    return {};
  };
  for (auto [key, out, required] : {std::tuple{"recipe", &p.recipe, true}, std::tuple{"installer", &p.installer, true},
                                    std::tuple{"base", &p.base, false}, std::tuple{"signKey", &p.sign_key, false},
                                    std::tuple{"signCert", &p.sign_cert, false}, std::tuple{"registryConfig", &p.registry_config, false},
                                    std::tuple{"push", &p.push, false}, std::tuple{"layout", &p.layout, false}}) {
    if (auto r = str(j, key, *out, required); !r) return r.error();
    if (!is_path(*out)) return input_error(file + ": " + key + " has control characters");
  }
  if (p.layout.empty()) p.layout = "strip-host";
  if (auto l = kit::parse_layout(p.layout); !l) return input_error(file + ": layout: " + l.error().message);
  if (!p.push.empty())
    if (auto s = kit::SiteRegistry::parse(p.push); !s) return input_error(file + ": push: " + s.error().message);
  if (!p.base.empty() && !starts_with(p.base, "oci:"))
    if (auto b = recipes::Reference::parse(p.base); !b) return input_error(file + ": base: " + b.error().message);
  auto entries = j.find("entries");
  if (entries == j.end() || !entries->is_array() || entries->empty()) return input_error(file + ": entries is missing or empty");
  if (entries->size() > k_max_plan_entries) return input_error(file + ": more than " + std::to_string(k_max_plan_entries) + " entries");
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const PlanJson& o = (*entries)[i];
    std::string where = file + ": entries[" + std::to_string(i) + "]";
    if (!o.is_object()) return input_error(where + " is not an object");
    DriverPlanEntry e;
    e.index = i;
    if (!o.contains("index") || !o["index"].is_number_unsigned() || o["index"].get<std::size_t>() != i)
      return input_error(where + ".index is not " + std::to_string(i));
    for (auto [key, out] : {std::pair{"kernel", &e.kernel}, std::pair{"osTag", &e.os_tag}, std::pair{"platform", &e.platform},
                            std::pair{"branch", &e.branch}, std::pair{"version", &e.version}, std::pair{"repository", &e.repository},
                            std::pair{"image", &e.image}})
      if (auto r = str(o, key, *out, true); !r) return input_error(where + ": " + r.error().message.substr(file.size() + 2));
    if (!recipes::is_kernel_release(e.kernel)) return input_error(where + ".kernel " + quote(e.kernel) + " is not a kernel release");
    if (!recipes::is_os_name(e.os_tag)) return input_error(where + ".osTag " + quote(e.os_tag) + " is not an OS tag");
    if (!recipes::is_driver_branch(e.branch)) return input_error(where + ".branch " + quote(e.branch) + " is not a driver branch");
    if (!e.version.empty() && !recipes::is_driver_version(e.version)) return input_error(where + ".version " + quote(e.version) + " is not a driver version");
    if (e.platform != k_platform) return input_error(where + ".platform " + quote(e.platform) + ": driver images are built for " + k_platform);
    auto repo = recipes::Reference::parse(e.repository);
    if (!repo || !repo->digest.empty() || repo->name() != e.repository || e.repository.find(':', e.repository.rfind('/')) != std::string::npos)
      return input_error(where + ".repository " + quote(e.repository) + " is not a repository name");
    if (e.image != e.repository + ":" + precompiled_tag(e.branch, e.kernel, e.os_tag))
      return input_error(where + ".image " + quote(e.image) + " is not " + e.repository + ":" + precompiled_tag(e.branch, e.kernel, e.os_tag));
    auto pushed = pushed_name(e.image, p.push, p.layout);
    if (!pushed) return input_error(where + ": " + pushed.error().message);
    e.pushed = pushed.value();
    p.entries.push_back(std::move(e));
  }
  set_entry_args(p);
  return p;
}

std::string result_to_json(const DriverBuildResult& r) {
  return PlanJson{{"apiVersion", k_api}, {"kind", k_result_kind}, {"image", r.image},      {"pushed", r.pushed},
              {"digest", r.digest},  {"kernel", r.kernel},    {"platform", r.platform}}
      .dump();
}

Result<std::vector<DriverBuildResult>> parse_results(const std::string& text, const std::string& file) {
  if (text.size() > (16u << 20)) return input_error(file + ": larger than 16 MiB");
  std::vector<DriverBuildResult> out;
  std::size_t line_no = 0;
  for (const auto& line : split(text, '\n')) {
    ++line_no;
    if (trim(line).empty()) continue;
    std::string where = file + ":" + std::to_string(line_no);
    PlanJson j = PlanJson::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return input_error(where + ": not a JSON object");
    if (j.value("apiVersion", "") != k_api || j.value("kind", "") != k_result_kind)
      return input_error(where + ": not a gpubundle/v1 DriverBuildResult (written by `driver build --push --result`)");
    DriverBuildResult r;
    for (auto [key, out_field] : {std::pair{"image", &r.image}, std::pair{"pushed", &r.pushed}, std::pair{"digest", &r.digest},
                                  std::pair{"kernel", &r.kernel}, std::pair{"platform", &r.platform}}) {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().size() > 4096)
        return input_error(where + ": " + key + " is missing or not a string");
      *out_field = it->get<std::string>();
    }
    for (const std::string* ref : {&r.image, &r.pushed}) {
      auto parsed = recipes::Reference::parse(*ref);
      if (!parsed || parsed->tag.empty() || !parsed->digest.empty()) return input_error(where + ": " + quote(*ref) + " is not a tagged image reference");
    }
    if (!signing::is_sha256_digest(r.digest)) return input_error(where + ": digest " + quote(r.digest) + " is not sha256:<64 hex>");
    if (!recipes::is_kernel_release(r.kernel)) return input_error(where + ": kernel " + quote(r.kernel) + " is not a kernel release");
    if (r.platform != k_platform) return input_error(where + ": platform " + quote(r.platform) + " is not " + k_platform);
    out.push_back(std::move(r));
  }
  if (out.empty()) return input_error(file + ": no result lines");
  return out;
}

Result<std::vector<DriverBuildResult>> read_results(const std::vector<std::filesystem::path>& files) {
  std::vector<DriverBuildResult> out;
  for (const auto& f : files) {
    auto text = read_file(f, 16u << 20);
    if (!text) return text.error();
    auto parsed = parse_results(text.value(), f.string());
    if (!parsed) return parsed.error();
    out.insert(out.end(), parsed->begin(), parsed->end());
  }
  return out;
}

Result<std::vector<BuiltDriverImage>> take_driver_results(const recipes::Lock& lock, const std::vector<DriverBuildResult>& results,
                                                          mirror::Store& store, mirror::ImageSource& source, Progress& progress) {
  std::map<std::string, const recipes::LockImage*> wanted;  // source -> lock image
  for (const auto& img : lock.images)
    if (lock.driver.mode == "precompiled" && std::find(img.components.begin(), img.components.end(), "driver") != img.components.end())
      wanted[img.source] = &img;
  std::map<std::string, const DriverBuildResult*> by_image;
  for (const auto& r : results) {
    if (!wanted.count(r.image)) return input_error("driver result for " + r.image + ": the lock lists no such precompiled driver image");
    auto [it, fresh] = by_image.emplace(r.image, &r);
    if (!fresh && it->second->digest != r.digest)
      return input_error("two driver results for " + r.image + ": " + it->second->digest + " and " + r.digest);
  }
  std::vector<std::string> missing;
  for (const auto& [ref, img] : wanted)
    if (!by_image.count(ref)) missing.push_back(ref);
  if (!missing.empty())
    return input_error("no driver result for " + join(missing, ", ") + ": run those plan entries again (`gpubundle driver plan`)");

  std::vector<BuiltDriverImage> out;
  std::vector<mirror::Publication> publications;
  for (const auto& [ref, r] : by_image) {
    std::string entry = "driver result for " + ref + " (kernel " + r->kernel + ", pushed as " + r->pushed + ")";
    auto pulled = mirror::mirror_one(store, source, r->pushed, r->digest, {r->platform}, progress);
    if (!pulled) return Failure{pulled.error().kind, entry + ": " + pulled.error().message};
    auto stored = store.find_image(r->pushed);
    if (!stored) return op_error(entry + ": not in the store after its pull");
    auto bytes = store.read_blob(r->digest);
    if (!bytes) return bytes.error();
    auto manifest = mirror::oci::parse_manifest(bytes.value(), stored->media_type);
    if (!manifest) return op_error(entry + ": " + manifest.error().message);
    if (manifest->index()) return input_error(entry + ": an index, not a driver image");
    auto config_bytes = store.read_blob(manifest->config.digest);
    if (!config_bytes) return config_bytes.error();
    PlanJson config = PlanJson::parse(config_bytes.value(), nullptr, false);
    PlanJson labels = config.is_object() && config.contains("config") && config["config"].is_object() ? config["config"].value("Labels", PlanJson::object())
                                                                                                    : PlanJson::object();
    auto label = [&](const char* key) { return labels.is_object() && labels.contains(key) && labels[key].is_string() ? labels[key].get<std::string>() : ""; };
    if (label("io.gpubundle.driver.kernel") != r->kernel)
      return input_error(entry + ": the image was built for kernel " + quote(label("io.gpubundle.driver.kernel")));
    if (!lock.driver.version.empty() && label("io.gpubundle.driver.version") != lock.driver.version)
      return input_error(entry + ": the image holds driver " + quote(label("io.gpubundle.driver.version")) + ", the lock " + lock.driver.version);
    BuiltDriverImage b;
    b.kernel = r->kernel;
    b.ref = ref;
    b.digest = r->digest;
    b.size = manifest->bytes.size() + manifest->config.size;
    for (const auto& l : manifest->layers) b.size += l.size;
    b.layer_digest = manifest->layers.empty() ? "" : manifest->layers.back().digest;
    b.platform = r->platform;
    out.push_back(std::move(b));
    publications.push_back({ref, std::move(manifest.value()), {}, {r->platform}, mirror::k_built_here});
  }
  if (auto p = store.publish(publications); !p) return p.error();
  return out;
}

}  // namespace gb::node_images
