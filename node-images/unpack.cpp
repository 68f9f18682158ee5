#include "node-images/unpack.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "common/archive_raii.hpp"
#include "common/strings.hpp"
#include "node-images/unpack_detail.hpp"

namespace gb {

namespace fs = std::filesystem;

namespace {

// A descriptor owned here; closed once.
class Fd {
public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  Fd(Fd&& o) noexcept : m_fd(o.m_fd) { o.m_fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      m_fd = o.m_fd;
      o.m_fd = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return m_fd; }
  explicit operator bool() const { return m_fd >= 0; }

private:
  void reset() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }
  int m_fd;
};

// "./usr//src/x/" -> {usr, src, x}; nullopt for an absolute path or a `..`.
std::optional<std::vector<std::string>> entry_parts(std::string_view name) {
  if (!name.empty() && name[0] == '/') return std::nullopt;
  std::vector<std::string> parts;
  for (auto& p : split(std::string(name), '/')) {
    if (p.empty() || p == ".") continue;
    if (p == "..") return std::nullopt;
    parts.push_back(p);
  }
  return parts;
}

class TreeWriter {
public:
  TreeWriter(Fd root, std::string source, UnpackLimits limits)
      : m_root(std::move(root)), m_source(std::move(source)), m_limits(limits) {}

  Result<void> add(archive* in, archive_entry* e) {
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    auto parts = entry_parts(name);
    if (!parts) return refuse(name, "is absolute or climbs out with '..'");
    if (++m_entries > m_limits.max_entries)
      return input_error(m_source + ": more than " + std::to_string(m_limits.max_entries) + " entries; refused");
    if (parts->empty()) return {};  // the root itself
    auto parent = open_parent(*parts, name, true);
    if (!parent) return parent.error();
    const std::string& last = parts->back();
    std::string key = join(*parts, "/");
    const char* hardlink = archive_entry_hardlink(e);
    mode_t perm = archive_entry_perm(e) & 0777;

    if (hardlink) {
      auto target = entry_parts(hardlink);
      if (!target || target->empty()) return refuse(name, "is a hard link to '" + std::string(hardlink) + "', outside the package");
      std::string tkey = join(*target, "/");
      if (!m_files.count(tkey)) return refuse(name, "is a hard link to '" + tkey + "', which is no file the package wrote before it");
      auto tparent = open_parent(*target, hardlink, false);
      if (!tparent) return tparent.error();
      if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
        // The link set's data: a new file, and the earlier name linked to it.
        if (auto r = write_file(in, parent->get(), last, name, perm); !r) return r;
        if (::unlinkat(tparent->get(), target->back().c_str(), 0) != 0 ||
            ::linkat(parent->get(), last.c_str(), tparent->get(), target->back().c_str(), 0) != 0)
          return op_error(m_source + ": " + name + ": linking " + tkey + ": " + std::strerror(errno));
      } else {
        if (auto r = clear(parent->get(), last, name); !r) return r;
        if (::linkat(tparent->get(), target->back().c_str(), parent->get(), last.c_str(), 0) != 0)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
      }
      m_files.insert(key);
      return {};
    }

    switch (archive_entry_filetype(e)) {
      case AE_IFDIR: {
        if (::mkdirat(parent->get(), last.c_str(), 0755) != 0 && errno != EEXIST)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstatat(parent->get(), last.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
          return refuse(name, "is a folder where the package already put a file or link");
        return {};
      }
      case AE_IFREG: {
        if (auto r = write_file(in, parent->get(), last, name, perm); !r) return r;
        m_files.insert(key);
        return {};
      }
      case AE_IFLNK: {
        const char* t = archive_entry_symlink(e);
        auto target = link_target(*parts, t ? t : "");
        if (!target) return refuse(name, "links to '" + std::string(t ? t : "") + "', outside the package");
        if (auto r = clear(parent->get(), last, name); !r) return r;
        if (::symlinkat(target->c_str(), parent->get(), last.c_str()) != 0)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        m_files.erase(key);
        return {};
      }
      default:
        return refuse(name, "is not a file, folder or link (a device, FIFO or socket)");
    }
  }

  std::uint64_t entries() const { return m_entries; }

private:
  Failure refuse(const std::string& name, const std::string& why) const {
    return input_error(m_source + ": entry '" + name + "' " + why + "; refused");
  }

  // The folder holding parts.back(), each folder opened without following a
  // link (made when `create` and missing).
  Result<Fd> open_parent(const std::vector<std::string>& parts, const std::string& name, bool create) {
    Fd dir(::fcntl(m_root.get(), F_DUPFD_CLOEXEC, 0));
    if (!dir) return op_error(m_source + ": " + std::strerror(errno));
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      int fd = ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT && create) {
        if (::mkdirat(dir.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        fd = ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      }
      if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
          return refuse(name, "goes through '" + parts[i] + "', which is a link or a file");
        return op_error(m_source + ": " + name + ": " + std::strerror(errno));
      }
      dir = Fd(fd);
    }
    return dir;
  }

