#include "node/facts.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>

#include "common/strings.hpp"
#include "recipes/recipe.hpp"
#include "signing/module_sign.hpp"

namespace gb::node {

namespace fs = std::filesystem;

namespace {

// A file under --root we read: regular files only (a FIFO or device at
// etc/os-release must not hang or feed us), opened without blocking.
class NodeFile {
public:
  explicit NodeFile(const fs::path& p) : m_fd(::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) {
    struct stat st {};
    if (m_fd >= 0 && (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode))) close();
    if (m_fd >= 0) m_size = static_cast<std::uint64_t>(st.st_size);
  }
  NodeFile(const NodeFile&) = delete;
  NodeFile& operator=(const NodeFile&) = delete;
  ~NodeFile() { close(); }
  explicit operator bool() const { return m_fd >= 0; }
  std::uint64_t size() const { return m_size; }  // 4096 or 0 for sysfs and procfs files
  // Up to n bytes at off (fewer at the end of the file).
  std::string read(std::uint64_t off, std::size_t n) const {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (m_fd >= 0 && got < n) {
      ssize_t r = ::pread(m_fd, out.data() + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }

private:
  void close() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }
  int m_fd;
  std::uint64_t m_size = 0;
};

// Small files only (sysfs, procfs, os-release): a bounded read.
std::string slurp(const fs::path& p, std::size_t limit = 1 << 16) {
  NodeFile f(p);
  return f ? f.read(0, limit) : std::string();
}

std::string first_line(const fs::path& p) {
  std::string s = slurp(p);
  return std::string(trim(s.substr(0, s.find('\n'))));
}

fs::path under(const fs::path& root, const char* abs) { return root / (abs + 1); }

std::string hex4(std::string v) {
  v = to_lower(trim(v));
  if (starts_with(v, "0x")) v = v.substr(2);
  return v;
}

std::string unquote(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

void read_pci(NodeFacts& f) {
  std::error_code ec;
  fs::path dir = under(f.root, "/sys/bus/pci/devices");
  std::vector<PciFunction> gpus;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& d = it->path();
    if (hex4(first_line(d / "vendor")) != "10de") continue;
    std::string cls = hex4(first_line(d / "class"));  // "030200"
    std::string id = "10de:" + hex4(first_line(d / "device"));
    if (starts_with(cls, "0300") || starts_with(cls, "0302"))
      gpus.push_back({d.filename().string(), id});
    else if (starts_with(cls, "0680"))
      ++f.nvswitches;
  }
  std::sort(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  f.gpus = std::move(gpus);
}

void read_os(NodeFacts& f) {
  std::string text = slurp(under(f.root, "/etc/os-release"));
  if (text.empty()) text = slurp(under(f.root, "/usr/lib/os-release"));
  std::string id, version;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key(trim(line.substr(0, eq)));
    std::string value = unquote(std::string(trim(line.substr(eq + 1))));
    if (key == "ID") id = to_lower(value);
    if (key == "VERSION_ID") version = value;
  }
  if (!id.empty()) f.os = id + version;
}

void read_kernel(NodeFacts& f) {
  f.kernel = first_line(under(f.root, "/proc/sys/kernel/osrelease"));
  // It names a folder under lib/modules: `../..` would walk the real /.
  if (!f.kernel.empty() && !recipes::is_kernel_release(f.kernel)) {
    f.kernel_problem = "kernel release " + quote(f.kernel) + " (proc/sys/kernel/osrelease) is not a kernel release; not used";
    f.kernel.clear();
  }
  std::string machine = first_line(under(f.root, "/proc/sys/kernel/arch"));
  if (machine.empty() && f.root == "/") {
    utsname u{};
    if (uname(&u) == 0) machine = u.machine;
  }
  if (machine == "x86_64") f.platform = "linux/amd64";
  else if (machine == "aarch64") f.platform = "linux/arm64";
  else if (!machine.empty()) f.platform = "linux/" + machine;
}

void read_driver(NodeFacts& f) {
  f.proc_version = first_line(under(f.root, "/proc/driver/nvidia/version"));
  f.module_version = first_line(under(f.root, "/sys/module/nvidia/version"));
  if (!f.proc_version.empty()) f.open_module = f.proc_version.find("Open Kernel Module") != std::string::npos;
}

void read_dev(NodeFacts& f) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(under(f.root, "/dev"), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (starts_with(name, "nvidia") && name != "nvidia-caps") f.device_nodes.push_back(name);
  }
  for (auto it = fs::directory_iterator(under(f.root, "/dev/nvidia-caps"), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    f.cap_nodes.push_back(it->path().filename().string());
  std::sort(f.device_nodes.begin(), f.device_nodes.end());
  std::sort(f.cap_nodes.begin(), f.cap_nodes.end());
}

void read_processes(NodeFacts& f) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(under(f.root, "/proc"), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string pid = it->path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    std::string comm = first_line(it->path() / "comm");
    if (!comm.empty()) f.processes.push_back(comm);
  }
}

// depmod's search order: updates/ and extra/ before the distribution's tree.
void read_module_file(NodeFacts& f) {
  if (f.kernel.empty()) return;
  fs::path base = f.root / "lib/modules" / f.kernel;
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return;
  std::vector<fs::path> found;
  std::size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(base, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && ++seen < 200000; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == "nvidia.ko" || name == "nvidia.ko.xz" || name == "nvidia.ko.zst" || name == "nvidia.ko.gz") found.push_back(it->path());
  }
  if (found.empty()) return;
  auto rank = [&](const fs::path& p) {
    std::string rel = fs::relative(p, base, ec).string();
    return starts_with(rel, "updates/") ? 0 : starts_with(rel, "extra/") ? 1 : 2;
  };
  std::stable_sort(found.begin(), found.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  ModuleFile m;
  m.path = "/" + fs::relative(found.front(), f.root, ec).string();
  if (!ends_with(m.path, ".ko")) {
    m.compressed = true;
    m.problem = "compressed module (" + found.front().extension().string() + "): not read";
    f.module_file = m;
    return;
  }
  // Only what the checks need, each read bounded: the ELF header, section
  // table and .modinfo, and the signature at the end (a module is tens of
  // MB; a hostile root may hold a sparse GiB).
  NodeFile file(found.front());
  if (!file) {
    m.problem = "unreadable or not a regular file";
    f.module_file = m;
    return;
  }
  constexpr std::uint64_t k_tail = 64 * 1024;
  std::uint64_t tail_at = file.size() > k_tail ? file.size() - k_tail : 0;
  if (auto sig = signing::find_module_signature(file.read(tail_at, k_tail), m.path); sig && *sig) m.signed_module = true;
  auto read_at_file = [&](std::uint64_t off, std::size_t n) { return file.read(off, n); };
  for (auto& [k, v] : modinfo_fields(read_at_file, file.size())) {
    if (k == "vermagic") m.vermagic = v;
    if (k == "version") m.version = v;
  }
  if (m.vermagic.empty()) m.problem = "no .modinfo vermagic";
  f.module_file = m;
}

template <typename T>
bool read_at(const std::string& b, std::uint64_t off, T& out) {
  if (off > b.size() || b.size() - off < sizeof(T)) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> modinfo_fields(const std::string& elf) {
  return modinfo_fields([&](std::uint64_t off, std::size_t n) { return off < elf.size() ? elf.substr(off, n) : std::string(); },
                        elf.size());
}

std::vector<std::pair<std::string, std::string>> modinfo_fields(const std::function<std::string(std::uint64_t, std::size_t)>& read,
                                                                std::uint64_t file_size) {
  std::vector<std::pair<std::string, std::string>> out;
  constexpr std::uint64_t k_max_part = 1 << 20;  // section table, .shstrtab, .modinfo: each far smaller
  std::string head = read(0, 64);
  // ELF64, little endian only (x86_64 and aarch64 kernels).
  if (head.size() < 64 || head.compare(0, 4, "\x7f" "ELF") != 0 || head[4] != 2 || head[5] != 1) return out;
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(head, 0x28, shoff) || !read_at(head, 0x3A, shentsize) || !read_at(head, 0x3C, shnum) || !read_at(head, 0x3E, shstrndx))
    return out;
  if (shentsize < 64 || shstrndx >= shnum || std::uint64_t{shnum} * shentsize > k_max_part || shoff > file_size) return out;
  const std::string table = read(shoff, std::size_t{shnum} * shentsize);
  auto section = [&](std::uint16_t i, std::uint32_t& name, std::uint64_t& off, std::uint64_t& size) {
    std::uint64_t h = std::uint64_t{i} * shentsize;
    return read_at(table, h, name) && read_at(table, h + 0x18, off) && read_at(table, h + 0x20, size) && off <= file_size &&
           size <= file_size - off && size <= k_max_part;
  };
  std::uint32_t n = 0;
  std::uint64_t stroff = 0, strsize = 0;
  if (!section(shstrndx, n, stroff, strsize)) return out;
  const std::string strtab = read(stroff, strsize);
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::uint64_t off = 0, size = 0;
    if (!section(i, n, off, size) || n >= strtab.size()) continue;
    std::string_view name = std::string_view(strtab).substr(n);
    name = name.substr(0, name.find('\0'));
    if (name != ".modinfo") continue;
    const std::string data = read(off, size);
    for (std::size_t pos = 0; pos < data.size();) {
      std::size_t end = data.find('\0', pos);
      if (end == std::string::npos) end = data.size();
      std::string_view entry = std::string_view(data).substr(pos, end - pos);
      if (auto eq = entry.find('='); eq != std::string_view::npos)
        out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
      pos = end + 1;
    }
    break;
  }
  return out;
}

NodeFacts read_node_facts(const fs::path& root) {
  NodeFacts f;
  f.root = root;
  read_pci(f);
  read_os(f);
  read_kernel(f);
  read_driver(f);
  read_dev(f);
  read_processes(f);
  read_module_file(f);
  return f;
}

}  // namespace gb::node
