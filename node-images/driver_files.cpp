#include "node-images/driver_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <thread>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "signing/module_sign.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;

const std::string& embedded_node_script(const std::string& name);  // node_scripts.cpp (generated)

const std::string& nvidia_driver_script() { return embedded_node_script("nvidia-driver"); }
const std::string& node_install_script() { return embedded_node_script("install.sh"); }

PreparedDriver::~PreparedDriver() {
  if (!sandbox.empty() && !keep_sandbox) {
    std::error_code ec;
    fs::remove_all(sandbox, ec);
  }
}

PreparedDriver::PreparedDriver(PreparedDriver&& o) noexcept
    : installer(std::move(o.installer)), module_type(std::move(o.module_type)), kernels(std::move(o.kernels)),
      signer(std::move(o.signer)), sandbox(std::move(o.sandbox)), keep_sandbox(o.keep_sandbox) {
  o.sandbox.clear();
}

std::string driver_branch(const std::string& version) { return version.substr(0, version.find('.')); }

std::string effective_module_type(const recipes::Recipe& recipe, const std::string& type, const std::string& version) {
  if (type == "open" || type == "proprietary") return type;
  const recipes::Catalog& cat = recipes::Catalog::builtin();
  if (recipe.driver_mode == recipes::DriverMode::Host)
    return std::atoi(driver_branch(version).c_str()) >= cat.auto_open_from_branch() ? "open" : "proprietary";
  std::vector<const recipes::GpuInfo*> gpus;
  for (const auto& name : recipe.gpus)
    if (const recipes::GpuInfo* g = cat.find_gpu(name)) gpus.push_back(g);
  // The recipe's version, not the installer's: a branch-only recipe is pinned
  // from the branch, and the image must carry what the lock pins.
  return cat.auto_module_type(gpus, recipe.driver_version, driver_branch(version)).type;
}

std::string installer_arch(std::string_view file_name) {
  constexpr std::string_view head = "NVIDIA-Linux-";
  if (!starts_with(file_name, head) || !ends_with(file_name, ".run")) return "";
  auto rest = file_name.substr(head.size());
  auto dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0) return "";
  auto arch = rest.substr(0, dash), tail = rest.substr(dash + 1);
  auto arch_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (!std::all_of(arch.begin(), arch.end(), arch_char)) return "";
  // VERSION.*\.run with '.' as in ECMAScript: any character but a line break.
  if (tail.size() < 5 || !(std::isdigit(static_cast<unsigned char>(tail[0])) || tail[0] == '.')) return "";
  if (tail.substr(1, tail.size() - 5).find_first_of("\r\n") != std::string_view::npos) return "";
  return std::string(arch);
}

namespace {

Result<fs::path> make_sandbox() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpubundle-driver.XXXXXX";
  if (!::mkdtemp(tmpl.data())) return op_error("cannot create a sandbox folder under " + tmpl);
  // Absolute: make runs in folders of its own (-C), and a relative TMPDIR
  // would name another place there.
  std::error_code ec;
  fs::path dir = fs::absolute(tmpl, ec);
  if (ec) return op_error(tmpl + ": " + ec.message());
  return dir;
}

}  // namespace

Result<void> check_driver_inputs(const DriverInputs& in) {
  if (!in.sign_key.empty() && in.sign_cert.empty())
    return input_error("--sign-key " + in.sign_key.string() + " needs its certificate: pass --sign-cert");
  if (in.sign_key.empty() && !in.sign_cert.empty())
    return input_error("--sign-cert " + in.sign_cert.string() + " needs its private key: pass --sign-key");
  std::error_code ec;
  if (!fs::exists(in.installer, ec)) return input_error(in.installer.string() + ": no such installer (.run or folder)");
  return {};
}

