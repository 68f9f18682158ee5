#include "node-images/kbuild.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>

#include "common/files.hpp"
#include "common/process.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "node-images/unpack.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

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

Result<int> run_logged(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log, CommandRunner* runner) {
  {
    std::ofstream head(log, std::ios::app);
    head << "$ " << join(argv, " ") << "\n";
    if (!head) return op_error(log.string() + ": cannot write");
  }
  ProcessOptions po;
  po.cwd = cwd;
  po.log = log;
  auto r = (runner ? *runner : system_runner()).run(argv, po);
  if (!r) return r.error();
  return r->status;
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

Result<std::vector<KernelTree>> unpack_kernel_headers(const std::vector<fs::path>& debs, const fs::path& sandbox) {
  std::error_code ec;
  fs::create_directories(sandbox, ec);
  if (ec) return op_error(sandbox.string() + ": " + ec.message());
  // Flavours of one kernel ABI share their -common and kbuild packages, each
  // listed once per kernel: the same bytes are unpacked once (a header package
  // is ~10,000 files, and creating files is most of a driver build's cost).
  std::set<std::string> unpacked;
  for (const auto& deb : debs) {
    if (!fs::is_regular_file(deb, ec)) return input_error(deb.string() + ": no such header package");
    auto sha = signing::sha256_file_hex(deb);
    if (!sha) return sha.error();
    if (!unpacked.insert(*sha).second) continue;
    // unpack.hpp: every link stays inside the sandbox (Debian's absolute
    // /usr/src/... links are rewritten to their copy there).
    auto r = deb.extension() == ".rpm" ? unpack_rpm(deb, sandbox) : unpack_deb(deb, sandbox);
    if (!r) return r.error();
  }
  fs::path root = fs::canonical(sandbox, ec);
  if (ec) return op_error(sandbox.string() + ": " + ec.message());
  auto inside = [&](const fs::path& p) {
    fs::path c = fs::weakly_canonical(p, ec);
    auto rel = c.lexically_relative(root);
    return !ec && !rel.empty() && *rel.begin() != "..";
  };
  std::vector<KernelTree> trees;
  // Debian/Ubuntu: usr/src/linux-headers-<kver>; RHEL kernel-devel: usr/src/kernels/<kver>.
  for (const fs::path& src : {sandbox / "usr/src", sandbox / "usr/src/kernels"})
    if (fs::is_directory(src, ec))
      for (const auto& d : fs::directory_iterator(src)) {
        if (!fs::exists(d.path() / "include/generated/utsrelease.h", ec) && !fs::exists(d.path() / "include/config/kernel.release", ec)) continue;
        auto t = open_kernel_tree(d.path());
        if (!t) return t.error();
        if (!inside(t->dir)) return input_error(d.path().string() + ": the kernel tree resolves outside the sandbox; refused");
        trees.push_back(*t);
      }
  if (trees.empty())
    return input_error("the header packages hold no kernel build tree (usr/src/*/include/config/kernel.release); "
                       "pass linux-headers-<kver> with its -common package, or kernel-devel-<kver>.rpm");
  // Debian's top Makefile includes the -common tree by absolute path: pointed
  // at the sandbox's copy, when that path stays below usr/src and is there.
  for (const auto& t : trees) {
    fs::path makefile = t.dir / "Makefile";
    if (fs::is_symlink(makefile, ec) || !fs::is_regular_file(makefile, ec) || !inside(makefile))
      return input_error(makefile.string() + ": not a regular file in the sandbox; refused");
    auto mk = read_file(makefile, 1 << 20);
    if (!mk) return mk.error();
    std::string text = *mk, prefix = "include /usr/src/";
    for (auto p = text.find(prefix); p != std::string::npos; p = text.find(prefix, p + 1)) {
      auto end = text.find('\n', p);
      fs::path target(text.substr(p + 8, end == std::string::npos ? std::string::npos : end - p - 8));
      bool plain = std::none_of(target.begin(), target.end(), [](const fs::path& part) { return part == ".."; });
      fs::path copy = sandbox / target.relative_path();
      if (plain && fs::is_regular_file(copy, ec) && inside(copy)) text.replace(p + 8, 0, root.string());
    }
    if (text != *mk)
      if (auto r = write_atomic(makefile, text); !r) return r.error();
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
  // and so the build ID): the same inputs then give the same modules on any
  // machine. Unpacked headers read as if installed (/usr/src/linux-headers-...).
  std::vector<std::string> cmd = {"make", "-C", (work / dir).string(), "modules", "SYSSRC=" + tree.dir.string(),
                                  "KCFLAGS=-ffile-prefix-map=" + work.string() + "=/usr/src/nvidia-" + installer.manifest.version +
                                      " -ffile-prefix-map=" + (sandbox / "headers").string() + "/=/",
                                  "-j", std::to_string(std::max(1, options.jobs))};
  log_info("building " + dir + " modules for " + tree.release + " (log: " + log.string() + ")");
  auto rc = run_logged(cmd, work / dir, log, options.runner);
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

}  // namespace gb::node_images
