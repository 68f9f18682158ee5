#include "node-images/unpack.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "common/archive_raii.hpp"
#include "common/strings.hpp"
#include "node-images/unpack_detail.hpp"

namespace gb::node_images {

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

// One entry, whatever archive it came from.
struct Entry {
  enum class Type { File, Folder, Symlink, HardLink, Other };
  std::string name;
  Type type = Type::Other;
  mode_t perm = 0644;
  std::string target;         // Symlink: its target; HardLink: the earlier entry's path
  bool carries_data = false;  // HardLink: this entry holds the link set's data (cpio)
};

// An entry's data as blocks at offsets; a hole between blocks stays zero.
struct Block {
  const void* data = nullptr;
  std::size_t size = 0;
  std::uint64_t offset = 0;
};
class EntryData {
public:
  virtual ~EntryData() = default;
  // The next block; size 0 at the end.
  virtual Result<Block> next() = 0;
};

class TreeWriter {
public:
  TreeWriter(Fd root, std::string source, UnpackLimits limits)
      : m_root(std::move(root)), m_source(std::move(source)), m_limits(limits) {}

  Result<void> add(const Entry& e, EntryData& data) {
    const std::string& name = e.name;
    auto parts = entry_parts(name);
    if (!parts) return refuse(name, "is absolute or climbs out with '..'");
    if (++m_entries > m_limits.max_entries)
      return input_error(m_source + ": more than " + std::to_string(m_limits.max_entries) + " entries; refused");
    if (parts->empty()) return {};  // the root itself
    std::string key = join(*parts, "/");
    if (!m_limits.only.empty() && std::find(m_limits.only.begin(), m_limits.only.end(), key) == m_limits.only.end()) return {};
    auto parent = open_parent(*parts, name, true);
    if (!parent) return parent.error();
    const std::string& last = parts->back();
    mode_t perm = e.perm & 0777;

    switch (e.type) {
      case Entry::Type::HardLink: {
        auto target = entry_parts(e.target);
        if (!target || target->empty()) return refuse(name, "is a hard link to '" + e.target + "', outside the package");
        std::string tkey = join(*target, "/");
        if (!m_files.count(tkey)) return refuse(name, "is a hard link to '" + tkey + "', which is no file the package wrote before it");
        if (e.carries_data) {
          // The link set's data: a new file, and every earlier name of the set linked to it.
          if (auto r = write_file(data, parent->get(), last, name, perm); !r) return r;
          std::vector<std::string> earlier = m_links[tkey];
          earlier.push_back(tkey);
          for (const auto& k : earlier) {
            if (k == key) continue;
            auto kp = *entry_parts(k);
            auto kparent = open_parent(kp, k, false);
            if (!kparent) return kparent.error();
            if (auto r = clear(kparent->get(), kp.back(), k); !r) return r;
            if (::linkat(parent->get(), last.c_str(), kparent->get(), kp.back().c_str(), 0) != 0)
              return op_error(m_source + ": " + name + ": linking " + k + ": " + std::strerror(errno));
          }
        } else {
          auto tparent = open_parent(*target, e.target, false);
          if (!tparent) return tparent.error();
          if (auto r = clear(parent->get(), last, name); !r) return r;
          if (::linkat(tparent->get(), target->back().c_str(), parent->get(), last.c_str(), 0) != 0)
            return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        }
        if (key != tkey) m_links[tkey].push_back(key);
        m_files.insert(key);
        return {};
      }
      case Entry::Type::Folder: {
        if (::mkdirat(parent->get(), last.c_str(), 0755) != 0 && errno != EEXIST)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstatat(parent->get(), last.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
          return refuse(name, "is a folder where the package already put a file or link");
        return {};
      }
      case Entry::Type::File: {
        if (auto r = write_file(data, parent->get(), last, name, perm); !r) return r;
        m_files.insert(key);
        m_links.erase(key);
        return {};
      }
      case Entry::Type::Symlink: {
        auto target = link_target(*parts, e.target);
        if (!target) return refuse(name, "links to '" + e.target + "', outside the package");
        if (auto r = clear(parent->get(), last, name); !r) return r;
        if (::symlinkat(target->c_str(), parent->get(), last.c_str()) != 0)
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        m_files.erase(key);
        m_links.erase(key);
        return {};
      }
      case Entry::Type::Other:
        break;
    }
    return refuse(name, "is not a file, folder or link (a device, FIFO or socket)");
  }

  std::uint64_t entries() const { return m_entries; }

  // What the limits still allow of a file's data.
  std::uint64_t bytes_left() const { return m_limits.max_bytes - m_bytes; }

  Failure too_big() const {
    return input_error(m_source + ": unpacks to more than " + std::to_string(m_limits.max_bytes >> 20) + " MiB; refused");
  }

private:
  Failure refuse(const std::string& name, const std::string& why) const {
    return input_error(m_source + ": entry '" + name + "' " + why + "; refused");
  }

  // The folder holding parts.back(), each folder opened without following a
  // link (made when `create` and missing). The last folder opened is kept:
  // archives list a folder's entries together, and this writer never
  // replaces a folder (clear() refuses), so the descriptor still names the
  // folder the walk reached.
  Result<Fd> open_parent(const std::vector<std::string>& parts, const std::string& name, bool create) {
    std::string key;
    for (size_t i = 0; i + 1 < parts.size(); ++i) key += parts[i] + "/";
    if (m_last_dir && key == m_last_key) {
      Fd again(::fcntl(m_last_dir.get(), F_DUPFD_CLOEXEC, 0));
      if (!again) return op_error(m_source + ": " + std::strerror(errno));
      return again;
    }
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
    m_last_dir = Fd(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
    m_last_key = m_last_dir ? key : "";
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

  Result<void> write_file(EntryData& data, int parent, const std::string& last, const std::string& name, mode_t perm) {
    if (auto r = clear(parent, last, name); !r) return r;
    Fd out(::openat(parent, last.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return op_error(m_source + ": " + name + ": " + std::strerror(errno));
    std::uint64_t end = 0;
    for (;;) {
      auto block = data.next();
      if (!block) return input_error(m_source + ": truncated or damaged in '" + name + "': " + block.error().message);
      if (block->size == 0) break;
      m_bytes += block->size;
      if (m_bytes > m_limits.max_bytes) return too_big();
      for (size_t done = 0; done < block->size;) {
        ssize_t n = ::pwrite(out.get(), static_cast<const char*>(block->data) + done, block->size - done,
                             static_cast<off_t>(block->offset + done));
        if (n < 0) {
          if (errno == EINTR) continue;
          return op_error(m_source + ": " + name + ": " + std::strerror(errno));
        }
        done += static_cast<size_t>(n);
      }
      end = std::max<std::uint64_t>(end, block->offset + block->size);
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
  Fd m_last_dir;           // open_parent's last folder, and its path ("a/b/")
  std::string m_last_key;
  std::string m_source;
  UnpackLimits m_limits;
  std::uint64_t m_entries = 0;
  std::uint64_t m_bytes = 0;
  std::set<std::string> m_files;                              // regular files written, by entry path
  std::map<std::string, std::vector<std::string>> m_links;  // a file's later hard-link names
};

Result<Fd> open_root(const fs::path& dest) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return op_error(dest.string() + ": " + ec.message());
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root) return op_error(dest.string() + ": " + std::strerror(errno));
  return root;
}

// --- libarchive's readers (tar, the makeself payload) ---

class ArchiveData : public EntryData {
public:
  explicit ArchiveData(archive* in) : m_in(in) {}
  Result<Block> next() override {
    Block b;
    la_int64_t offset = 0;
    int rc = archive_read_data_block(m_in, &b.data, &b.size, &offset);
    if (rc == ARCHIVE_EOF) return Block{};
    if (rc < ARCHIVE_WARN || offset < 0) return input_error(gb::detail::archive_error(m_in));
    b.offset = static_cast<std::uint64_t>(offset);
    return b;
  }

private:
  archive* m_in;
};

Entry entry_of(archive_entry* ae) {
  Entry e;
  e.name = archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "";
  e.perm = archive_entry_perm(ae);
  if (const char* h = archive_entry_hardlink(ae)) {
    e.type = Entry::Type::HardLink;
    e.target = h;
    e.carries_data = archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0;
    return e;
  }
  switch (archive_entry_filetype(ae)) {
    case AE_IFDIR: e.type = Entry::Type::Folder; break;
    case AE_IFREG: e.type = Entry::Type::File; break;
    case AE_IFLNK:
      e.type = Entry::Type::Symlink;
      e.target = archive_entry_symlink(ae) ? archive_entry_symlink(ae) : "";
      break;
    default: e.type = Entry::Type::Other;
  }
  return e;
}

// --- an rpm's payload: SVR4 "newc" cpio, read here with bounded fields ---
// Header: magic 070701 (or 070702, with a checksum we do not need), then 13
// fields of 8 hex digits: ino mode uid gid nlink mtime filesize devmajor
// devminor rdevmajor rdevminor namesize check. The name (namesize bytes with
// its NUL) follows, then the data; each is padded to 4 bytes from the
// header's start. A symbolic link's data is its target. A hard-link set is
// entries sharing (dev, ino) with nlink > 1; rpm puts the data on the last.
// Ends with the entry "TRAILER!!!".

constexpr std::size_t kCpioHeader = 110;
constexpr std::uint64_t kMaxName = 4096;  // PATH_MAX, with the NUL

// The decompressed payload, read in order.
class Stream {
public:
  explicit Stream(archive* in) : m_in(in) {}
  // Exactly n bytes into `out`; an error when the payload ends first.
  Result<void> read(char* out, std::size_t n) {
    while (n > 0) {
      if (m_pos == m_len) {
        if (auto r = fill(); !r) return r;
        if (m_len == 0) return input_error("the payload ends early");
      }
      std::size_t k = std::min(n, m_len - m_pos);
      std::memcpy(out, m_buf + m_pos, k);
      m_pos += k;
      out += k;
      n -= k;
      m_offset += k;
    }
    return {};
  }
  // Up to n bytes, in place; size 0 only at the end of the payload.
  Result<Block> some(std::size_t n) {
    if (m_pos == m_len) {
      if (auto r = fill(); !r) return r.error();
      if (m_len == 0) return input_error("the payload ends early");
    }
    Block b;
    b.data = m_buf + m_pos;
    b.size = std::min(n, m_len - m_pos);
    m_pos += b.size;
    m_offset += b.size;
    return b;
  }
  Result<void> skip(std::uint64_t n) {
    char pad[4];
    while (n > 0) {
      auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n, sizeof pad));
      if (auto r = read(pad, k); !r) return r;
      n -= k;
    }
    return {};
  }
  std::uint64_t offset() const { return m_offset; }

private:
  Result<void> fill() {
    la_ssize_t n = archive_read_data(m_in, m_buf, sizeof m_buf);
    if (n < 0) return input_error(gb::detail::archive_error(m_in));
    m_pos = 0;
    m_len = static_cast<std::size_t>(n);
    return {};
  }
  archive* m_in;
  char m_buf[64 * 1024];
  std::size_t m_pos = 0, m_len = 0;
  std::uint64_t m_offset = 0;
};

class CpioData : public EntryData {
public:
  CpioData(Stream& s, std::uint64_t size) : m_s(s), m_left(size) {}
  Result<Block> next() override {
    if (m_left == 0) return Block{};
    auto b = m_s.some(static_cast<std::size_t>(std::min<std::uint64_t>(m_left, 1 << 16)));
    if (!b) return b.error();
    b->offset = m_done;
    m_done += b->size;
    m_left -= b->size;
    return b;
  }
  std::uint64_t left() const { return m_left; }

private:
  Stream& m_s;
  std::uint64_t m_left;
  std::uint64_t m_done = 0;
};

std::optional<std::uint32_t> hex8(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 8; ++i) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint32_t>(d);
  }
  return v;
}

Result<std::uint64_t> unpack_cpio(Stream& s, TreeWriter& w, const std::string& source) {
  std::uint64_t at = 0;  // where the entry being read starts
  auto damaged = [&](const std::string& why) {
    return input_error(source + ": damaged cpio payload at byte " + std::to_string(at) + ": " + why);
  };
  auto pad4 = [&]() { return s.skip((4 - s.offset() % 4) % 4); };
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::string> link_sets;  // (dev, ino) -> first name
  for (;;) {
    at = s.offset();
    char h[kCpioHeader];
    if (auto r = s.read(h, sizeof h); !r) return damaged(r.error().message);
    std::string_view magic(h, 6);
    if (magic == "07070X") return input_error(source + ": uses rpm's large-file payload (07070X), which is not read here");
    if (magic != "070701" && magic != "070702") return damaged("not an SVR4 (newc) cpio header");
    std::uint32_t f[13];
    for (int i = 0; i < 13; ++i) {
      auto v = hex8(h + 6 + 8 * i);
      if (!v) return damaged("a header field is not hexadecimal");
      f[i] = *v;
    }
    const std::uint32_t ino = f[0], mode = f[1], nlink = f[4], size = f[6], devmaj = f[7], devmin = f[8], namesize = f[11];
    if (namesize < 1 || namesize > kMaxName) return damaged("a name of " + std::to_string(namesize) + " bytes");
    std::string name(namesize, '\0');
    if (auto r = s.read(name.data(), name.size()); !r) return damaged(r.error().message);
    if (name.back() != '\0' || name.find('\0') != name.size() - 1) return damaged("a name that is not one NUL-terminated string");
    name.pop_back();
    if (auto r = pad4(); !r) return damaged(r.error().message);
    if (name == "TRAILER!!!") return w.entries();
    if (size > w.bytes_left()) return w.too_big();

    Entry e;
    e.name = name;
    e.perm = mode & 07777;
    switch (mode & 0170000) {
      case 0040000: e.type = Entry::Type::Folder; break;
      case 0100000: {
        e.type = Entry::Type::File;
        if (nlink > 1) {
          auto [it, first] = link_sets.try_emplace({devmaj, devmin, ino}, name);
          if (!first) {
            e.type = Entry::Type::HardLink;
            e.target = it->second;
            e.carries_data = size > 0;
          }
        }
        break;
      }
      case 0120000: {
        if (size == 0 || size >= kMaxName) return damaged("link '" + name + "' has a target of " + std::to_string(size) + " bytes");
        e.type = Entry::Type::Symlink;
        e.target.resize(size);
        if (auto r = s.read(e.target.data(), size); !r) return damaged(r.error().message);
        if (e.target.find('\0') != std::string::npos) return damaged("link '" + name + "' has a NUL in its target");
        break;
      }
      default: e.type = Entry::Type::Other;
    }
    CpioData data(s, e.type == Entry::Type::Symlink ? 0 : size);
    if (auto r = w.add(e, data); !r) return r.error();
    // Data the entry did not take (a folder's, a device's) is skipped.
    if (auto r = s.skip(data.left()); !r) return damaged(r.error().message);
    if (auto r = pad4(); !r) return damaged(r.error().message);
  }
}

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
  auto root = open_root(dest);
  if (!root) return root.error();
  TreeWriter w(std::move(*root), source, limits);
  ArchiveData data(in);
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(in, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN)
      return input_error(source + ": truncated or damaged after " + std::to_string(w.entries()) + " entries: " + gb::detail::archive_error(in));
    if (auto r = w.add(entry_of(e), data); !r) return r.error();
  }
  return w.entries();
}

}  // namespace detail

