#include "recipes/network.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "common/strings.hpp"
#include "recipes/reference.hpp"
#include "recipes/yaml_input.hpp"
#include "signing/digest.hpp"

namespace gb::recipes {

bool is_network_component(std::string_view component) { return starts_with(component, k_network_component_prefix); }

namespace {

bool is_text(const YAML::Node& n) { return n && n.IsScalar() && !n.Scalar().empty(); }

// A reference string that names its tag or digest ("host/path:tag", "...@sha256:...").
bool pins_version(const std::string& ref) {
  auto slash = ref.rfind('/');
  return ref.find('@') != std::string::npos || ref.find(':', slash == std::string::npos ? 0 : slash) != std::string::npos;
}

std::string with_tag(const std::string& name, const std::string& tag) {
  return name + (starts_with(tag, "sha256:") ? "@" : ":") + tag;
}

std::string arch_of(const std::string& platform) {
  auto parts = split(platform, '/');
  return parts.size() >= 2 ? parts[1] : platform;
}

std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values)
    for (size_t at; (at = text.find("{" + key + "}")) != std::string::npos;) text.replace(at, key.size() + 2, value);
  return text;
}

// Images below `node` in the shapes NetworkChartImage lists. `app_version`
// is the tag Helm renders when the values give none.
void walk_images(const YAML::Node& node, const std::string& path, const std::string& app_version,
                 const std::set<std::string>& skip, std::vector<NetworkChartImage>& out, std::vector<std::string>& warnings) {
  if (!node.IsMap()) return;
  using Shape = NetworkChartImage::Shape;
  const YAML::Node& n = node;
  if (is_text(n["repository"])) {
    std::string repo = n["repository"].Scalar();
    NetworkChartImage img;
    img.path = path;
    std::string tag;
    for (const char* key : {"version", "tag"})
      if (is_text(n[key]) && img.tag_key.empty()) {
        img.tag_key = key;
        tag = n[key].Scalar();
      }
    if (n["tag"] && img.tag_key.empty()) img.tag_key = "tag";  // "tag: null": Helm falls back to appVersion
    if (tag.empty()) tag = app_version;
    bool found = true;
    if (is_text(n["image"])) {
      img.shape = Shape::RepositoryImage;
      img.reference = with_tag(repo + "/" + n["image"].Scalar(), tag);
    } else if (is_text(n["name"])) {
      img.shape = Shape::RepositoryName;
      img.reference = with_tag(repo + "/" + n["name"].Scalar(), tag);
    } else if (repo.find('/') != std::string::npos && !n["image"] && !n["name"]) {
      img.shape = Shape::FullRepository;
      img.reference = with_tag(repo, tag);
    } else {
      found = false;
    }
    if (found) out.push_back(std::move(img));
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (path.empty() && skip.count(key)) continue;
    std::string sub = path.empty() ? key : path + "." + key;
    if (key == "images" && it->second.IsMap()) {
      for (auto i = it->second.begin(); i != it->second.end(); ++i) {
        if (!is_text(i->second)) continue;
        std::string ref = i->second.Scalar();
        std::string at = sub + "." + i->first.as<std::string>();
        if (!Reference::parse(ref)) continue;
        if (!pins_version(ref)) {
          warnings.push_back("network chart image " + at + " (" + ref + ") names no tag: not carried");
          continue;
        }
        out.push_back({at, Shape::String, ref, ""});
      }
      continue;
    }
    walk_images(it->second, sub, app_version, skip, out, warnings);
  }
}

// One operand image from release.yaml: {repository, image, version}.
struct ReleaseImage {
  std::string repository;
  std::string image;
  std::string version;
};

// The release's image list, key -> image; one line naming `label` and the key when malformed.
Result<std::map<std::string, ReleaseImage>> parse_network_release(const std::string& text, const std::string& label) {
  std::map<std::string, ReleaseImage> out;
  try {
    YAML::Node root = load_yaml_last_wins(text);
    if (!root.IsMap()) return input_error(label + ": not a Network Operator release file (a mapping of operand images)");
    for (auto it = root.begin(); it != root.end(); ++it) {
      std::string key = it->first.as<std::string>();
      const YAML::Node v = it->second;
      if (!v.IsMap()) continue;
      if (!is_text(v["image"]) || !is_text(v["repository"]) || !is_text(v["version"]))
        return input_error(label + ": " + key + ": needs image, repository and version");
      ReleaseImage img{v["repository"].Scalar(), v["image"].Scalar(), v["version"].Scalar()};
      if (auto r = Reference::parse(with_tag(img.repository + "/" + img.image, img.version)); !r)
        return input_error(label + ": " + key + ": " + r.error().message);
      out[key] = std::move(img);
    }
  } catch (const YAML::Exception& e) {
    return input_error(label + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": " + e.msg);
  }
  return out;
}

