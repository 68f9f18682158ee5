#include "recipes/chart.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <map>
#include <memory>
#include <regex>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "signing/digest.hpp"

namespace gb {

namespace {

struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;

constexpr la_int64_t k_max_chart_file = 16 << 20;

// The files of a chart archive that matter, keyed by path below the top folder.
Result<std::map<std::string, std::string>> read_chart_files(const std::string& bytes, const std::string& label) {
  ArchiveReader a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return input_error(label + ": not a chart archive: " + archive_error_string(a.get()));
  std::map<std::string, std::string> files;
  archive_entry* entry = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::string path = archive_entry_pathname(entry);
    auto slash = path.find('/');
    if (slash == std::string::npos) continue;
    std::string rel = path.substr(slash + 1);
    static const std::regex wanted(R"(^(Chart\.yaml|values\.yaml|charts/[^/]+/(Chart|values)\.yaml|charts/[^/]+\.tgz)$)");
    if (!std::regex_match(rel, wanted)) continue;
    if (archive_entry_size(entry) > k_max_chart_file) return input_error(label + ": " + path + " is too large");
    std::string content(static_cast<size_t>(archive_entry_size(entry)), '\0');
    if (archive_read_data(a.get(), content.data(), content.size()) != static_cast<la_ssize_t>(content.size()))
      return input_error(label + ": cannot read " + path + ": " + archive_error_string(a.get()));
    files[rel] = std::move(content);
  }
  if (rc != ARCHIVE_EOF) return input_error(label + ": damaged archive: " + archive_error_string(a.get()));
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
    c.values = YAML::Load(c.values_text);
    if (!c.values.IsMap()) c.values = YAML::Node(YAML::NodeType::Map);
  } catch (const YAML::Exception& e) {
    return input_error(label + ": " + prefix + "Chart.yaml or values.yaml: " + e.what());
  }
  if (!prefix.empty()) return c;  // subcharts of subcharts are not images we need

  std::map<std::string, bool> seen;
  for (auto& [path, content] : files) {
    std::smatch m;
    static const std::regex sub_dir(R"(^charts/([^/]+)/Chart\.yaml$)");
    static const std::regex sub_tgz(R"(^charts/([^/]+)\.tgz$)");
    if (std::regex_match(path, m, sub_dir)) {
      auto sub = build_chart(files, label, "charts/" + m[1].str() + "/");
      if (!sub) return sub.error();
      c.subcharts.push_back(std::move(sub.value()));
    } else if (std::regex_match(path, m, sub_tgz)) {
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
  chart->sha256 = sha256_hex(bytes);
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

bool is_placeholder_version(const std::string& version) {
  static const std::regex release(R"(^v?[0-9]+\.[0-9]+\.[0-9]+$)");
  return !std::regex_match(version, release);
}

}  // namespace gb