Result<void> unpack_rpm(const fs::path& rpm, const fs::path& dest, const UnpackLimits& limits) {
  // libarchive only strips the rpm header and decompresses; the cpio walk is ours.
  gb::detail::ArchiveReader in(archive_read_new());
  archive_read_support_filter_rpm(in.get());
  gb::detail::support_builtin_filters(in.get());
  archive_read_support_format_raw(in.get());
  archive_entry* e = nullptr;
  if (archive_read_open_filename(in.get(), rpm.c_str(), 1 << 16) != ARCHIVE_OK ||
      archive_read_next_header(in.get(), &e) != ARCHIVE_OK)
    return input_error(rpm.string() + ": not an rpm package: " + gb::detail::archive_error(in.get()));
  auto root = open_root(dest);
  if (!root) return root.error();
  TreeWriter w(std::move(*root), rpm.string(), limits);
  auto s = std::make_unique<Stream>(in.get());
  auto n = unpack_cpio(*s, w, rpm.string());
  if (!n) return n.error();
  return {};
}

Result<void> unpack_deb(const fs::path& deb, const fs::path& dest, const UnpackLimits& limits) {
  gb::detail::ArchiveReader outer(archive_read_new());
  archive_read_support_format_ar(outer.get());
  if (archive_read_open_filename(outer.get(), deb.c_str(), 1 << 16) != ARCHIVE_OK)
    return input_error(deb.string() + ": not a Debian package: " + gb::detail::archive_error(outer.get()));
  bool magic = false;
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(outer.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) return input_error(deb.string() + ": not a Debian package: " + gb::detail::archive_error(outer.get()));
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
    gb::detail::ArchiveReader inner(archive_read_new());
    gb::detail::support_builtin_filters(inner.get());
    archive_read_support_format_tar(inner.get());
    if (archive_read_open(inner.get(), src.get(), nullptr, member_read, nullptr) != ARCHIVE_OK)
      return input_error(deb.string() + ": " + member + ": " + gb::detail::archive_error(inner.get()));
    auto n = detail::unpack_entries(inner.get(), dest, deb.string(), limits);
    if (!n) return n.error();
    return {};
  }
  return input_error(deb.string() + ": not a Debian package (no data.tar member)");
}

}  // namespace gb::node_images