Result<std::unique_ptr<PreparedDriver>> prepare_driver(const recipes::Recipe& recipe, const DriverInputs& in) {
  // Input checks first: nothing is extracted or built for a bad command line.
  if (auto r = check_driver_inputs(in); !r) return r.error();
  if (in.kernel_builds.empty() && in.kernel_headers.empty())
    return input_error("no kernel to build for: pass --kernel-build DIR or --kernel-headers DEB..., or list "
                       "packages.sources in the recipe so the headers are fetched (docs/package-sources.md)");
  if (recipe.kernels.empty()) return input_error(recipe.where("target.kernels") + "target.kernels is empty: no kernel to build for");
  // Only x86_64 for now: the libdir, the image platform and kbuild all assume it.
  const std::string arch = installer_arch(in.installer.filename().string());
  if (!arch.empty() && arch != "x86_64")
    return input_error(in.installer.string() + ": installer for " + arch + "; driver artifacts are built for x86_64 only so far");

  std::optional<signing::ModuleSigner> signer;
  if (!in.sign_key.empty()) {
    auto s = signing::ModuleSigner::load(in.sign_key, in.sign_cert);
    if (!s) return s.error();
    signer = std::move(*s);
  }

  auto out = std::make_unique<PreparedDriver>();
  out->keep_sandbox = true;  // until everything succeeded
  auto sb = make_sandbox();
  if (!sb) return sb.error();
  out->sandbox = *sb;

  std::vector<KernelTree> trees;
  for (const auto& d : in.kernel_builds) {
    auto t = open_kernel_tree(d);
    if (!t) return t.error();
    trees.push_back(*t);
  }
  if (!in.kernel_headers.empty()) {
    auto t = unpack_kernel_headers(in.kernel_headers, out->sandbox / "headers");
    if (!t) return t.error();
    trees.insert(trees.end(), t->begin(), t->end());
  }

  auto inst = open_installer(in.installer, out->sandbox);
  if (!inst) return inst.error();
  out->installer = std::move(*inst);
  const auto& version = out->installer.manifest.version;
  if (!recipe.driver_version.empty() && !starts_with(recipe.driver_version, "sha256:") && recipe.driver_version != version)
    return input_error(recipe.where("driver.version") + "driver.version " + recipe.driver_version + " but the installer " +
                       out->installer.source + " is " + version);
  if (!recipe.driver_branch.empty() && recipe.driver_branch != driver_branch(version))
    return input_error(recipe.where("driver.branch") + "driver.branch " + recipe.driver_branch + " but the installer " +
                       out->installer.source + " is " + version);
  out->module_type = effective_module_type(recipe, in.module_type.empty() ? recipe.kernel_module_type : in.module_type, version);
  log_info("installer " + out->installer.source + ": driver " + version + ", " + out->module_type + " modules" +
            (out->installer.header ? std::string(" (") + std::string(to_string(out->installer.header->flavour)) + ", " +
                                         std::string(to_string(out->installer.header->compression)) + ")"
                                   : std::string()));

  ModuleBuildOptions opts;
  opts.module_type = out->module_type;
  opts.jobs = in.jobs > 0 ? in.jobs : std::max(1u, std::thread::hardware_concurrency());
  for (const auto& kernel : recipe.kernels) {
    const KernelTree* tree = nullptr;
    for (const auto& t : trees)
      if (t.release == kernel) tree = &t;
    // One tree for one kernel: build anyway; the vermagic check names a mismatch.
    if (!tree && trees.size() == 1 && recipe.kernels.size() == 1) tree = &trees[0];
    if (!tree) {
      std::vector<std::string> have;
      for (const auto& t : trees) have.push_back(t.release);
      return input_error(recipe.where("target.kernels") + "no kernel build tree for kernel " + kernel + " (given: " +
                         (have.empty() ? "none" : join(have, ", ")) + ")");
    }
    opts.target_release = kernel;
    auto built = build_modules(out->installer, *tree, out->sandbox, opts);
    if (!built) return built.error();
    KernelModules km{kernel, std::move(*built)};
    if (signer) {
      fs::path dir = out->sandbox / ("signed-" + kernel);
      fs::create_directories(dir);
      for (auto& m : km.modules) {
        fs::path dst = dir / (m.name + ".ko");
        auto r = signing::sign_module_file(*signer, m.file, dst);
        if (!r) return r.error();
        m.file = dst;
      }
      log_info("signed " + std::to_string(km.modules.size()) + " modules for " + kernel + " with " + signer->subject());
    }
    out->kernels.push_back(std::move(km));
  }
  if (signer)
    out->signer = SignerInfo{signer->fingerprint(), signer->subject(), signer->common_name(), signer->certificate_der()};
  out->keep_sandbox = in.keep_sandbox;
  return out;
}

Result<std::vector<std::string>> add_userspace(LayerBuilder& layer, const Installer& installer, const std::string& firmware_dir) {
  std::vector<std::string> added;
  const auto& m = installer.manifest;
  std::error_code ec;
  for (const auto& e : m.entries) {
    auto dst = manifest_destination(e, m.version, k_libdir);
    if (!dst) continue;
    if (e.type == "FIRMWARE") {
      std::string rel = dst->substr(std::string("lib/firmware/nvidia/" + m.version).size());
      dst = firmware_dir + rel;
    }
    if (!e.symlink_target.empty()) {
      layer.add_symlink(*dst, e.symlink_target);
    } else {
      fs::path src = installer.root / e.file;
      if (!fs::is_regular_file(src, ec))
        return input_error(installer.source + ":.manifest:" + std::to_string(e.line) + ": " + e.file + " is listed but missing");
      layer.add_file(*dst, src, e.mode);
    }
    added.push_back(*dst);
  }
  return added;
}

void add_modules(LayerBuilder& layer, const KernelModules& km, const std::string& dir) {
  for (const auto& mod : km.modules) layer.add_file(dir + "/" + mod.name + ".ko", mod.file, 0644);
}

Result<void> add_depmod_output(LayerBuilder& layer, const KernelModules& km, const std::string& module_dir,
                               const fs::path& scratch, const std::string& modules_root) {
  std::error_code ec;
  fs::remove_all(scratch, ec);
  fs::path kdir = scratch / "lib/modules" / km.kernel;
  fs::create_directories(kdir / module_dir, ec);
  if (ec) return op_error(scratch.string() + ": " + ec.message());
  for (const auto& m : km.modules) {
    fs::copy_file(m.file, kdir / module_dir / (m.name + ".ko"), ec);
    if (ec) return op_error(m.file.string() + ": " + ec.message());
  }
  // depmod wants these; empty is right for a tree holding only our modules.
  for (const char* f : {"modules.order", "modules.builtin"}) write_atomic(kdir / f, "").value_or_throw();
  fs::path log = scratch.parent_path() / ("depmod-" + km.kernel + ".log");
  auto rc = run_logged({"depmod", "-b", scratch.string(), km.kernel}, {}, log);
  if (!rc) return rc.error();
  if (*rc != 0) return op_error("depmod -b " + scratch.string() + " " + km.kernel + " failed:" + tail_lines(log, 10));
  for (const auto& e : fs::directory_iterator(kdir)) {
    if (!e.is_regular_file()) continue;
    layer.add_file(modules_root + "/" + km.kernel + "/" + e.path().filename().string(), e.path(), 0644);
  }
  return {};
}

}  // namespace gb::node_images
