#include "node-images/tool_image.hpp"

#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "net/transport.hpp"
#include "node-images/base_image.hpp"
#include "node-images/kernel_packages.hpp"
#include "node-images/layer.hpp"
#include "node-images/unpack.hpp"
#include "packages/apt.hpp"
#include "packages/names.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

const std::string& embedded_node_script(const std::string& name);  // node_scripts.cpp, generated

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// Debian 12's merged /usr: these top folders are links into usr/.
constexpr const char* k_merged_tops[] = {"bin", "sbin", "lib", "lib64"};
// Where the dynamic loader looks without an ld.so.cache (Debian's glibc
// searches the multiarch folders by default), in its order.
constexpr const char* k_library_dirs[] = {"usr/lib/x86_64-linux-gnu", "usr/lib"};

template <class T>
std::optional<T> read_at(std::string_view bytes, std::uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// The NUL-terminated string at `offset`, nullopt when it runs past `end`.
std::optional<std::string> c_string(std::string_view bytes, std::uint64_t offset, std::uint64_t end) {
  end = std::min<std::uint64_t>(end, bytes.size());
  if (offset >= end) return std::nullopt;
  auto nul = bytes.find('\0', offset);
  if (nul == std::string_view::npos || nul >= end) return std::nullopt;
  return std::string(bytes.substr(offset, nul - offset));
}

bool moved_top(const std::string& rel) {
  auto first = rel.substr(0, rel.find('/'));
  return std::any_of(std::begin(k_merged_tops), std::end(k_merged_tops), [&](const char* t) { return first == t; });
}

// A path of the unmerged tree as it lies in the merged one.
std::string merged_path(const std::string& rel) { return moved_top(rel) ? "usr/" + rel : rel; }

std::string parent_of(const std::string& rel) {
  auto slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

// The layer's own view of its tree: where a path leads, following links the
// way the kernel would inside the image (absolute targets from its root).
class LayerTree {
public:
  explicit LayerTree(const LayerBuilder& layer) : m_layer(layer) {}

  // The entry `path` (root-relative or absolute) finally names, nullopt when
  // nothing is there or the links loop.
  std::optional<std::string> resolve(const std::string& path) const {
    std::vector<std::string> todo;
    for (auto& p : split(LayerBuilder::normalise(path), '/'))
      if (!p.empty()) todo.push_back(p);
    std::reverse(todo.begin(), todo.end());
    std::vector<std::string> done;
    int hops = 0;
    while (!todo.empty()) {
      std::string part = todo.back();
      todo.pop_back();
      if (part == ".") continue;
      if (part == "..") {
        if (!done.empty()) done.pop_back();
        continue;
      }
      done.push_back(part);
      auto it = m_layer.entries().find(join(done, "/"));
      if (it == m_layer.entries().end()) return std::nullopt;
      if (it->second.kind != LayerEntry::Kind::Symlink) continue;
      if (++hops > 40) return std::nullopt;
      done.pop_back();
      const std::string& target = it->second.link;
      if (!target.empty() && target[0] == '/') done.clear();
      auto parts = split(target, '/');
      for (auto p = parts.rbegin(); p != parts.rend(); ++p)
        if (!p->empty()) todo.push_back(*p);
    }
    return join(done, "/");
  }

  const LayerEntry* file(const std::string& path) const {
    auto at = resolve(path);
    if (!at) return nullptr;
    auto it = m_layer.entries().find(*at);
    return it != m_layer.entries().end() && it->second.kind == LayerEntry::Kind::File ? &it->second : nullptr;
  }

private:
  const LayerBuilder& m_layer;
};

Result<ElfDeps> elf_deps_of(const LayerEntry& e, const std::string& name) {
  auto bytes = e.source.empty() ? Result<std::string>(e.data) : read_file(e.source);
  if (!bytes) return bytes.error();
  return read_elf_deps(*bytes, name);
}

// The binary's interpreter and libraries, and theirs, all in the layer.
Result<void> check_libraries(const LayerBuilder& layer, const ElfDeps& binary) {
  LayerTree tree(layer);
  if (!binary.interpreter.empty() && !tree.file(binary.interpreter))
    return input_error("tool image: the loader " + binary.interpreter + " that gpubundle names is in none of its packages");
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> todo;  // soname, needed by
  for (const auto& n : binary.needed) todo.emplace_back(n, "gpubundle");
  while (!todo.empty()) {
    auto [soname, by] = todo.back();
    todo.pop_back();
    if (!seen.insert(soname).second) continue;
    const LayerEntry* lib = nullptr;
    std::string found;
    for (const char* dir : k_library_dirs)
      if ((lib = tree.file(std::string(dir) + "/" + soname))) {
        found = std::string(dir) + "/" + soname;
        break;
      }
    if (!lib)
      return input_error("tool image: " + soname + " (needed by " + by + ") is in none of its packages' " +
                         join(std::vector<std::string>(std::begin(k_library_dirs), std::end(k_library_dirs)), ", ") +
                         "; add the package that holds it with --with");
    auto deps = elf_deps_of(*lib, found);
    if (!deps) return deps.error();
    for (const auto& n : deps->needed) todo.emplace_back(n, soname);
  }
  return {};
}

}  // namespace

bool tool_image_keeps(const std::string& path) {
  for (const char* dir : {"usr/share/man/", "usr/share/info/", "usr/share/locale/", "usr/share/lintian/"})
    if (starts_with(path + "/", dir)) return false;  // the folder and all in it
  const std::string doc = "usr/share/doc/";
  if (!starts_with(path, doc)) return true;
  auto rest = path.substr(doc.size());
  auto slash = rest.find('/');
  return slash == std::string::npos || rest.substr(slash + 1) == "copyright";  // the package's folder, its copyright
}

Result<void> add_merged_usr(LayerBuilder& layer, const fs::path& root, const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    paths.push_back(it->path().lexically_relative(root).generic_string());  // not fs::relative: it follows links
  if (ec) return op_error("cannot read " + root.string() + ": " + ec.message());
  // Unmoved first, each half in name order: what lands on one path is the same every time.
  std::stable_partition(paths.begin(), paths.end(), [](const std::string& p) { return !moved_top(p); });
  auto half = std::find_if(paths.begin(), paths.end(), [](const std::string& p) { return moved_top(p); });
  std::sort(paths.begin(), half);
  std::sort(half, paths.end());
  for (const auto& rel : paths) {
    if (std::find(std::begin(k_merged_tops), std::end(k_merged_tops), rel) != std::end(k_merged_tops)) continue;  // the top itself: a link below
    const std::string at = merged_path(rel);
    if (keep && !keep(at)) continue;
    const fs::path file = root / rel;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) return op_error(file.string() + ": cannot stat");
    if (S_ISDIR(st.st_mode)) {
      // 0755 as unpack.hpp makes every folder, whatever the umask left on disk.
      if (!layer.has(at)) layer.add_dir(at, 0755);
      continue;
    }
    if (layer.has(at)) continue;  // usr/ already has it
    if (S_ISREG(st.st_mode)) {
      layer.add_file(at, file, st.st_mode & 07777);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target = fs::read_symlink(file, ec).generic_string();
      if (ec) return op_error(file.string() + ": " + ec.message());
      // unpack.hpp made every target relative and inside; re-aim those whose
      // link or target moved, so they resolve as in the unmerged tree.
      std::string from = parent_of(rel);
      std::string lexical = (fs::path(from) / target).lexically_normal().generic_string();
      while (!lexical.empty() && lexical.back() == '/') lexical.pop_back();
      if (lexical == ".") lexical.clear();
      if (moved_top(rel) || moved_top(lexical)) {
        std::string aimed = fs::path(merged_path(lexical)).lexically_relative(parent_of(at)).generic_string();
        target = aimed.empty() ? "." : aimed;
      }
      layer.add_symlink(at, target);
    } else {
      return op_error(file.string() + ": not a file, folder or link after unpacking");
    }
  }
  for (const char* top : k_merged_tops) {
    const std::string under = std::string("usr/") + top;
    if (std::string(top) == "lib64" && !layer.has(under)) continue;  // only where a package put something there
    if (!layer.has(under)) layer.add_dir(under);
    layer.add_symlink(top, under);
  }
  return {};
}

