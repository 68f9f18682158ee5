#include "node-images/installer.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "common/archive_raii.hpp"
#include "node-images/unpack_detail.hpp"
#include "common/strings.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;

std::string_view to_string(MakeselfFlavour f) { return f == MakeselfFlavour::Upstream ? "makeself" : "nvidia-makeself"; }

std::string_view to_string(PayloadCompression c) {
  switch (c) {
    case PayloadCompression::Gzip: return "gzip";
    case PayloadCompression::Xz: return "xz";
    case PayloadCompression::Zstd: return "zstd";
    case PayloadCompression::Bzip2: return "bzip2";
    case PayloadCompression::None: return "none";
  }
  return "none";
}

namespace {

constexpr std::size_t k_header_window = 256 * 1024;

// Value of `name=...` on a header line, quotes removed.
std::optional<std::string> header_value(std::string_view line, std::string_view name) {
  if (!starts_with(line, name) || line.size() <= name.size() || line[name.size()] != '=') return std::nullopt;
  std::string v(trim(line.substr(name.size() + 1)));
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

std::optional<std::uint64_t> to_u64(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// Byte offset of the start of 1-based line `n` (n-1 newlines skipped).
std::optional<std::uint64_t> line_start(std::string_view bytes, std::uint64_t n) {
  std::uint64_t pos = 0;
  for (std::uint64_t i = 1; i < n; ++i) {
    auto nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) return std::nullopt;
    pos = nl + 1;
  }
  return pos;
}

PayloadCompression sniff(std::string_view p) {
  auto has = [&](std::string_view magic) { return p.substr(0, magic.size()) == magic; };
  if (has("\x1f\x8b")) return PayloadCompression::Gzip;
  if (has(std::string_view("\xfd" "7zXZ\0", 6))) return PayloadCompression::Xz;
  if (has("\x28\xb5\x2f\xfd")) return PayloadCompression::Zstd;
  if (has("BZh")) return PayloadCompression::Bzip2;
  return PayloadCompression::None;
}

struct PayloadSource {
  std::FILE* f = nullptr;
  std::uint64_t left = 0;  // bytes still allowed
  char buf[64 * 1024];
};

la_ssize_t payload_read(archive*, void* data, const void** out) {
  auto* s = static_cast<PayloadSource*>(data);
  std::size_t want = sizeof(s->buf);
  if (s->left < want) want = static_cast<std::size_t>(s->left);
  if (want == 0) return 0;
  std::size_t got = std::fread(s->buf, 1, want, s->f);
  s->left -= got;
  *out = s->buf;
  return static_cast<la_ssize_t>(got);
}

struct TypeFlags {
  bool arch = false, path = false, symlink = false, inherit = false;
};

// nvidia-installer's manifest.c type table: which optional fields each TYPE
// carries (has_arch, has_path, is_symlink, inherit_path). The table of
// 590.48.01, plus the types dropped since 415.27 (LIBGL_LA, ALLOCATOR_JSON,
// NVIFR_*, XMODULE_*) and the older OPENGL_HEADER and VDPAU_WRAPPER_*, with
// the flags of the last tag that had them.
const std::map<std::string, TypeFlags, std::less<>>& type_table() {
  constexpr TypeFlags none{}, arch{true, false, false, false}, path{false, true, false, false},
      arch_path{true, true, false, false}, arch_link{true, false, true, false}, path_link{false, true, true, false},
      arch_path_link{true, true, true, false}, link{false, false, true, false}, inherit{false, false, false, true};
  static const std::map<std::string, TypeFlags, std::less<>> t = {
      {"KERNEL_MODULE_SRC", inherit},       {"KERNEL_MODULE", none},
      {"CUDA_ICD", none},                   {"OPENGL_LIB", arch},
      {"WINE_LIB", arch},                   {"CUDA_LIB", arch_path},
      {"OPENCL_LIB", arch_path},            {"OPENCL_WRAPPER_LIB", arch_path},
      {"OPENCL_LIB_SYMLINK", arch_path_link}, {"OPENCL_WRAPPER_SYMLINK", arch_path_link},
      {"TLS_LIB", arch_path},               {"UTILITY_LIB", arch},
      {"GBM_BACKEND_LIB", arch},            {"DOCUMENTATION", path},
      {"APPLICATION_PROFILE", path},        {"MANPAGE", path},
      {"EXPLICIT_PATH", path},              {"OPENGL_SYMLINK", arch_link},
      {"CUDA_SYMLINK", arch_path_link},     {"UTILITY_LIB_SYMLINK", arch_link},
      {"GBM_BACKEND_LIB_SYMLINK", arch_link}, {"INSTALLER_BINARY", none},
      {"UTILITY_BINARY", none},             {"UTILITY_BIN_SYMLINK", link},
      {"DOT_DESKTOP", path},                {"ICON", path},
      {"XMODULE_SHARED_LIB", path},         {"GLX_MODULE_SHARED_LIB", path},
      {"GLX_MODULE_SYMLINK", path_link},    {"VDPAU_LIB", arch_path},
      {"VDPAU_SYMLINK", arch_path_link},    {"NVCUVID_LIB", arch},
      {"NVCUVID_LIB_SYMLINK", arch_link},   {"ENCODEAPI_LIB", arch},
      {"ENCODEAPI_LIB_SYMLINK", arch_link}, {"VGX_LIB", none},
      {"VGX_LIB_SYMLINK", link},            {"GRID_LIB", path},
      {"GRID_LIB_SYMLINK", path_link},      {"NVIDIA_MODPROBE", path},
      {"NVIDIA_MODPROBE_MANPAGE", path},    {"MODULE_SIGNING_KEY", none},
      {"XORG_OUTPUTCLASS_CONFIG", none},    {"DKMS_CONF", inherit},
      {"GLVND_LIB", arch},                  {"GLVND_SYMLINK", arch_link},
      {"GLX_CLIENT_LIB", arch},             {"GLX_CLIENT_SYMLINK", arch_link},
      {"VULKAN_ICD_JSON", path},            {"GLVND_EGL_ICD_JSON", none},
      {"EGL_CLIENT_LIB", arch},             {"EGL_CLIENT_SYMLINK", arch_link},
      {"EGL_EXTERNAL_PLATFORM_JSON", none}, {"FLEXERA_LIB", path},
      {"FLEXERA_LIB_SYMLINK", path_link},   {"INTERNAL_UTILITY_BINARY", arch},
      {"INTERNAL_UTILITY_LIB", arch},       {"INTERNAL_UTILITY_DATA", none},
      {"FIRMWARE", inherit},                {"SYSTEMD_UNIT", none},
      {"SYSTEMD_UNIT_SYMLINK", path_link},  {"SYSTEMD_SLEEP_SCRIPT", none},
      {"OPENGL_DATA", path},                {"VULKANSC_ICD_JSON", path},
      {"SANDBOXUTILS_FILELIST_JSON", path},
      // Dropped from the table: 470.256.02 and before ...
      {"NVIFR_LIB", arch},                  {"NVIFR_LIB_SYMLINK", arch_link},
      {"ALLOCATOR_JSON", none},             {"LIBGL_LA", arch},
      // ... 415.27 and before ...
      {"XMODULE_SYMLINK", path_link},       {"XMODULE_NEWSYM", path_link},
      // ... 396.54 and 358.16 and before.
      {"OPENGL_HEADER", path},              {"VDPAU_WRAPPER_LIB", arch_path},
      {"VDPAU_WRAPPER_SYMLINK", arch_path_link},
  };
  return t;
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

Result<MakeselfHeader> parse_makeself_header(std::string_view bytes, std::uint64_t file_size, const std::string& source) {
  if (!starts_with(bytes, "#!")) return input_error(source + ": not a makeself installer (no #! line)");
  MakeselfHeader h;
  h.file_size = file_size;
  std::optional<std::uint64_t> skip;
  bool fork = false;
  std::uint64_t filesizes = 0;
  bool have_filesizes = false;
  // Only the first lines hold the variables; stop at the first function or
  // 200 lines so that a payload that happens to contain "skip=" is not read.
  std::size_t pos = 0;
  for (int n = 1; n <= 200 && pos < bytes.size(); ++n) {
    auto nl = bytes.find('\n', pos);
    std::string_view line = bytes.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? bytes.size() : nl + 1;
    if (auto v = header_value(line, "skip"); v && !skip) {
      skip = to_u64(*v);
      if (!skip) return input_error(source + ": makeself header line " + std::to_string(n) + ": bad skip value '" + *v + "'");
    } else if (header_value(line, "skip_decompress") || header_value(line, "version_string")) {
      fork = true;
    } else if (auto fv = header_value(line, "filesizes")) {
      have_filesizes = true;
      for (const auto& part : split(*fv, ' ')) {
        if (part.empty()) continue;
        auto s = to_u64(part);
        if (!s) return input_error(source + ": makeself header: bad filesizes '" + *fv + "'");
        filesizes += *s;
      }
    } else if (auto lv = header_value(line, "label"); lv && h.label.empty()) {
      h.label = *lv;
    }
    if (nl == std::string_view::npos) break;
  }
  if (!skip) {
    if (file_size <= bytes.size() && bytes.size() < 512)
      return input_error(source + ": truncated: the makeself header ends before its skip= line");
    return input_error(source + ": not a makeself installer: no skip= line in its header (makeself before 2.4 is not supported)");
  }
  h.flavour = fork ? MakeselfFlavour::NvidiaFork : MakeselfFlavour::Upstream;
  // Upstream: payload after `skip` lines; NVIDIA's fork: at line `skip`.
  auto off = line_start(bytes, fork ? *skip : *skip + 1);
  if (!off || *off >= file_size)
    return input_error(source + ": truncated: the header says the archive starts at line " + std::to_string(fork ? *skip : *skip + 1) +
                       " but the file has only " + std::to_string(file_size) + " bytes");
  h.payload_offset = *off;
  if (have_filesizes) {
    h.payload_size = filesizes;
    if (h.payload_offset + filesizes > file_size)
      return input_error(source + ": truncated: the header says the payload is " + std::to_string(filesizes) +
                         " bytes from offset " + std::to_string(h.payload_offset) + ", but the file has only " +
                         std::to_string(file_size) + " bytes");
  }
  if (*off < bytes.size()) h.compression = sniff(bytes.substr(*off));
  return h;
}

Result<MakeselfHeader> read_makeself_header(const fs::path& run) {
  std::error_code ec;
  auto size = fs::file_size(run, ec);
  if (ec) return input_error(run.string() + ": " + ec.message());
  std::ifstream in(run, std::ios::binary);
  if (!in) return input_error(run.string() + ": cannot open");
  std::string buf(std::min<std::uint64_t>(size, k_header_window), '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  return parse_makeself_header(buf, size, run.string());
}

Result<void> extract_makeself(const fs::path& run, const MakeselfHeader& header, const fs::path& dest) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return op_error(dest.string() + ": " + ec.message());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(run.c_str(), "rb"), &std::fclose);
  if (!f) return input_error(run.string() + ": cannot open");
  if (std::fseek(f.get(), static_cast<long>(header.payload_offset), SEEK_SET) != 0)
    return input_error(run.string() + ": cannot seek to the payload");
  auto src = std::make_unique<PayloadSource>();
  src->f = f.get();
  src->left = header.payload_size ? header.payload_size : header.file_size - header.payload_offset;

  gb::detail::ArchiveReader a(archive_read_new());
  gb::detail::support_builtin_filters(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open(a.get(), src.get(), nullptr, payload_read, nullptr) != ARCHIVE_OK)
    return input_error(run.string() + ": truncated or damaged payload at byte " + std::to_string(header.payload_offset) +
                       ": " + gb::detail::archive_error(a.get()));
  // unpack.hpp: no entry, link or hard link resolves outside dest.
  auto entries = detail::unpack_entries(a.get(), dest, run.string(), {});
  if (!entries) return entries.error();
  if (*entries == 0) return input_error(run.string() + ": the payload holds no files");
  return {};
}

Result<InstallerManifest> parse_manifest(std::string_view text, const std::string& source) {
  InstallerManifest m;
  const std::vector<std::string> lines = split(text, '\n');
  if (lines.size() < 9) return input_error(source + ": truncated: fewer than the 8 header lines");
  m.description = std::string(trim(lines[0]));
  m.version = std::string(trim(lines[1]));
  if (m.version.empty() || m.version.find_first_not_of("0123456789.") != std::string::npos)
    return input_error(source + ":2: bad driver version '" + m.version + "'");
  for (auto& t : tokens(lines[3])) m.modules.push_back(t);
  if (m.modules.empty()) return input_error(source + ":4: no kernel module names");
  for (std::size_t i = 8; i < lines.size(); ++i) {
    std::string where = source + ":" + std::to_string(i + 1) + ": ";
    auto t = tokens(lines[i]);
    if (t.empty()) break;  // the entry list ends at the first empty line
    if (t.size() < 3) return input_error(where + "expected '<file> <mode> <TYPE>'");
    ManifestEntry e;
    e.line = static_cast<int>(i + 1);
    e.file = t[0];
    if (e.file.empty() || e.file[0] == '/' || e.file.find("..") != std::string::npos)
      return input_error(where + "unsafe file name '" + e.file + "'");
    char* end = nullptr;
    unsigned long mode = std::strtoul(t[1].c_str(), &end, 8);
    if (!end || *end || mode > 07777) return input_error(where + "bad mode '" + t[1] + "'");
    e.mode = static_cast<unsigned>(mode);
    e.type = t[2];
    auto it = type_table().find(e.type);
    if (it == type_table().end())
      return input_error(where + "unknown file type '" + e.type + "' for " + e.file + " (nvidia-installer rejects such a manifest)");
    const TypeFlags& f = it->second;
    std::size_t k = 3;
    auto next = [&](const char* what) -> Result<std::string> {
      if (k >= t.size()) return input_error(where + e.type + " entry " + e.file + " lacks its " + what);
      return t[k++];
    };
    if (f.arch) {
      auto a = next("NATIVE/COMPAT32 word");
      if (!a) return a.error();
      if (*a != "NATIVE" && *a != "COMPAT32") return input_error(where + "expected NATIVE or COMPAT32, got '" + *a + "'");
      e.arch = *a;
    }
    // has_path wins over inherit_path, as in nvidia-installer (no type has both).
    if (f.path) {
      auto p = next("path");
      if (!p) return p.error();
      // Real packages omit the path of some entries and go straight to MODULE:x.
      if (starts_with(*p, "MODULE:")) --k;
      else e.path = *p;
      if (e.path.find("..") != std::string::npos) return input_error(where + "unsafe path '" + e.path + "'");
    } else if (f.inherit) {
      auto p = next("INHERIT_PATH_DEPTH:n");
      if (!p) return p.error();
      if (!starts_with(*p, "INHERIT_PATH_DEPTH:")) return input_error(where + "expected INHERIT_PATH_DEPTH:n, got '" + *p + "'");
      auto d = to_u64(p->substr(19));
      // The installer strips that many leading folders from the file's own folder.
      auto folders = static_cast<std::size_t>(std::count(e.file.begin(), e.file.end(), '/'));
      if (!d || folders == 0 || *d > folders)
        return input_error(where + *p + " but " + e.file + " has " + std::to_string(folders) + " folder(s) to strip");
      e.inherit_depth = static_cast<int>(*d);
    }
    if (f.symlink) {
      auto s = next("symlink target");
      if (!s) return s.error();
      e.symlink_target = *s;
    }
    m.entries.push_back(std::move(e));
  }
  return m;
}

std::optional<std::string> manifest_destination(const ManifestEntry& e, const std::string& version, const std::string& libdir) {
  if (e.arch == "COMPAT32") return std::nullopt;
  std::string name = fs::path(e.file).filename().string();
  auto join_path = [](const std::string& dir, const std::string& sub, const std::string& n) {
    std::string out = dir;
    if (!sub.empty()) out += "/" + std::string(trim(sub)).substr(sub.front() == '/' ? 1 : 0);
    while (!out.empty() && out.back() == '/') out.pop_back();
    return out + "/" + n;
  };
  const std::string& t = e.type;
  auto is = [&](std::initializer_list<std::string_view> types) {
    return std::find(types.begin(), types.end(), t) != types.end();
  };
  if (is({"UTILITY_LIB", "UTILITY_LIB_SYMLINK", "NVCUVID_LIB", "NVCUVID_LIB_SYMLINK", "ENCODEAPI_LIB",
          "ENCODEAPI_LIB_SYMLINK", "VGX_LIB", "VGX_LIB_SYMLINK"}))
    return join_path(libdir, "", name);
  // GRID and FLEXERA (vGPU guest licensing) go below the libdir like CUDA_LIB.
  if (is({"CUDA_LIB", "CUDA_SYMLINK", "OPENCL_LIB", "OPENCL_LIB_SYMLINK", "GRID_LIB", "GRID_LIB_SYMLINK", "FLEXERA_LIB",
          "FLEXERA_LIB_SYMLINK"}))
    return join_path(libdir, e.path, name);
  if (t == "NVIDIA_MODPROBE" && !e.path.empty()) return join_path("", e.path, name).substr(1);
  if (is({"UTILITY_BINARY", "UTILITY_BIN_SYMLINK", "NVIDIA_MODPROBE"})) return "usr/bin/" + name;
  if (is({"INTERNAL_UTILITY_BINARY", "INTERNAL_UTILITY_LIB", "INTERNAL_UTILITY_DATA"})) return "usr/lib/nvidia/" + name;
  if (t == "FIRMWARE") {
    auto parts = split(e.file, '/');
    std::vector<std::string> rest(parts.begin() + std::min<std::size_t>(parts.size() - 1, static_cast<std::size_t>(std::max(e.inherit_depth, 0))), parts.end());
    rest.pop_back();  // the file name itself
    return join_path("lib/firmware/nvidia/" + version, join(rest, "/"), name);
  }
  return std::nullopt;
}

Result<Installer> open_installer(const fs::path& run_or_dir, const fs::path& sandbox) {
  Installer inst;
  inst.source = run_or_dir.string();
  std::error_code ec;
  if (fs::is_directory(run_or_dir, ec)) {
    inst.root = run_or_dir;
  } else if (fs::is_regular_file(run_or_dir, ec)) {
    auto header = read_makeself_header(run_or_dir);
    if (!header) return header.error();
    auto sum = signing::sha256_file_hex(run_or_dir);
    if (!sum) return sum.error();
    inst.sha256 = *sum;
    inst.root = sandbox / "installer";
    fs::remove_all(inst.root, ec);
    if (auto r = extract_makeself(run_or_dir, *header, inst.root); !r) return r.error();
    inst.header = *header;
  } else {
    return input_error(run_or_dir.string() + ": no such installer (.run file or extracted folder)");
  }
  auto text = [&]() -> Result<std::string> {
    std::ifstream in(inst.root / ".manifest", std::ios::binary);
    if (!in) return input_error(inst.source + ": no .manifest in the installer (is it an NVIDIA driver installer?)");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  if (!text) return text.error();
  auto m = parse_manifest(*text, inst.source + ":.manifest");
  if (!m) return m.error();
  inst.manifest = std::move(*m);
  return inst;
}

}  // namespace gb::node_images
