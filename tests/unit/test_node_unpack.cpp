// Unpacking packages we did not make (node-images/unpack.hpp): nothing in a
// .deb, an rpm's cpio or a makeself payload resolves outside the folder.
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <set>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "fixtures.hpp"
#include "node-images/kbuild.hpp"
#include "node-images/unpack.hpp"

using namespace gb;
using namespace gb::node_images;
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
  gb::detail::ArchiveWriter w(archive_write_new());
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
    gb::detail::ArchiveEntry ae(archive_entry_new());
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

// One newc cpio header and name, padded, as an rpm payload has them;
// `namesize` 0 means the name's own size.
std::string cpio_entry(const std::string& name, unsigned mode, const std::string& data, unsigned nlink = 1, unsigned ino = 1,
                       unsigned namesize = 0, const char* magic = "070701") {
  char h[111];
  unsigned ns = namesize ? namesize : static_cast<unsigned>(name.size() + 1);
  std::snprintf(h, sizeof h, "%s%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", magic, ino, mode, 0u, 0u, nlink, 0u,
                static_cast<unsigned>(data.size()), 0u, 0u, 0u, 0u, ns, 0u);
  std::string out(h, 110);
  out += name;
  out += '\0';
  out.resize((out.size() + 3) / 4 * 4, '\0');
  out += data;
  out.resize((out.size() + 3) / 4 * 4, '\0');
  return out;
}

std::string cpio_unpack(const gbtest::TempDir& tmp, const std::string& payload) {
  write_atomic(tmp / "p.rpm", payload).value_or_throw();
  auto r = unpack_rpm(tmp / "p.rpm", tmp / "out");
  return r ? "" : r.error().message;
}

}  // namespace

TEST_CASE("unpack: an rpm's cpio payload, read with bounded fields", "[node-images][unpack][hostile]") {
  gbtest::TempDir tmp;
  const std::string trailer = cpio_entry("TRAILER!!!", 0, "");
  SECTION("files, folders, links; every name of a link set gets the data on its last entry") {
    std::string p = cpio_entry("usr", 040755, "") + cpio_entry("usr/x", 0100644, "x data") +
                    cpio_entry("usr/l", 0120777, "/usr/x") + cpio_entry("usr/a", 0100644, "", 3, 7) +
                    cpio_entry("usr/b", 0100644, "", 3, 7) + cpio_entry("usr/c", 0100755, "linked", 3, 7) + trailer;
    REQUIRE(cpio_unpack(tmp, p) == "");
    CHECK(read_file(tmp / "out/usr/x").value() == "x data");
    CHECK(fs::read_symlink(tmp / "out/usr/l") == "../usr/x");
    for (const char* n : {"a", "b", "c"}) CHECK(read_file(tmp / "out/usr" / n).value() == "linked");
    CHECK(fs::equivalent(tmp / "out/usr/a", tmp / "out/usr/b"));
    CHECK(fs::equivalent(tmp / "out/usr/b", tmp / "out/usr/c"));
  }
  SECTION("a name size past PATH_MAX is refused before anything is allocated for it") {
    auto m = cpio_unpack(tmp, cpio_entry("a", 0100644, "", 1, 1, 0x7fffffff) + trailer);
    CHECK_THAT(m, Catch::Contains("damaged cpio payload at byte 0: a name of 2147483647 bytes"));
  }
  SECTION("names, links and headers that are not what they say") {
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("a", 0100644, "", 1, 1, 1) + trailer), Catch::Contains("not one NUL-terminated string"));
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("l", 0120777, "") + trailer), Catch::Contains("link 'l' has a target of 0 bytes"));
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("l", 0120777, "../../etc") + trailer), Catch::Contains("entry 'l' links to '../../etc', outside the package"));
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("dev", 020644, "") + trailer), Catch::Contains("entry 'dev' is not a file, folder or link"));
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("a", 0100644, "x", 1, 1, 0, "07070X") + trailer), Catch::Contains("large-file payload (07070X)"));
    std::string bad = cpio_entry("a", 0100644, "x");
    bad[6] = 'g';
    CHECK_THAT(cpio_unpack(tmp, bad), Catch::Contains("a header field is not hexadecimal"));
    CHECK_THAT(cpio_unpack(tmp, "not a package at all"), Catch::Contains("damaged cpio payload at byte 0"));
  }
  SECTION("a payload cut short, or one that says its file is past the bound") {
    std::string p = cpio_entry("a", 0100644, std::string(4000, 'x')) + trailer;
    CHECK_THAT(cpio_unpack(tmp, p.substr(0, 2000)), Catch::Contains("truncated or damaged in 'a': the payload ends early"));
    CHECK_THAT(cpio_unpack(tmp, cpio_entry("a", 0100644, "") + trailer.substr(0, 50)), Catch::Contains("damaged cpio payload at byte 112: the payload ends early"));
    write_atomic(tmp / "big.rpm", cpio_entry("a", 0100644, std::string(2 << 20, 'x')) + trailer).value_or_throw();
    UnpackLimits small;
    small.max_bytes = 1 << 20;
    CHECK_THAT(unpack_rpm(tmp / "big.rpm", tmp / "o2", small).error().message, Catch::Contains("unpacks to more than 1 MiB"));
  }
}

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

TEST_CASE("unpack: only the entries asked for, from a .deb and an rpm", "[node-images][unpack]") {
  gbtest::TempDir tmp;
  UnpackLimits one;
  one.only = {"usr/src/linux-headers-6.1/.config"};
  REQUIRE(unpack(tmp, {{"usr/src/linux-headers-6.1/", 'd'},
                       {"./usr/src/linux-headers-6.1/Makefile", 'f', "all:\n"},
                       {"./usr/src/linux-headers-6.1/.config", 'f', "CONFIG_CC_VERSION_TEXT=\"gcc-12\"\n"},
                       {"usr/src/linux-headers-6.1/include/x.h", 'f', "#define X\n"},
                       {"lib/modules/6.1/build", 'l', "/usr/src/linux-headers-6.1"}},
                 one) == "");
  CHECK(read_file(tmp / "out/usr/src/linux-headers-6.1/.config").value() == "CONFIG_CC_VERSION_TEXT=\"gcc-12\"\n");
  std::vector<std::string> written;
  for (const auto& e : fs::recursive_directory_iterator(tmp / "out"))
    if (!e.is_directory()) written.push_back(fs::relative(e.path(), tmp / "out").string());
  CHECK(written == std::vector<std::string>{"usr/src/linux-headers-6.1/.config"});
  // Entries still count against the bound, written or not; a refused path is still refused.
  CHECK(unpack(tmp, {{"../etc/passwd", 'f', "x"}}, one).find("climbs out") != std::string::npos);

  // rpm: the cpio data of the others is read past.
  std::string payload = cpio_entry("./usr/src/kernels/6.1/Makefile", 0100644, std::string(70000, 'm')) +
                        cpio_entry("./usr/src/kernels/6.1/.config", 0100644, "CONFIG_X=y\n", 1, 2) +
                        cpio_entry("TRAILER!!!", 0, "");
  write_atomic(tmp / "q.rpm", payload).value_or_throw();
  UnpackLimits rpm_one;
  rpm_one.only = {"usr/src/kernels/6.1/.config"};
  REQUIRE(unpack_rpm(tmp / "q.rpm", tmp / "rpm-out", rpm_one).ok());
  CHECK(read_file(tmp / "rpm-out/usr/src/kernels/6.1/.config").value() == "CONFIG_X=y\n");
  CHECK_FALSE(fs::exists(tmp / "rpm-out/usr/src/kernels/6.1/Makefile"));
}