// The DOCA driver tags for `os`, the platforms' architectures and (precompiled) each kernel.
std::vector<std::pair<std::string, std::string>> doca_driver_tags(const Catalog& catalog, const std::string& version,
                                                                  bool precompiled, const std::string& os,
                                                                  const std::vector<std::string>& kernels,
                                                                  const std::vector<std::string>& platforms) {
  std::vector<std::pair<std::string, std::string>> out;  // tag, platform
  const std::string& rule = catalog.doca_driver_tag(precompiled);
  for (const auto& p : platforms) {
    if (precompiled) {
      for (const auto& k : kernels)
        out.emplace_back(fill(rule, {{"version", version}, {"kernel", k}, {"os", os}, {"arch", arch_of(p)}}), p);
    } else {
      out.emplace_back(fill(rule, {{"version", version}, {"os", os}, {"arch", arch_of(p)}}), p);
    }
  }
  return out;
}

class NetworkResolver {
public:
  NetworkResolver(const Recipe& r, const Chart& c, const Catalog& cat, Lock& l)
      : m_r(r), m_net(*r.network), m_operands(m_net.operands), m_chart(c), m_cat(cat), m_lock(l) {}

  Result<void> run(const std::string& release_text) {
    LockNetwork& n = m_lock.network.emplace();
    n.version = m_net.version;
    n.chart = {m_chart.name, m_chart.version, m_chart.app_version, m_net.chart, m_chart.sha256};
    n.release_file = m_net.release_file;
    n.release_sha256 = signing::sha256_hex(release_text);
    // One NFD per cluster, as the Network Operator's docs ask: the GPU
    // Operator's, whose worker labels the NICs too (the chart's NodeFeatureRule
    // for them stays on, kit/kit_network.cpp).
    for (const auto& img : m_lock.images)
      for (const auto& c : img.components)
        if (c == "node-feature-discovery" && std::find(m_operands.begin(), m_operands.end(), "nfd") != m_operands.end()) {
          m_operands.erase(std::find(m_operands.begin(), m_operands.end(), "nfd"));
          warn("network.operands: nfd left out: the GPU Operator runs NFD, and a cluster has one");
        }
    n.operands = m_operands;
    if (const auto& ib = m_net.ib_kubernetes) {
      n.ib_pkey_guid_pool_start = ib->pkey_guid_pool_start;
      n.ib_pkey_guid_pool_end = ib->pkey_guid_pool_end;
      n.ib_ufm_secret = ib->ufm_secret;
    }

    if (m_chart.name != k_network_chart)
      error("network.chart", "network.chart: chart " + quote(m_chart.name) + " is not the " + k_network_chart + " chart");
    if (is_placeholder_version(m_chart.version))
      warn("network chart carries placeholder version " + m_chart.version + "; using network.version " + m_net.version);
    else if (compare_versions(m_chart.version, m_net.version) != 0)
      error("network.version", "network.version " + m_net.version + " does not match the network-operator chart's version " +
                                   m_chart.version);

    auto release = parse_network_release(release_text, "network.releaseFile " + m_net.release_file);
    if (!release) return release.error();
    // The operator's own entry names the release the list belongs to.
    if (auto it = release->find("NetworkOperator"); it != release->end() && compare_versions(it->second.version, m_net.version) != 0)
      error("network.releaseFile", "network.releaseFile " + m_net.release_file + " is the image list of " + it->second.version +
                                       ", not network.version " + m_net.version);

    // A subchart operand the chart has no switch for would silently carry nothing.
    for (const auto& name : m_operands) {
      const NetworkOperand* op = m_cat.network_operand(name);
      if (op->chart_switch.empty()) continue;
      bool has = std::any_of(m_chart.dependencies.begin(), m_chart.dependencies.end(),
                             [&](const ChartDependency& d) { return d.condition == op->chart_switch; });
      if (!has)
        error("network.operands", "network.operands: " + name + " (" + op->title + "): chart " + m_chart.name + " " +
                                      m_chart.version + " has no subchart switched by " + op->chart_switch +
                                      "; remove " + name + " or use a release that has it");
    }

    std::vector<std::string> warnings;
    for (const auto& img : network_chart_images(m_chart, m_operands, m_cat, warnings))
      add("network:" + img.path, img.reference, m_r.platforms);
    for (auto& w : warnings) warn(std::move(w));

    for (const auto& name : m_operands) {
      const NetworkOperand* op = m_cat.network_operand(name);
      for (const auto& p : op->policy) {
        auto it = release->find(p.release);
        if (it == release->end()) {
          error("network.operands", "network.operands: " + name + " (" + op->title + "): release " + m_net.version +
                                        "'s image list has no " + p.release + " entry; remove " + name + " or use a release that has it");
          continue;
        }
        const ReleaseImage& img = it->second;
        std::string base = img.repository + "/" + img.image;
        if (name == "ofedDriver")
          doca(base, img.version);
        else
          add(std::string(k_network_component_prefix) + p.path, with_tag(base, img.version), m_r.platforms);
      }
    }
    if (!m_errors.empty()) return input_error(join(m_errors, "\n"));
    std::sort(m_lock.images.begin(), m_lock.images.end(), [](const auto& a, const auto& b) { return a.source < b.source; });
    return {};
  }

private:
  void error(const std::string& field, const std::string& message) { m_errors.push_back(m_r.where(field) + message); }
  void warn(std::string message) { m_lock.warnings.push_back(std::move(message)); }

