#include "fixtures.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/archive_raii.hpp"
#include "common/files.hpp"

namespace gbtest {

TempDir::TempDir() {
  std::random_device rd;
  m_path = fs::temp_directory_path() / ("gbtest-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(m_path);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

fs::path upstream_dir() {
#ifdef GB_SHARED_DIR
  fs::path p = fs::path(GB_SHARED_DIR) / "upstream" / "gpu-operator";
#else
  fs::path p;  // a binary that never reads ../shared (registry_live_tests)
#endif
  return fs::is_directory(p) ? p : fs::path();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

ChartFiles shared_chart(const std::string& tag, bool real_version) {
  fs::path dir = upstream_dir() / tag;
  ChartFiles files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), dir).string();
    if (rel.rfind("assets/", 0) == 0) continue;  // not part of the Helm chart
    files[rel] = slurp(e.path());
  }
  if (real_version) {
    std::string& chart = files.at("Chart.yaml");
    chart = std::regex_replace(chart, std::regex("(^|\\n)version: .*"), "$1version: " + tag);
    chart = std::regex_replace(chart, std::regex("(^|\\n)appVersion: .*"), "$1appVersion: \"" + tag + "\"");
  }
  return files;
}

std::string tar_gz(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  gb::detail::ArchiveWriter a(archive_write_new());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_open(
      a.get(), &out, nullptr,
      [](archive*, void* d, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(d)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  for (const auto& [path, content] : files) {
    gb::detail::ArchiveEntry e(archive_entry_new());
    archive_entry_set_pathname(e.get(), path.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(content.size()));
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) throw std::runtime_error(std::string("tar: ") + archive_error_string(a.get()));
    archive_write_data(a.get(), content.data(), content.size());
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) throw std::runtime_error(std::string("tar: ") + archive_error_string(a.get()));
  return out;
}

fs::path pack_chart(const ChartFiles& files, const fs::path& out, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [rel, content] : files) entries.emplace_back(name + "/" + rel, content);
  gb::write_atomic(out, tar_gz(entries)).value_or_throw();
  return out;
}

std::string tiny_module(const std::string& modinfo) {
  using namespace std::string_literals;
  std::string shstr = "\0.modinfo\0.shstrtab\0"s;
  std::string elf(64, '\0');
  std::memcpy(elf.data(), "\x7f" "ELF\x02\x01\x01", 7);
  std::size_t info_off = elf.size();
  elf += modinfo;
  std::size_t str_off = elf.size();
  elf += shstr;
  std::size_t sh_off = elf.size();
  auto sh = [&](std::uint32_t name, std::uint64_t off, std::uint64_t size) {
    std::string h(64, '\0');
    std::memcpy(h.data(), &name, 4);
    std::memcpy(h.data() + 0x18, &off, 8);
    std::memcpy(h.data() + 0x20, &size, 8);
    elf += h;
  };
  sh(0, 0, 0);
  sh(1, info_off, modinfo.size());
  sh(10, str_off, shstr.size());
  std::uint64_t shoff = sh_off;
  std::uint16_t entsize = 64, num = 3, strndx = 2;
  std::memcpy(elf.data() + 0x28, &shoff, 8);
  std::memcpy(elf.data() + 0x3A, &entsize, 2);
  std::memcpy(elf.data() + 0x3C, &num, 2);
  std::memcpy(elf.data() + 0x3E, &strndx, 2);
  return elf;
}

ScopedEnv::ScopedEnv(std::string name, const char* value) : m_name(std::move(name)) {
  if (const char* v = std::getenv(m_name.c_str())) m_saved = v;
  if (value) ::setenv(m_name.c_str(), value, 1);
  else ::unsetenv(m_name.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (m_saved) ::setenv(m_name.c_str(), m_saved->c_str(), 1);
  else ::unsetenv(m_name.c_str());
}

}  // namespace gbtest