  // Removes what is at `last` (not a folder), so that nothing is opened through it.
  Result<void> clear(int parent, const std::string& last, const std::string& name) {
    struct stat st {};
    if (::fstatat(parent, last.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    if (S_ISDIR(st.st_mode)) return refuse(name, "replaces a folder");
    if (::unlinkat(parent, last.c_str(), 0) != 0) return op_error(m_source + ": " + name + ": " + std::strerror(errno));
    return {};
  }

  Result<void> write_file(archive* in, int parent, const std::string& last, const std::string& name, mode_t perm) {
    if (auto r = clear(parent, last, name); !r) return r;
    Fd out(::openat(parent, last.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return op_error(m_source + ": " + name + ": " + std::strerror(errno));
    const void* buf = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    std::uint64_t end = 0;
    for (int rc; (rc = archive_read_data_block(in, &buf, &size, &offset)) != ARCHIVE_EOF;) {
      if (rc < ARCHIVE_WARN) return input_error(m_source + ": truncated or damaged in '" + name + "': " + detail::archive_error(in));
      m_bytes += size;
      if (m_bytes > m_limits.max_bytes)
        return input_error(m_source + ": unpacks to more than " + std::to_string(m_limits.max_bytes >> 20) + " MiB; refused");
      for (size_t done = 0; done < size;) {
        ssize_t n = ::pwrite(out.get(), static_cast<const char*>(buf) + done, size - done, offset + static_cast<off_t>(done));
        if (n < 0) {
          if (errno == EINTR) continue;
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        }
        done += static_cast<size_t>(n);
      }
      end = std::max<std::uint64_t>(end, static_cast<std::uint64_t>(offset) + size);
    }
    // A sparse tail (the last block a hole) still gives the file its size.
    if (::ftruncate(out.get(), static_cast<off_t>(end)) != 0 || ::fchmod(out.get(), perm | 0600) != 0)
      return op_error(m_source + ": " + name + ": " + std::strerror(errno));
    return {};
  }

  // The target to store for a link at `parts`, or nullopt when it would lead out.
  static std::optional<std::string> link_target(const std::vector<std::string>& parts, const std::string& target) {
    if (target.empty()) return std::nullopt;
    size_t depth = parts.size() - 1;  // folders above the link, below the root
    std::vector<std::string> up_then_down;
    size_t ups = 0;
    bool absolute = target[0] == '/';
    for (auto& p : split(target, '/')) {
      if (p.empty() || p == ".") continue;
      if (p == "..") {
        if (absolute || !up_then_down.empty()) return std::nullopt;  // `..` after a name: a link may stand before it
        ++ups;
      } else {
        up_then_down.push_back(p);
      }
    }
    if (absolute) ups = depth;  // /usr/src/x -> ../../usr/src/x from the link's folder
    if (ups > depth) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < ups; ++i) out += "../";
    out += join(up_then_down, "/");
    if (out.empty()) out = ".";
    return out;
  }

  Fd m_root;
  std::string m_source;
  UnpackLimits m_limits;
  std::uint64_t m_entries = 0;
  std::uint64_t m_bytes = 0;
  std::set<std::string> m_files;  // regular files written, by entry path
};

// Reads the outer archive's current member as the inner archive's input.
struct MemberSource {
  archive* outer = nullptr;
  char buf[64 * 1024];
};

la_ssize_t member_read(archive*, void* data, const void** out) {
  auto* s = static_cast<MemberSource*>(data);
  *out = s->buf;
  return archive_read_data(s->outer, s->buf, sizeof s->buf);
}

}  // namespace

namespace detail {

Result<std::uint64_t> unpack_entries(archive* in, const fs::path& dest, const std::string& source, const UnpackLimits& limits) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return op_error(dest.string() + ": " + ec.message());
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root) return op_error(dest.string() + ": " + std::strerror(errno));
  TreeWriter w(std::move(root), source, limits);
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(in, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN)
      return input_error(source + ": truncated or damaged after " + std::to_string(w.entries()) + " entries: " + detail::archive_error(in));
    if (auto r = w.add(in, e); !r) return r.error();
  }
  return w.entries();
}

}  // namespace detail

Result<void> unpack_rpm(const fs::path& rpm, const fs::path& dest, const UnpackLimits& limits) {
  detail::ArchiveReader in(archive_read_new());
  archive_read_support_filter_all(in.get());
  archive_read_support_format_cpio(in.get());
  if (archive_read_open_filename(in.get(), rpm.c_str(), 1 << 16) != ARCHIVE_OK)
    return input_error(rpm.string() + ": not an rpm package: " + detail::archive_error(in.get()));
  auto n = detail::unpack_entries(in.get(), dest, rpm.string(), limits);
  if (!n) return n.error();
  return {};
}

Result<void> unpack_deb(const fs::path& deb, const fs::path& dest, const UnpackLimits& limits) {
  detail::ArchiveReader outer(archive_read_new());
  archive_read_support_format_ar(outer.get());
  if (archive_read_open_filename(outer.get(), deb.c_str(), 1 << 16) != ARCHIVE_OK)
    return input_error(deb.string() + ": not a Debian package: " + detail::archive_error(outer.get()));
  bool magic = false;
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(outer.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) return input_error(deb.string() + ": not a Debian package: " + detail::archive_error(outer.get()));
    std::string member = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    if (member == "debian-binary") {
      char v[8] = {};
      magic = archive_read_data(outer.get(), v, sizeof v) >= 4 && std::strncmp(v, "2.", 2) == 0;
      continue;
    }
    if (!starts_with(member, "data.tar")) continue;
    if (!magic) return input_error(deb.string() + ": not a Debian 2.x package (no debian-binary before " + member + ")");
    auto src = std::make_unique<MemberSource>();
    src->outer = outer.get();
    detail::ArchiveReader inner(archive_read_new());
    archive_read_support_filter_all(inner.get());
    archive_read_support_format_tar(inner.get());
    if (archive_read_open(inner.get(), src.get(), nullptr, member_read, nullptr) != ARCHIVE_OK)
      return input_error(deb.string() + ": " + member + ": " + detail::archive_error(inner.get()));
    auto n = detail::unpack_entries(inner.get(), dest, deb.string(), limits);
    if (!n) return n.error();
    return {};
  }
  return input_error(deb.string() + ": not a Debian package (no data.tar member)");
}

}  // namespace gb
