#pragma once
// Shared helpers for unit tests: temp folders and chart archives packed from
// ../shared/upstream the way NGC publishes them (real version in Chart.yaml).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gbtest {

namespace fs = std::filesystem;

// A fresh folder removed when the object dies.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }
  fs::path operator/(const std::string& name) const { return m_path / name; }

private:
  fs::path m_path;
};

// ../shared/upstream/gpu-operator, or empty when the folder is absent.
fs::path upstream_dir();
// Skips the calling test (with a message) when shared/ is absent.
#define GB_REQUIRE_SHARED()                                                                       \
  do {                                                                                            \
    if (gbtest::upstream_dir().empty()) {                                                         \
      WARN("skipped: " GB_SHARED_DIR "/upstream/gpu-operator is absent (tests read it in place)"); \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

// Files relative to the chart's top folder ("Chart.yaml", "charts/x/values.yaml").
using ChartFiles = std::map<std::string, std::string>;

// Reads a shared chart folder and sets version/appVersion to `version`.
ChartFiles shared_chart(const std::string& tag, bool real_version = true);
// A gzip'd tar of `files` (path -> content), in this order.
std::string tar_gz(const std::vector<std::pair<std::string, std::string>>& files);
// Writes a Helm-style .tgz with top folder `name`.
fs::path pack_chart(const ChartFiles& files, const fs::path& out, const std::string& name = "gpu-operator");

std::string slurp(const fs::path& p);
void spit(const fs::path& p, const std::string& text);

// A minimal ELF64 with one .modinfo section (key=value\0...), as kbuild lays it out.
std::string tiny_module(const std::string& modinfo);

// Sets (or, for null, unsets) an environment variable for one scope and puts
// back what was there.
class ScopedEnv {
public:
  ScopedEnv(std::string name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;

private:
  std::string m_name;
  std::optional<std::string> m_saved;
};

}  // namespace gbtest
