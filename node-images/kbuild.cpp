#include "node-images/kbuild.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"

namespace gb {

namespace fs = std::filesystem;

Result<KernelTree> open_kernel_tree(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return input_error(dir.string() + ": no such kernel build tree");
  KernelTree t;
  t.dir = fs::canonical(dir, ec);
  if (ec) return input_error(dir.string() + ": " + ec.message());
  // UTS_RELEASE is what vermagic carries; Debian's kernel.release holds the
  // upstream version (6.1.192) instead of the package's (6.1.0-57-amd64).
  if (auto uts = read_file(t.dir / "include/generated/utsrelease.h")) {
    auto q = uts->find('"');
    auto e = q == std::string::npos ? q : uts->find('"', q + 1);
    if (e != std::string::npos) t.release = uts->substr(q + 1, e - q - 1);
  }
  if (t.release.empty()) {
    auto rel = read_file(t.dir / "include/config/kernel.release");
    if (!rel) return input_error(dir.string() + ": not a kernel build tree (no include/generated/utsrelease.h or include/config/kernel.release)");
    t.release = std::string(trim(*rel));
  }
  if (t.release.empty()) return input_error(dir.string() + ": the kernel release is empty");
  if (!fs::exists(t.dir / "Makefile", ec)) return input_error(dir.string() + ": not a kernel build tree (no Makefile)");
  return t;
}

Result<int> run_logged(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return op_error(log.string() + ": " + std::strerror(errno));
  {
    std::string line = "$ " + join(argv, " ") + "\n";
    if (::write(fd, line.data(), line.size()) < 0) {}
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return op_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    int nul = ::open("/dev/null", O_RDONLY);
    if (nul >= 0) ::dup2(nul, 0);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return op_error(std::string("waitpid: ") + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::string tail_lines(const fs::path& file, int n) {
  std::ifstream in(file);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > n) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "\n  | " + l;
  return out;
}

namespace {

// An rpm's cpio payload, through libarchive, refusing absolute paths, `..`
// and links that lead out (kernel-devel: usr/src/kernels/<kver>/).
Result<void> unpack_rpm(const fs::path& rpm, const fs::path& sandbox) {
  detail::ArchiveReader in(archive_read_new());
  archive_read_support_filter_all(in.get());
  archive_read_support_format_cpio(in.get());
  if (archive_read_open_filename(in.get(), rpm.c_str(), 1 << 16) != ARCHIVE_OK)
    return input_error(rpm.string() + ": not an rpm package: " + archive_error_string(in.get()));
  detail::ArchiveWriter out(archive_write_disk_new());
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_TIME);
  archive_entry* e = nullptr;
  for (int rc; (rc = archive_read_next_header(in.get(), &e)) != ARCHIVE_EOF;) {
    if (rc != ARCHIVE_OK) return input_error(rpm.string() + ": " + archive_error_string(in.get()));
    std::string name = archive_entry_pathname(e);
    while (starts_with(name, "./")) name.erase(0, 2);
    auto type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
      return input_error(rpm.string() + ": " + name + " is not a file, folder or link; refused");
    archive_entry_set_pathname(e, (sandbox / name).c_str());
    if (archive_write_header(out.get(), e) != ARCHIVE_OK)
      return input_error(rpm.string() + ": " + name + ": " + archive_error_string(out.get()));
    const void* buf;
    size_t size;
    la_int64_t offset;
    while ((rc = archive_read_data_block(in.get(), &buf, &size, &offset)) == ARCHIVE_OK)
      if (archive_write_data_block(out.get(), buf, size, offset) != ARCHIVE_OK)
        return op_error(rpm.string() + ": " + name + ": " + archive_error_string(out.get()));
    if (rc != ARCHIVE_EOF) return input_error(rpm.string() + ": " + name + ": " + archive_error_string(in.get()));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) return op_error(rpm.string() + ": " + archive_error_string(out.get()));
  return {};
}

}  // namespace

Result<std::vector<KernelTree>> unpack_kernel_headers(const std::vector<fs::path>& debs, const fs::path& sandbox) {
  std::error_code ec;
  fs::create_directories(sandbox, ec);
  fs::path log = sandbox / "dpkg-deb.log";
  for (const auto& deb : debs) {
    if (!fs::is_regular_file(deb, ec)) return input_error(deb.string() + ": no such header package");
    if (deb.extension() == ".rpm") {
      if (auto r = unpack_rpm(deb, sandbox); !r) return r.error();
      continue;
    }
    auto rc = run_logged({"dpkg-deb", "-x", fs::absolute(deb).string(), sandbox.string()}, {}, log);
    if (!rc) return rc.error();
    if (*rc != 0) return input_error(deb.string() + ": dpkg-deb -x failed:" + tail_lines(log, 5));
  }
  // Debian's build tree links to the -common tree and linux-kbuild by absolute
  // path (/usr/src/..., /usr/lib/linux-kbuild-6.1/...): point such links into
  // the sandbox when their target was unpacked there.
  std::vector<fs::path> links;
  for (const auto& e : fs::recursive_directory_iterator(sandbox, fs::directory_options::skip_permission_denied))
    if (e.is_symlink(ec)) links.push_back(e.path());
  for (const auto& l : links) {
    fs::path target = fs::read_symlink(l, ec);
    if (ec || !target.is_absolute()) continue;
    fs::path inside = sandbox / target.relative_path();
    if (!fs::exists(fs::symlink_status(inside, ec))) continue;
    fs::remove(l, ec);
    fs::create_symlink(inside, l, ec);
    if (ec) return op_error(l.string() + ": " + ec.message());
  }
  std::vector<KernelTree> trees;
  // Debian/Ubuntu: usr/src/linux-headers-<kver>; RHEL kernel-devel: usr/src/kernels/<kver>.
  for (const fs::path& src : {sandbox / "usr/src", sandbox / "usr/src/kernels"})
    if (fs::is_directory(src, ec))
      for (const auto& d : fs::directory_iterator(src)) {
        if (!fs::exists(d.path() / "include/generated/utsrelease.h", ec) && !fs::exists(d.path() / "include/config/kernel.release", ec)) continue;
        auto t = open_kernel_tree(d.path());
        if (!t) return t.error();
        trees.push_back(*t);
      }
  if (trees.empty())
    return input_error("the header packages hold no kernel build tree (usr/src/*/include/config/kernel.release); "
                       "pass linux-headers-<kver> with its -common package");
  // Its top Makefile includes the -common tree by absolute path as well.
  for (const auto& t : trees) {
    auto mk = read_file(t.dir / "Makefile");
    if (!mk) return mk.error();
    std::string text = *mk, prefix = "include /usr/src/";
    for (auto p = text.find(prefix); p != std::string::npos; p = text.find(prefix, p + 1)) {
      auto end = text.find('\n', p);
      std::string target = text.substr(p + 8, end == std::string::npos ? std::string::npos : end - p - 8);
      if (fs::exists(sandbox / fs::path(target).relative_path(), ec))
        text.replace(p + 8, 0, fs::absolute(sandbox).string());
    }
    if (text != *mk)
      if (auto r = write_atomic(t.dir / "Makefile", text); !r) return r.error();
  }
  std::sort(trees.begin(), trees.end(), [](const auto& a, const auto& b) { return a.release < b.release; });
  return trees;
}

Result<std::map<std::string, std::string>> read_modinfo(std::string_view elf, const std::string& source) {
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0)
    return input_error(source + ": not an ELF file");
  if (static_cast<unsigned char>(elf[EI_CLASS]) != ELFCLASS64) return input_error(source + ": not a 64-bit ELF module");
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff + std::uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > elf.size() ||
      eh.e_shstrndx >= eh.e_shnum)
    return input_error(source + ": damaged ELF section table");
  auto shdr = [&](unsigned i) {
    Elf64_Shdr s;
    std::memcpy(&s, elf.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof s);
    return s;
  };
  Elf64_Shdr strtab = shdr(eh.e_shstrndx);
  if (strtab.sh_offset + strtab.sh_size > elf.size()) return input_error(source + ": damaged ELF string table");
  std::map<std::string, std::string> info;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s = shdr(i);
    if (s.sh_name >= strtab.sh_size) continue;
    const char* name = elf.data() + strtab.sh_offset + s.sh_name;
    if (std::strncmp(name, ".modinfo", strtab.sh_size - s.sh_name) != 0) continue;
    if (s.sh_offset + s.sh_size > elf.size()) return input_error(source + ": damaged .modinfo section");
    std::string_view data(elf.data() + s.sh_offset, s.sh_size);
    std::size_t pos = 0;
    while (pos < data.size()) {
      auto end = data.find('\0', pos);
      if (end == std::string_view::npos) end = data.size();
      std::string_view kv = data.substr(pos, end - pos);
      if (auto eq = kv.find('='); eq != std::string_view::npos)
        info.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
      pos = end + 1;
    }
    return info;
  }
  return input_error(source + ": no .modinfo section (not a kernel module)");
}

