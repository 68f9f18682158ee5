#include "packages/site_repo.hpp"

#include <algorithm>
#include <ctime>
#include <map>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "packages/rpm_md.hpp"
#include "recipes/lock.hpp"
#include "signing/digest.hpp"
#include "signing/openpgp.hpp"

namespace gb::packages {

namespace fs = std::filesystem;

namespace {

std::string pool_path(const Package& p) { return "pool/" + p.file_name(); }

// The stanza with its Filename field replaced.
Result<std::string> rewrite_filename(const Package& p) {
  std::string entry = p.entry;
  while (!entry.empty() && entry.back() == '\n') entry.pop_back();
  std::string out;
  bool found = false;
  for (const auto& line : split(entry, '\n')) {
    found = found || starts_with(line, "Filename:");
    out += (starts_with(line, "Filename:") ? "Filename: " + pool_path(p) : line) + "\n";
  }
  if (!found) return input_error("package " + p.name + " " + p.version + " from " + p.repo_url + ": its index entry has no Filename");
  return out;
}

// The packages once each, by file name; the same name with other bytes is refused.
Result<std::vector<const Package*>> distinct(const std::vector<const Package*>& all) {
  std::map<std::string, const Package*> by_file;
  for (const auto* p : all) {
    // It becomes a path in pool/ and in the index.
    const std::string name = p->file_name();
    if (name.empty() || name[0] == '.' || !is_word(name, "._+~-"))
      return input_error("package " + p->name + " from " + p->repo_url + ": file name " + quote(name) + " is not a plain file name");
    auto [it, added] = by_file.emplace(p->file_name(), p);
    if (!added && it->second->sha256 != p->sha256)
      return input_error("two packages named " + p->file_name() + " differ: " + it->second->repo_url + " and " + p->repo_url);
  }
  std::vector<const Package*> out;
  for (const auto& [_, p] : by_file) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    return std::tie(a->name, a->version, a->arch) < std::tie(b->name, b->version, b->arch);
  });
  return out;
}

// gzip of `data` with no time stamp or name in its header.
Result<std::string> gzip(std::string_view data, const std::string& what) {
  std::string out;
  gb::detail::ArchiveWriter a(archive_write_new());
  archive_write_set_format_raw(a.get());
  archive_write_add_filter_gzip(a.get());
  if (archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr) != ARCHIVE_OK)
    return op_error(what + ": libarchive gzip: cannot turn the timestamp off");
  archive_write_set_bytes_per_block(a.get(), 0);
  auto sink = [](archive*, void* s, const void* buf, size_t n) -> la_ssize_t {
    static_cast<std::string*>(s)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  };
  if (archive_write_open(a.get(), &out, nullptr, sink, nullptr) != ARCHIVE_OK) return op_error(what + ": " + gb::detail::archive_error(a.get()));
  gb::detail::ArchiveEntry e(archive_entry_new());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_pathname(e.get(), "Packages");
  if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK ||
      (!data.empty() && archive_write_data(a.get(), data.data(), data.size()) < 0) || archive_write_close(a.get()) != ARCHIVE_OK)
    return op_error(what + ": " + gb::detail::archive_error(a.get()));
  return out;
}

}  // namespace

