#include "recipes/chart_source.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <memory>
#include <vector>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/chart.hpp"

namespace gb::recipes {

namespace fs = std::filesystem;

namespace {

la_ssize_t append_cb(archive*, void* out, const void* data, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(data), n);
  return static_cast<la_ssize_t>(n);
}

// True for an http(s):// Helm repository URL or an oci:// reference.
bool is_remote_chart(const std::string& chart) {
  return starts_with(chart, "https://") || starts_with(chart, "http://") || starts_with(chart, "oci://");
}

std::string source_for_lock(const std::string& chart, const Recipe& recipe, const fs::path& lock_file) {
  if (chart.empty() || is_remote_chart(chart) || fs::path(chart).is_absolute()) return chart;
  fs::path recipe_dir = fs::absolute(recipe.file).parent_path().lexically_normal();
  fs::path lock_dir = fs::absolute(lock_file).parent_path().lexically_normal();
  if (recipe_dir == lock_dir) return chart;
  return (recipe_dir / chart).lexically_normal().lexically_relative(lock_dir).generic_string();
}

}  // namespace

ChartSource select_chart_source(const std::string& flag, const std::string& declared, const fs::path& declared_base) {
  ChartSource s;
  s.written = flag.empty() ? declared : flag;
  if (s.written.empty()) return s;
  if (is_remote_chart(s.written)) {
    s.origin = starts_with(s.written, "oci://") ? ChartOrigin::Oci : ChartOrigin::HelmRepo;
    s.location = s.written;
    return s;
  }
  fs::path p = s.written;
  if (flag.empty() && p.is_relative() && !declared_base.empty()) p = declared_base / p;
  std::error_code ec;
  s.origin = fs::is_directory(p, ec) ? ChartOrigin::Folder : ChartOrigin::Archive;
  s.location = p.lexically_normal().string();
  return s;
}

std::string network_release_file_name(const std::string& version) {
  return std::string("network-operator-") + (starts_with(version, "v") ? version.substr(1) : version) + ".release.yaml";
}

std::string chart_file_name(const std::string& name, const std::string& version) { return name + "-" + version + ".tgz"; }

fs::path default_lock_path(const Recipe& recipe) { return recipe.file.parent_path() / (recipe.name + ".lock.json"); }

std::string chart_source_for_lock(const Recipe& recipe, const fs::path& lock_file) {
  return source_for_lock(recipe.chart, recipe, lock_file);
}

void set_chart_sources_for_lock(Lock& lock, const Recipe& recipe, const fs::path& lock_file) {
  lock.chart.source = chart_source_for_lock(recipe, lock_file);
  if (lock.network && recipe.network) lock.network->chart.source = source_for_lock(recipe.network->chart, recipe, lock_file);
}

bool looks_like_lock(std::string_view text) {
  auto t = trim(text);
  return !t.empty() && t.front() == '{';
}

Result<RecipeOrLock> read_recipe_or_lock(const fs::path& file) {
  auto text = read_file(file, k_lock_max_bytes);  // a lock or a recipe; both are smaller
  if (!text) return text.error();
  RecipeOrLock out;
  if (looks_like_lock(*text)) {
    auto lock = parse_lock(*text, file.string());
    if (!lock) return lock.error();
    out.lock = std::move(*lock);
  } else {
    auto recipe = parse_recipe(*text, file);
    if (!recipe) return recipe.error();
    out.recipe = std::move(*recipe);
  }
  return out;
}

Result<LockFile> lock_for(const fs::path& input) {
  auto in = read_recipe_or_lock(input);
  if (!in) return in.error();
  if (in->lock) return LockFile{std::move(*in->lock), input};
  fs::path file = default_lock_path(*in->recipe);
  std::error_code ec;
  if (!fs::exists(file, ec))
    return input_error(input.string() + ": no lock at " + file.string() + ": run `gpubundle mirror " + input.string() + "` first");
  auto lock = load_lock(file.string());
  if (!lock) return lock.error();
  return LockFile{std::move(*lock), file};
}

Result<std::string> pack_chart_folder(const fs::path& folder) {
  auto chart = load_chart(folder);  // a folder without Chart.yaml is refused here
  if (!chart) return chart.error();
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && !it->is_symlink()) files.push_back(it->path());
  if (ec) return input_error(folder.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());

  std::string out;
  detail::ArchiveWriter a(archive_write_new());
  archive_write_set_format_gnutar(a.get());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_options(a.get(), "gzip:!timestamp");
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open(a.get(), &out, nullptr, append_cb, nullptr) != ARCHIVE_OK)
    return op_error(folder.string() + ": packing: " + detail::archive_error(a.get()));
  for (const auto& f : files) {
    auto bytes = read_file(f);
    if (!bytes) return bytes.error();
    detail::ArchiveEntry e(archive_entry_new());
    std::string name = chart->name + "/" + f.lexically_relative(folder).generic_string();
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes->size()));
    archive_entry_set_mtime(e.get(), 0, 0);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK ||
        archive_write_data(a.get(), bytes->data(), bytes->size()) != static_cast<la_ssize_t>(bytes->size()))
      return op_error(folder.string() + ": packing " + name + ": " + detail::archive_error(a.get()));
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return op_error(folder.string() + ": packing: " + detail::archive_error(a.get()));
  return out;
}

}  // namespace gb::recipes
