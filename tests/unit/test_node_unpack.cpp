// Unpacking packages we did not make (node-images/unpack.hpp): nothing in a
// .deb, an rpm's cpio or a makeself payload resolves outside the folder.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "fixtures.hpp"
#include "node-images/kbuild.hpp"
#include "node-images/unpack.hpp"

using namespace gb;
namespace fs = std::filesystem;

namespace {

struct Entry {
  Entry(std::string n, char t, std::string d = "", int m = 0644, bool hd = false)
      : name(std::move(n)), type(t), data(std::move(d)), mode(m), hardlink_data(hd) {}
  std::string name;
  char type;         // f file, d folder, l symlink, h hard link, c char device, p FIFO
  std::string data;  // file contents, or the link's target
  int mode;
  bool hardlink_data;  // a hard link that carries the data (cpio's last entry)
};

enum class Format { Tar, Cpio, Ar };

// An archive of `entries`: a gzipped pax tar, a newc cpio (an rpm's payload), or an ar.
std::string archive_of(const std::vector<Entry>& entries, Format format) {
  std::string out;
  detail::ArchiveWriter w(archive_write_new());
  if (format == Format::Tar) {
    archive_write_set_format_pax_restricted(w.get());
    archive_write_add_filter_gzip(w.get());
  } else if (format == Format::Cpio) {
    archive_write_set_format_cpio_newc(w.get());
  } else {
    archive_write_set_format_ar_svr4(w.get());
  }
  archive_write_set_bytes_in_last_block(w.get(), 1);
  archive_write_open(
      w.get(), &out, nullptr,
      [](archive*, void* d, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(d)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  // cpio has no link entries: a link set is entries sharing an inode, nlink > 1.
  std::map<std::string, int> inode;
  int ino = 1;
  for (const auto& e : entries) inode[e.name] = ino++;
  std::set<std::string> linked;
  for (const auto& e : entries)
    if (e.type == 'h') linked.insert(e.data);
  for (const auto& e : entries) {
    detail::ArchiveEntry ae(archive_entry_new());
    archive_entry_set_pathname(ae.get(), e.name.c_str());
    archive_entry_set_perm(ae.get(), static_cast<mode_t>(e.mode));
    bool cpio_link = format == Format::Cpio && e.type == 'h';
    archive_entry_set_ino(ae.get(), cpio_link ? inode[e.data] : inode[e.name]);
    archive_entry_set_nlink(ae.get(), cpio_link || linked.count(e.name) ? 2 : 1);
    std::string data;
    switch (e.type) {
      case 'f': archive_entry_set_filetype(ae.get(), AE_IFREG); data = e.data; break;
      case 'd': archive_entry_set_filetype(ae.get(), AE_IFDIR); break;
      case 'l': archive_entry_set_filetype(ae.get(), AE_IFLNK); archive_entry_set_symlink(ae.get(), e.data.c_str()); break;
      case 'h':
        archive_entry_set_filetype(ae.get(), AE_IFREG);
        if (!cpio_link) archive_entry_set_hardlink(ae.get(), e.data.c_str());
        if (e.hardlink_data) data = "linked data";
        break;
      case 'c': archive_entry_set_filetype(ae.get(), AE_IFCHR); archive_entry_set_rdev(ae.get(), makedev(1, 3)); break;
      case 'p': archive_entry_set_filetype(ae.get(), AE_IFIFO); break;
    }
    archive_entry_set_size(ae.get(), static_cast<la_int64_t>(data.size()));
    REQUIRE(archive_write_header(w.get(), ae.get()) == ARCHIVE_OK);
    if (!data.empty()) archive_write_data(w.get(), data.data(), data.size());
  }
  archive_write_close(w.get());
  return out;
}

// A .deb: debian-binary, control.tar.gz and data.tar.gz of `entries`.
std::string deb_of(const std::vector<Entry>& entries) {
  return archive_of({{"debian-binary", 'f', "2.0\n"},
                     {"control.tar.gz", 'f', archive_of({{"./control", 'f', "Package: x\n"}}, Format::Tar)},
                     {"data.tar.gz", 'f', archive_of(entries, Format::Tar)}},
                    Format::Ar);
}

// Unpacks `entries` as a .deb into tmp/out; the error message, or "" on success.
std::string unpack(const gbtest::TempDir& tmp, const std::vector<Entry>& entries, const UnpackLimits& limits = {}) {
  write_atomic(tmp / "p.deb", deb_of(entries)).value_or_throw();
  auto r = unpack_deb(tmp / "p.deb", tmp / "out", limits);
  return r ? "" : r.error().message;
}

}  // namespace

TEST_CASE("unpack: a package's links stay inside the folder", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  SECTION("an absolute link is rewritten below the folder") {
    REQUIRE(unpack(tmp, {{"usr/src/common/Makefile", 'f', "all:\n"},
                         {"usr/src/linux-headers-6.1/common", 'l', "/usr/src/common"},
                         {"lib/modules/6.1/build", 'l', "/usr/src/linux-headers-6.1"}}) == "");
    CHECK(fs::read_symlink(tmp / "out/usr/src/linux-headers-6.1/common") == "../../../usr/src/common");
    CHECK(fs::read_symlink(tmp / "out/lib/modules/6.1/build") == "../../../usr/src/linux-headers-6.1");
    CHECK(read_file(tmp / "out/lib/modules/6.1/build/common/Makefile").value() == "all:\n");
  }
  SECTION("Debian's relative links to linux-kbuild are kept") {
    REQUIRE(unpack(tmp, {{"usr/src/linux-headers-6.1/scripts", 'l', "../../lib/linux-kbuild-6.1/scripts"}}) == "");
    CHECK(fs::read_symlink(tmp / "out/usr/src/linux-headers-6.1/scripts") == "../../lib/linux-kbuild-6.1/scripts");
  }
  SECTION("a relative link that climbs out is refused") {
    auto err = unpack(tmp, {{"usr/src/x", 'l', "../../../etc"}});
    CHECK(err.find("p.deb: entry 'usr/src/x' links to '../../../etc', outside the package; refused") != std::string::npos);
    CHECK_FALSE(fs::exists(fs::symlink_status(tmp / "out/usr/src/x")));
  }
  SECTION("`..` after a name is refused (a link may stand before it)") {
    CHECK(unpack(tmp, {{"a/l", 'l', "b/../../../x"}}).find("outside the package") != std::string::npos);
    CHECK(unpack(tmp, {{"a/l", 'l', "/usr/../../x"}}).find("outside the package") != std::string::npos);
  }
  SECTION("an entry through a link is refused, even one pointing inside") {
    auto err = unpack(tmp, {{"sub/", 'd'}, {"l", 'l', "sub"}, {"l/file", 'f', "x"}});
    CHECK(err.find("entry 'l/file' goes through 'l', which is a link or a file; refused") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp / "out/sub/file"));
  }
  SECTION("a file replaces a link; nothing is written through it") {
    REQUIRE(unpack(tmp, {{"target", 'f', "kept"}, {"f", 'l', "target"}, {"f", 'f', "new"}}) == "");
    CHECK(read_file(tmp / "out/target").value() == "kept");
    CHECK_FALSE(fs::is_symlink(tmp / "out/f"));
    CHECK(read_file(tmp / "out/f").value() == "new");
  }
}

TEST_CASE("unpack: entry names, types and modes", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  CHECK(unpack(tmp, {{"/etc/x", 'f', "x"}}).find("entry '/etc/x' is absolute or climbs out with '..'") != std::string::npos);
  CHECK(unpack(tmp, {{"a/../../x", 'f', "x"}}).find("climbs out") != std::string::npos);
  CHECK(unpack(tmp, {{"dev/null", 'c'}}).find("entry 'dev/null' is not a file, folder or link") != std::string::npos);
  CHECK(unpack(tmp, {{"fifo", 'p'}}).find("entry 'fifo' is not a file, folder or link") != std::string::npos);
  REQUIRE(unpack(tmp, {{"./bin/tool", 'f', "#!", 04755}}) == "");
  struct stat st {};
  REQUIRE(::stat((tmp / "out/bin/tool").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);  // setuid dropped
  CHECK(unpack(tmp, {{"bin/tool", 'd'}}).find("is a folder where the package already put a file or link") != std::string::npos);
}

TEST_CASE("unpack: hard links only to files the package wrote; data never through a link", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  write_atomic(tmp / "outside", "secret").value_or_throw();
  SECTION("to a file outside, or one not written") {
    CHECK(unpack(tmp, {{"h", 'h', "/etc/passwd"}}).find("entry 'h' is a hard link to '/etc/passwd', outside the package") != std::string::npos);
    CHECK(unpack(tmp, {{"h", 'h', "../outside"}}).find("outside the package") != std::string::npos);
    CHECK(unpack(tmp, {{"h", 'h', "nothing"}}).find("which is no file the package wrote before it") != std::string::npos);
  }
  SECTION("a pair: the data on the second name reaches both, by a new file") {
    write_atomic(tmp / "rpm-like", archive_of({{"usr/a", 'f', ""}, {"usr/b", 'h', "usr/a", 0644, true}}, Format::Cpio))
        .value_or_throw();
    auto r = unpack_rpm(tmp / "rpm-like", tmp / "out");
    REQUIRE(r.ok());
    CHECK(read_file(tmp / "out/usr/a").value() == "linked data");
    CHECK(read_file(tmp / "out/usr/b").value() == "linked data");
    CHECK(fs::equivalent(tmp / "out/usr/a", tmp / "out/usr/b"));
    CHECK(read_file(tmp / "outside").value() == "secret");
  }
  SECTION("a link set whose first name became a link is no file the package wrote") {
    CHECK(unpack(tmp, {{"a", 'f', "x"}, {"a", 'l', "/etc/passwd"}, {"b", 'h', "a", 0644, true}})
              .find("no file the package wrote") != std::string::npos);
  }
}

TEST_CASE("unpack: bounds and damaged packages", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  UnpackLimits few;
  few.max_entries = 2;
  CHECK(unpack(tmp, {{"a", 'f', "1"}, {"b", 'f', "2"}, {"c", 'f', "3"}}, few).find("more than 2 entries") != std::string::npos);
  UnpackLimits small;
  small.max_bytes = 1 << 20;
  CHECK(unpack(tmp, {{"big", 'f', std::string(2 << 20, 'x')}}, small).find("unpacks to more than 1 MiB") != std::string::npos);
  write_atomic(tmp / "no.deb", archive_of({{"debian-binary", 'f', "2.0\n"}}, Format::Ar)).value_or_throw();
  CHECK(unpack_deb(tmp / "no.deb", tmp / "o2").error().message.find("no data.tar member") != std::string::npos);
  write_atomic(tmp / "junk.deb", "not an ar archive").value_or_throw();
  CHECK(unpack_deb(tmp / "junk.deb", tmp / "o3").error().message.find("not a Debian package") != std::string::npos);
}

TEST_CASE("kernel headers: a tree behind an absolute link is never reached", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  // A "kernel tree" outside the sandbox, as the attack's target.
  fs::create_directories(tmp / "outside/include/config");
  write_atomic(tmp / "outside/include/config/kernel.release", "6.1.0-evil\n").value_or_throw();
  write_atomic(tmp / "outside/Makefile", "include /usr/src/evil/Makefile\n").value_or_throw();
  std::string before = read_file(tmp / "outside/Makefile").value();
  write_atomic(tmp / "h.deb", deb_of({{"usr/src/evil/Makefile", 'f', "$(shell touch /tmp/pwned)\n"},
                                      {"usr/src/linux-headers-6.1.0-evil", 'l', (tmp / "outside").string()}}))
      .value_or_throw();
  auto r = unpack_kernel_headers({tmp / "h.deb"}, tmp / "sandbox");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("hold no kernel build tree") != std::string::npos);
  CHECK(read_file(tmp / "outside/Makefile").value() == before);
  // The link now names the sandbox's own (absent) copy of that path.
  CHECK(fs::read_symlink(tmp / "sandbox/usr/src/linux-headers-6.1.0-evil").string().rfind("../../", 0) == 0);
}