  void doca(const std::string& base, const std::string& version) {
    m_lock.network->doca_version = version;
    m_lock.network->doca_precompiled = m_net.doca_precompiled;
    if (starts_with(version, "sha256:")) {
      if (m_net.doca_precompiled)
        error("network.ofedDriver.precompiled", "network.ofedDriver.precompiled: the release pins the DOCA driver by digest (" +
                                                    version + "), which names no per-kernel tags");
      add("network:ofedDriver", base + "@" + version, m_r.platforms);
      return;
    }
    for (const auto& [tag, platform] :
         doca_driver_tags(m_cat, version, m_net.doca_precompiled, m_r.os, m_r.kernels, m_r.platforms))
      add("network:ofedDriver", base + ":" + tag, {platform});
  }

  void add(const std::string& component, const std::string& ref_text, const std::vector<std::string>& platforms) {
    auto ref = Reference::parse(ref_text);
    if (!ref) {
      m_errors.push_back("network: image " + quote(ref_text) + " (" + component + "): " + ref.error().message);
      return;
    }
    std::string source = ref->str();
    LockImage* img = m_lock.find(source);
    if (!img) {
      LockImage n;
      n.source = source;
      if (!m_lock.destination_registry.empty())
        n.destination = ref->rehomed(m_lock.destination_registry, m_lock.destination_prefix).str();
      m_lock.images.push_back(std::move(n));
      img = &m_lock.images.back();
    }
    if (std::find(img->components.begin(), img->components.end(), component) == img->components.end())
      img->components.push_back(component);
    for (const auto& p : platforms)
      if (std::find(img->platforms.begin(), img->platforms.end(), p) == img->platforms.end()) img->platforms.push_back(p);
  }

  const Recipe& m_r;
  const NetworkSettings& m_net;
  std::vector<std::string> m_operands;  // the recipe's, less what the GPU Operator runs already
  const Chart& m_chart;
  const Catalog& m_cat;
  Lock& m_lock;
  std::vector<std::string> m_errors;
};

}  // namespace

std::vector<NetworkChartImage> network_chart_images(const Chart& chart, const std::vector<std::string>& operands,
                                                    const Catalog& catalog, std::vector<std::string>& warnings) {
  std::vector<NetworkChartImage> out;
  std::set<std::string> subcharts;
  for (const auto& dep : chart.dependencies) subcharts.insert(dep.name);
  walk_images(chart.values, "", chart.app_version, subcharts, out, warnings);
  for (const auto& dep : chart.dependencies) {
    bool on = true;
    const NetworkOperand* switched = nullptr;
    for (const auto& o : catalog.network_operands())
      if (!dep.condition.empty() && o.chart_switch == dep.condition) switched = &o;
    if (switched) {
      on = std::find(operands.begin(), operands.end(), switched->name) != operands.end();
    } else if (!dep.condition.empty()) {
      if (auto c = at_path(chart.values, dep.condition); c.IsScalar()) YAML::convert<bool>::decode(c, on);
    }
    if (!on) continue;
    const Chart* sub = chart.subchart(dep.name);
    if (!sub) {
      warnings.push_back("network chart subchart " + dep.name + " is not packed in the chart; its images are not in this lock");
      continue;
    }
    YAML::Node values = YAML::Clone(sub->values);
    merge_into(values, chart.values[dep.name]);
    std::vector<NetworkChartImage> found;
    walk_images(values, "", sub->app_version, {}, found, warnings);
    for (auto& f : found) {
      f.path = dep.name + "." + f.path;
      out.push_back(std::move(f));
    }
  }
  return out;
}

Result<void> resolve_network(const Recipe& recipe, const Chart& chart, const std::string& release_text,
                             const Catalog& catalog, Lock& lock) {
  if (!recipe.network) return {};
  return NetworkResolver(recipe, chart, catalog, lock).run(release_text);
}

}  // namespace gb::recipes