namespace {

// What maintainer scripts would have made and the tools need.
void add_system_files(LayerBuilder& layer, const ToolImageCatalog& catalog) {
  if (!layer.has("etc/passwd"))
    layer.add_data("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  if (!layer.has("etc/group")) layer.add_data("etc/group", "root:x:0:\nnogroup:x:65534:\n");
  layer.add_dir("tmp", 01777);
  layer.add_dir("var/tmp", 01777);
  layer.add_dir("root", 0700);
  layer.add_dir("work", 0755);
  LayerTree tree(layer);
  for (const auto& [link, target] : catalog.alternatives) {
    std::string dir = parent_of(link);
    if (!layer.has(link) && tree.file((dir.empty() ? "" : dir + "/") + target)) layer.add_symlink(link, target);
  }
}

// ca-certificates' bundle, as update-ca-certificates writes it from every
// certificate it ships (the default /etc/ca-certificates.conf names them all).
Result<void> add_ca_bundle(LayerBuilder& layer) {
  const std::string dir = "usr/share/ca-certificates/mozilla/";
  std::string bundle;
  for (const auto& [path, e] : layer.entries()) {
    if (!starts_with(path, dir) || !ends_with(path, ".crt") || e.kind != LayerEntry::Kind::File) continue;
    auto pem = e.source.empty() ? Result<std::string>(e.data) : read_file(e.source, 1 << 20);
    if (!pem) return pem.error();
    bundle += *pem;
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
  }
  if (!bundle.empty()) layer.add_data("etc/ssl/certs/ca-certificates.crt", std::move(bundle));
  return {};
}

// Full closure of each kernel's headers, less what the kernel's own source
// builds: Debian's headers depend on their compiler, linux-kbuild on libc, libelf and libssl.
Result<std::vector<std::string>> kernel_toolchain(packages::PackageIndex& index, const recipes::Recipe& recipe,
                                                  const std::vector<recipes::PackageSource>& sources) {
  std::set<std::string> out;
  for (const auto& k : recipe.kernels) {
    packages::FetchRequest req;
    req.names = {"linux-headers-" + k};
    req.arch = index.arch();
    req.why = "tool image: kernel " + k + "'s headers";
    auto full = index.resolve(req, sources);
    if (!full) return full.error();
    req.closure = packages::Closure::SameSource;
    auto own = index.resolve(req, sources);
    if (!own) return own.error();
    std::set<std::string> own_names;
    for (const auto& p : *own) own_names.insert(p.name);
    for (const auto& p : *full)
      if (!own_names.count(p.name)) out.insert(p.name);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

}  // namespace

Result<ElfDeps> read_elf_deps(std::string_view elf, const std::string& source) {
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0) return input_error(source + ": not an ELF file");
  if (static_cast<unsigned char>(elf[EI_CLASS]) != ELFCLASS64 || static_cast<unsigned char>(elf[EI_DATA]) != ELFDATA2LSB)
    return input_error(source + ": not a 64-bit little-endian ELF file");
  auto eh = *read_at<Elf64_Ehdr>(elf, 0);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > elf.size() ||
      (elf.size() - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
    return input_error(source + ": damaged ELF program headers");
  ElfDeps out;
  std::vector<Elf64_Phdr> loads;
  std::optional<Elf64_Phdr> dynamic;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    auto ph = *read_at<Elf64_Phdr>(elf, eh.e_phoff + std::uint64_t(i) * sizeof(Elf64_Phdr));
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
    if (ph.p_type == PT_INTERP) {
      auto s = c_string(elf, ph.p_offset, ph.p_offset + ph.p_filesz);
      if (!s) return input_error(source + ": damaged ELF interpreter (PT_INTERP)");
      out.interpreter = *s;
    }
  }
  if (!dynamic) return out;  // static: needs nothing
  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> strtab;
  std::uint64_t strsz = 0;
  for (std::uint64_t off = dynamic->p_offset; off + sizeof(Elf64_Dyn) <= dynamic->p_offset + dynamic->p_filesz; off += sizeof(Elf64_Dyn)) {
    auto d = read_at<Elf64_Dyn>(elf, off);
    if (!d) return input_error(source + ": damaged ELF dynamic section");
    if (d->d_tag == DT_NULL) break;
    if (d->d_tag == DT_NEEDED) needed.push_back(d->d_un.d_val);
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
    if (d->d_tag == DT_STRSZ) strsz = d->d_un.d_val;
  }
  if (needed.empty()) return out;
  // DT_STRTAB is an address: the load segment that maps it gives its file offset.
  std::optional<std::uint64_t> table;
  for (const auto& l : loads)
    if (strtab && *strtab >= l.p_vaddr && *strtab - l.p_vaddr < l.p_filesz) table = l.p_offset + (*strtab - l.p_vaddr);
  if (!table) return input_error(source + ": damaged ELF dynamic string table");
  for (auto n : needed) {
    auto s = n < strsz ? c_string(elf, *table + n, *table + strsz) : std::nullopt;
    if (!s || s->empty()) return input_error(source + ": damaged ELF DT_NEEDED entry");
    out.needed.push_back(*s);
  }
  return out;
}

Result<ToolImageCatalog> parse_tool_image_catalog(std::string_view text, const std::string& what) {
  ToolImageCatalog c;
  std::size_t n = 0;
  for (const auto& raw : split(std::string(text), '\n')) {
    ++n;
    std::string line = raw.substr(0, raw.find('#'));
    std::vector<std::string> words;
    for (auto& w : split(line, ' '))
      if (!trim(w).empty()) words.emplace_back(trim(w));
    if (words.empty()) continue;
    const std::string at = what + ":" + std::to_string(n) + ": ";
    if (words[0] == "package" && words.size() == 2) c.packages.push_back(words[1]);
    else if (words[0] == "library" && words.size() == 3) c.libraries.emplace_back(words[1], words[2]);
    else if (words[0] == "alternative" && words.size() == 3) {
      if (words[1].front() == '/' || words[1].find("..") != std::string::npos || words[2].find('/') != std::string::npos)
        return input_error(at + "an alternative is a root-relative LINK and a TARGET in its folder: " + line);
      c.alternatives.emplace_back(words[1], words[2]);
    } else {
      return input_error(at + "expected `package NAME`, `library SONAME NAME` or `alternative LINK TARGET`: " + std::string(trim(line)));
    }
  }
  return c;
}

const ToolImageCatalog& tool_image_catalog() {
  static const ToolImageCatalog c =
      parse_tool_image_catalog(embedded_node_script("tool-image.packages"), "node-images/tool-image.packages").value_or_throw();
  return c;
}

std::string soname_package(const std::string& soname, const ToolImageCatalog& catalog) {
  for (const auto& [name, package] : catalog.libraries)
    if (name == soname) return package;
  auto so = soname.find(".so.");
  if (so == std::string::npos || so == 0 || so + 4 >= soname.size()) return "";
  std::string name = soname.substr(0, so), version = soname.substr(so + 4);
  // Policy 8.1: the soname's name and version, a hyphen between them when the name ends in a digit.
  std::string package = name + (std::isdigit(static_cast<unsigned char>(name.back())) ? "-" : "") + version;
  std::transform(package.begin(), package.end(), package.begin(), [](unsigned char ch) {
    return ch == '_' ? '-' : static_cast<char>(std::tolower(ch));
  });
  return package;
}

namespace {

struct Binary {
  ElfDeps deps;
  std::string sha256;  // hex
};

Result<Binary> read_binary(const fs::path& file) {
  auto bytes = read_file(file);
  if (!bytes) return input_error(file.string() + ": cannot read the gpubundle binary: " + bytes.error().message);
  auto deps = read_elf_deps(*bytes, file.string());
  if (!deps) return deps.error();
  return Binary{std::move(*deps), signing::sha256_hex(*bytes)};
}

std::vector<std::string> starting_names(const ElfDeps& deps, const std::vector<std::string>& with) {
  const auto& catalog = tool_image_catalog();
  std::set<std::string> names(catalog.packages.begin(), catalog.packages.end());
  for (const auto& soname : deps.needed)
    if (auto p = soname_package(soname, catalog); !p.empty()) names.insert(p);
  names.insert(with.begin(), with.end());
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

Result<std::vector<std::string>> tool_image_names(const ToolImageOptions& options) {
  auto binary = read_binary(options.binary);
  if (!binary) return binary.error();
  return starting_names(binary->deps, options.with);
}

Result<std::string> gpubundle_version_of(const fs::path& binary, CommandRunner* runner) {
  auto r = (runner ? *runner : system_runner()).run({binary.string(), "--version"}, {});
  if (!r) return r.error();
  std::string out(trim(r->out));
  const std::string head = "gpubundle ";
  std::string version = starts_with(out, head) ? out.substr(head.size()) : "";
  if (r->status != 0 || version.empty() || !is_word(version, ".-+_"))
    return input_error(binary.string() + " --version: expected \"gpubundle VERSION\", got " + quote(out.empty() ? std::string(trim(r->err)) : out) +
                       " (exit " + std::to_string(r->status) + "); is it a gpubundle executable for this machine?");
  std::replace(version.begin(), version.end(), '+', '_');  // a tag has no '+'
  return version;
}

Result<BuiltToolImage> build_tool_image(const recipes::Recipe& recipe, mirror::Store& store, const ToolImageOptions& o) {
  std::vector<recipes::PackageSource> sources;
  for (const auto& s : recipe.packages.sources)
    if (s.format == recipes::PackageFormat::Apt) sources.push_back(s);
  if (sources.empty())
    return input_error(recipe.where("packages.sources") + "the tool image is made of Debian packages: list an apt source " +
                       "(the Debian or Ubuntu archive the recipe's kernels come from) under packages.sources");
  if (o.version.empty()) return input_error("tool image: no gpubundle version to tag it with");
  auto binary = read_binary(o.binary);
  if (!binary) return binary.error();
  const std::vector<std::string> names = starting_names(binary->deps, o.with);

  // One index for every request: the kernels' toolchains, then the whole image.
  auto transport = net::curl_transport({});
  packages::apt::Index index(packages::package_arch(k_tool_image_platform, recipes::PackageFormat::Apt));
  for (const auto& s : sources)
    if (auto r = packages::apt::load_index(*transport, s, index); !r) return r.error();
  auto toolchain = kernel_toolchain(index, recipe, sources);
  if (!toolchain) return toolchain.error();
  std::set<std::string> all(names.begin(), names.end());
  all.insert(toolchain->begin(), toolchain->end());
  packages::FetchRequest req;
  req.names.assign(all.begin(), all.end());
  req.arch = index.arch();
  req.dest = o.work / "downloads";
  req.why = "tool image";
  req.jobs = o.jobs;
  auto wanted = index.resolve(req, sources);
  if (!wanted) return wanted.error();
  StorePackageCache cache(store);
  packages::FetchOptions fo;
  fo.progress = o.progress;
  fo.cache = &cache;
  auto fetched = packages::fetch_resolved(*transport, sources, std::move(*wanted), req, fo);
  if (!fetched) return fetched.error();

  // Unpacked in name order into one tree: a path two packages ship is the later one's.
  const fs::path root = o.work / "root";
  std::string listing;
  for (const auto& f : *fetched) {
    if (auto r = unpack_deb(f.file, root); !r) return r.error();
    listing += f.package.name + " " + f.package.version + " " + f.package.arch + " " + f.package.sha256 + "\n";
  }
  log_verbose("tool image: " + std::to_string(fetched->size()) + " packages unpacked");
  LayerBuilder layer;
  if (auto r = add_merged_usr(layer, root, tool_image_keeps); !r) return r.error();
  add_system_files(layer, tool_image_catalog());
  if (auto r = add_ca_bundle(layer); !r) return r.error();
  layer.add_data("usr/share/gpubundle/tool-image.list", listing);
  layer.add_file(k_tool_image_binary, o.binary, 0755);
  if (auto r = check_libraries(layer, binary->deps); !r) return r.error();

  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  const std::string created = rfc3339_utc(epoch->value_or(0));
  auto tar = layer.write_tar(o.work / "tool-image.tar");
  if (!tar) return tar.error();
  log_verbose("tool image: layer of " + std::to_string(layer.entries().size()) + " entries written");
  auto gz = gzip_layer(tar->file, o.work / "tool-image.tar.gz");
  if (!gz) return gz.error();
  log_verbose("tool image: layer compressed");
  std::error_code ec;
  fs::remove(tar->file, ec);

  json cfg = {{"created", created}, {"architecture", "amd64"}, {"os", "linux"}};
  cfg["config"] = {{"Env", json::array({"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})},
                   {"Entrypoint", json::array({std::string("/") + k_tool_image_binary})},
                   {"WorkingDir", "/work"},
                   {"Labels",
                    {{"io.gpubundle.version", o.version},
                     {"io.gpubundle.binary-sha256", binary->sha256},
                     {"io.gpubundle.tool-image.kernels", join(recipe.kernels, ",")}}}};
  cfg["rootfs"] = {{"type", "layers"}, {"diff_ids", json::array({"sha256:" + tar->sha256})}};
  cfg["history"] = json::array({{{"created", created},
                                 {"created_by", "gpubundle driver tool-image: " + std::to_string(fetched->size()) +
                                                    " Debian packages and the gpubundle binary"}}});
  const std::string config_bytes = cfg.dump();
  json man = {{"schemaVersion", 2}, {"mediaType", std::string(mirror::oci::k_oci_manifest)}};
  man["config"] = {{"mediaType", std::string(k_oci_config)}, {"digest", signing::sha256_digest(config_bytes)}, {"size", config_bytes.size()}};
  man["layers"] = json::array({{{"mediaType", std::string(k_oci_layer_gzip)}, {"digest", "sha256:" + gz->sha256}, {"size", gz->size}}});
  man["annotations"] = {{"org.opencontainers.image.created", created}};
  const std::string manifest_bytes = man.dump();

  BuiltToolImage img;
  img.ref = std::string(k_tool_image_repository) + ":" + o.version;
  img.digest = signing::sha256_digest(manifest_bytes);
  img.size = gz->size;
  img.unpacked = tar->size;
  img.packages = fetched->size();
  if (auto r = store.put_blob_file("sha256:" + gz->sha256, gz->size, gz->file); !r) return r.error();
  if (auto r = store.put_blob(signing::sha256_digest(config_bytes), config_bytes); !r) return r.error();
  auto manifest = mirror::oci::parse_manifest(manifest_bytes, mirror::oci::k_oci_manifest);
  if (!manifest) return manifest.error();
  if (auto r = store.publish({{img.ref, std::move(*manifest), {}, {k_tool_image_platform}, mirror::k_built_here}}); !r) return r.error();
  fs::remove(gz->file, ec);
  return img;
}

}  // namespace gb::node_images