std::string rfc2822_utc(std::int64_t seconds) {
  static const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d UTC", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

Result<std::string> apt_packages(const std::vector<Package>& packages, const std::string& arch) {
  std::vector<const Package*> mine;
  for (const auto& p : packages)
    if (p.arch == arch || p.arch == "all") mine.push_back(&p);
  auto list = distinct(mine);
  if (!list) return list.error();
  std::string out;
  for (const auto* p : *list) {
    auto stanza = rewrite_filename(*p);
    if (!stanza) return stanza.error();
    out += (out.empty() ? "" : "\n") + *stanza;
  }
  return out;
}

std::string apt_release(const std::vector<IndexFile>& indexes, const std::vector<std::string>& archs, std::int64_t date) {
  std::string out;
  out += "Origin: gpubundle\n";
  out += "Label: gpubundle\n";
  out += std::string("Suite: ") + recipes::k_package_repo_suite + "\n";
  out += std::string("Codename: ") + recipes::k_package_repo_suite + "\n";
  out += "Date: " + rfc2822_utc(date) + "\n";
  out += "Architectures: " + join(archs, " ") + "\n";
  out += std::string("Components: ") + recipes::k_package_repo_area + "\n";
  out += "Description: kernel packages for the GPU Operator's driver containers, made by gpubundle\n";
  out += "SHA256:\n";
  std::vector<IndexFile> sorted = indexes;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  for (const auto& i : sorted) {
    std::string size = std::to_string(i.bytes.size());
    out += " " + signing::sha256_hex(i.bytes) + " " + std::string(size.size() < 16 ? 16 - size.size() : 0, ' ') + size + " " + i.path + "\n";
  }
  return out;
}

namespace {

Result<WrittenRepo> write_apt_repo(const std::vector<Fetched>& fetched, const std::vector<std::string>& archs,
                                   const signing::openpgp::SigningKey& key, const fs::path& root) {
  std::error_code ec;
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();

  std::vector<Package> pkgs;
  std::vector<const Package*> all;
  for (const auto& f : fetched) pkgs.push_back(f.package);
  for (const auto& p : pkgs) all.push_back(&p);
  auto files = distinct(all);
  if (!files) return files.error();

  const fs::path dists = root / "dists" / recipes::k_package_repo_suite;
  fs::create_directories(root / "pool", ec);
  if (ec) return op_error("cannot create " + (root / "pool").string() + ": " + ec.message());

  WrittenRepo out;
  out.root = root;
  for (const auto* p : *files) {
    auto from = std::find_if(fetched.begin(), fetched.end(), [&](const auto& f) { return f.package.file_name() == p->file_name(); });
    fs::path to = root / pool_path(*p);
    fs::create_hard_link(from->file, to, ec);
    if (ec) fs::copy_file(from->file, to, ec);  // across file systems
    if (ec) return op_error("cannot copy " + from->file.string() + " to " + to.string() + ": " + ec.message());
    ++out.packages;
    out.bytes += p->size;
  }

  std::vector<IndexFile> indexes;
  for (const auto& arch : archs) {
    auto text = apt_packages(pkgs, arch);
    if (!text) return text.error();
    const std::string dir = std::string(recipes::k_package_repo_area) + "/binary-" + arch + "/";
    auto gz = gzip(*text, (dists / dir / "Packages.gz").string());
    if (!gz) return gz.error();
    indexes.push_back({dir + "Packages", std::move(*text)});
    indexes.push_back({dir + "Packages.gz", std::move(*gz)});
  }
  std::string release = apt_release(indexes, archs, epoch->value_or(0));
  auto in_release = key.clearsign(release);
  if (!in_release) return in_release.error();
  auto detached = key.detach_sign(release, true);
  if (!detached) return detached.error();

  for (const auto& i : indexes) {
    fs::create_directories((dists / i.path).parent_path(), ec);
    if (ec) return op_error("cannot create " + (dists / i.path).parent_path().string() + ": " + ec.message());
    if (auto r = write_atomic(dists / i.path, i.bytes); !r) return r.error();
  }
  if (auto r = write_atomic(dists / "Release", release); !r) return r.error();
  if (auto r = write_atomic(dists / "InRelease", *in_release); !r) return r.error();
  if (auto r = write_atomic(dists / "Release.gpg", *detached); !r) return r.error();
  if (auto r = write_atomic(root / recipes::k_package_repo_key_file, key.public_armored()); !r) return r.error();
  out.release_sha256 = signing::sha256_hex(release);
  return out;
}

}  // namespace

Result<WrittenRepo> write_site_repo(recipes::PackageFormat format, const std::vector<Fetched>& fetched,
                                    const std::vector<std::string>& archs, const signing::openpgp::SigningKey& key,
                                    const fs::path& root) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(root, ec))) return op_error(root.string() + ": already exists; the repository is written afresh");
  if (archs.empty()) return input_error("the package repository needs at least one architecture");
  if (format == recipes::PackageFormat::RpmMd) return rpm_md::write_repo(fetched, key, root);
  return write_apt_repo(fetched, archs, key, root);
}

}  // namespace gb::packages
