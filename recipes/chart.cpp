#include "recipes/chart.hpp"
#include "recipes/yaml_input.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <map>
#include <memory>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "signing/digest.hpp"

namespace gb::recipes {

namespace {

constexpr la_int64_t k_max_chart_file = 16 << 20;

// The files of a chart archive that matter, keyed by path below the top folder.
Result<std::map<std::string, std::string>> read_chart_files(const std::string& bytes, const std::string& label) {
  detail::ArchiveReader a(archive_read_new());
  detail::support_builtin_filters(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return input_error(label + ": not a chart archive: " + detail::archive_error(a.get()));
  std::map<std::string, std::string> files;
  archive_entry* entry = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::string path = archive_entry_pathname(entry);
    auto slash = path.find('/');
    if (slash == std::string::npos) continue;
    std::string rel = path.substr(slash + 1);
    if (!is_chart_file_wanted(rel)) continue;
    if (archive_entry_size(entry) > k_max_chart_file) return input_error(label + ": " + path + " is too large");
    std::string content(static_cast<size_t>(archive_entry_size(entry)), '\0');
    if (archive_read_data(a.get(), content.data(), content.size()) != static_cast<la_ssize_t>(content.size()))
      return input_error(label + ": cannot read " + path + ": " + detail::archive_error(a.get()));
    files[rel] = std::move(content);
  }
  if (rc != ARCHIVE_EOF) return input_error(label + ": damaged archive: " + detail::archive_error(a.get()));
  return files;
}

Result<Chart> build_chart(std::map<std::string, std::string>& files, const std::string& label, const std::string& prefix) {
  Chart c;
  auto chart_yaml = files.find(prefix + "Chart.yaml");
  if (chart_yaml == files.end()) return input_error(label + ": no " + prefix + "Chart.yaml: not a Helm chart");
  try {
    YAML::Node meta = YAML::Load(chart_yaml->second);
    if (!meta["name"]) return input_error(label + ": " + prefix + "Chart.yaml has no name");
    c.name = meta["name"].as<std::string>();
    c.version = meta["version"] ? meta["version"].as<std::string>() : "";
    c.app_version = meta["appVersion"] ? meta["appVersion"].as<std::string>() : "";
    for (const auto& d : meta["dependencies"]) {
      ChartDependency dep;
      dep.name = d["name"].as<std::string>();
      if (d["version"]) dep.version = d["version"].as<std::string>();
      if (d["repository"]) dep.repository = d["repository"].as<std::string>();
      if (d["condition"]) dep.condition = d["condition"].as<std::string>();
      c.dependencies.push_back(dep);
    }
    auto values = files.find(prefix + "values.yaml");
    if (values != files.end()) c.values_text = values->second;
    c.values = load_yaml_last_wins(c.values_text);  // Helm: the last of a duplicate key wins
    if (!c.values.IsMap()) c.values = YAML::Node(YAML::NodeType::Map);
  } catch (const YAML::Exception& e) {
    return input_error(label + ": " + prefix + "Chart.yaml or values.yaml: " + e.what());
  }
  if (!prefix.empty()) return c;  // subcharts of subcharts are not images we need

  std::map<std::string, bool> seen;
  for (auto& [path, content] : files) {
    if (auto name = subchart_name(path, "/Chart.yaml"); !name.empty()) {
      auto sub = build_chart(files, label, "charts/" + std::string(name) + "/");
      if (!sub) return sub.error();
      c.subcharts.push_back(std::move(sub.value()));
    } else if (!subchart_name(path, ".tgz").empty()) {
      auto sub = load_chart_archive(content, label + ":" + path);
      if (!sub) return sub.error();
      c.subcharts.push_back(std::move(sub.value()));
    }
  }
  return c;
}

}  // namespace

const Chart* Chart::subchart(const std::string& sub) const {
  for (const auto& s : subcharts)
    if (s.name == sub) return &s;
  return nullptr;
}

Result<Chart> load_chart_archive(const std::string& bytes, const std::string& label) {
  auto files = read_chart_files(bytes, label);
  if (!files) return files.error();
  auto chart = build_chart(files.value(), label, "");
  if (!chart) return chart;
  chart->sha256 = signing::sha256_hex(bytes);
  return chart;
}

Result<Chart> load_chart(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::map<std::string, std::string> files;
    for (const char* name : {"Chart.yaml", "values.yaml"}) {
      if (std::filesystem::exists(path / name)) files[name] = read_file(path / name).value_or_throw();
    }
    if (std::filesystem::is_directory(path / "charts")) {
      for (const auto& e : std::filesystem::directory_iterator(path / "charts")) {
        std::string n = e.path().filename().string();
        if (e.is_directory()) {
          for (const char* name : {"Chart.yaml", "values.yaml"})
            if (std::filesystem::exists(e.path() / name))
              files["charts/" + n + "/" + name] = read_file(e.path() / name).value_or_throw();
        } else if (ends_with(n, ".tgz")) {
          files["charts/" + n] = read_file(e.path()).value_or_throw();
        }
      }
    }
    auto chart = build_chart(files, path.string(), "");
    if (chart) chart->path = path;
    return chart;
  }
  auto bytes = read_file(path);
  if (!bytes) return input_error(path.string() + ": chart not found");
  auto chart = load_chart_archive(bytes.value(), path.string());
  if (chart) chart->path = path;
  return chart;
}

// The node at a dotted path, or an undefined node. Navigates with const
// lookups and reset(): yaml-cpp's operator= would write into the tree.
YAML::Node at_path(const YAML::Node& root, const std::string& path) {
  YAML::Node cur;
  cur.reset(root);
  for (const auto& part : split(path, '.')) {
    if (!cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& c = cur;
    YAML::Node next = c[part];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
  }
  return cur;
}

void merge_into(YAML::Node base, const YAML::Node& over) {
  if (!over || !over.IsMap()) return;
  for (auto it = over.begin(); it != over.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (it->second.IsMap() && base[k] && base[k].IsMap())
      merge_into(base[k], it->second);
    else
      base[k] = it->second;
  }
}

bool is_placeholder_version(const std::string& version) {
  std::string_view v = version;
  if (starts_with(v, "v")) v.remove_prefix(1);
  return !is_dotted_number(v, 3, 3);
}

std::string_view subchart_name(std::string_view rel_path, std::string_view suffix) {
  constexpr std::string_view dir = "charts/";
  if (rel_path.size() <= dir.size() + suffix.size() || !starts_with(rel_path, dir) || !ends_with(rel_path, suffix)) return {};
  auto name = rel_path.substr(dir.size(), rel_path.size() - dir.size() - suffix.size());
  return name.find('/') == std::string_view::npos ? name : std::string_view();
}

bool is_chart_file_wanted(std::string_view rel_path) {
  return rel_path == "Chart.yaml" || rel_path == "values.yaml" || !subchart_name(rel_path, "/Chart.yaml").empty() ||
         !subchart_name(rel_path, "/values.yaml").empty() || !subchart_name(rel_path, ".tgz").empty();
}

}  // namespace gb::recipes