std::string vermagic_release(const std::string& vermagic) {
  auto sp = vermagic.find(' ');
  return vermagic.substr(0, sp);
}

Result<std::vector<BuiltModule>> build_modules(const Installer& installer, const KernelTree& tree, const fs::path& sandbox,
                                               const ModuleBuildOptions& options) {
  std::string dir = options.module_type == "proprietary" ? "kernel" : "kernel-open";
  if (options.module_type != "open" && options.module_type != "proprietary")
    return input_error("kernelModuleType '" + options.module_type + "': expected open or proprietary");
  std::error_code ec;
  fs::path src = installer.root / dir;
  if (!fs::is_directory(src, ec))
    return input_error(installer.source + ": no " + dir + "/ folder for kernelModuleType " + options.module_type);
  fs::path work = sandbox / ("modules-" + tree.release);
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  fs::copy(src, work / dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) return op_error("copying " + src.string() + " to the sandbox: " + ec.message());
  fs::path log = work / "make.log";
  // The sandbox's random name must not reach the objects (debug info, __FILE__,
  // and so the build ID): the same inputs then give the same modules.
  std::vector<std::string> cmd = {"make", "-C", (work / dir).string(), "modules", "SYSSRC=" + tree.dir.string(),
                                  "KCFLAGS=-ffile-prefix-map=" + work.string() + "=/usr/src/nvidia-" + installer.manifest.version,
                                  "-j", std::to_string(std::max(1, options.jobs))};
  log::info("building " + dir + " modules for " + tree.release + " (log: " + log.string() + ")");
  auto rc = run_logged(cmd, work / dir, log);
  if (!rc) return rc.error();
  if (*rc != 0)
    return op_error("module build for kernel " + tree.release + " failed (exit " + std::to_string(*rc) + "): " + join(cmd, " ") +
                    "\nlast lines of " + log.string() + ":" + tail_lines(log, 15));
  std::vector<BuiltModule> out;
  std::string target = options.target_release.empty() ? tree.release : options.target_release;
  for (const auto& name : installer.manifest.modules) {
    fs::path ko;
    for (const auto& cand : {work / dir / (name + ".ko"), work / dir / name / (name + ".ko")})
      if (fs::exists(cand, ec)) ko = cand;
    if (ko.empty())
      return op_error("module build for kernel " + tree.release + " did not produce " + name + ".ko (listed on .manifest line 4)");
    auto bytes = read_file(ko);
    if (!bytes) return bytes.error();
    auto info = read_modinfo(*bytes, ko.string());
    if (!info) return info.error();
    std::string vm = (*info)["vermagic"];
    if (vermagic_release(vm) != target)
      return input_error(name + ".ko was built for kernel '" + vermagic_release(vm) + "' (vermagic '" + vm + "') but the target kernel is " +
                         target + ": the kernel tree " + tree.dir.string() + " is for another kernel");
    out.push_back({name, ko, vm});
  }
  return out;
}

}  // namespace gb
