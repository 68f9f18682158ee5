#include "node-images/bake.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_mok_path = "usr/share/gpubundle/mok/module-signing.der";

std::string persistenced_unit() {
  return "[Unit]\n"
         "Description=NVIDIA Persistence Daemon\n"
         "Wants=syslog.target\n"
         "After=systemd-modules-load.service\n"
         "\n"
         "[Service]\n"
         "Type=forking\n"
         "ExecStart=/usr/bin/nvidia-persistenced --verbose\n"
         "ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced\n"
         "\n"
         "[Install]\n"
         "WantedBy=multi-user.target\n";
}

// nvidia-ctk runtime configure --runtime=containerd, as a drop-in (§4.1).
std::string containerd_dropin() {
  return "# Written by gpubundle node-image bake: the runtime the GPU Operator's RuntimeClass names.\n"
         "# /etc/containerd/config.toml must import /etc/containerd/conf.d/*.toml.\n"
         "version = 2\n"
         "\n"
         "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
         "  runtime_type = \"io.containerd.runc.v2\"\n"
         "\n"
         "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
         "  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n";
}

// NVIDIA's unit, for when the package that ships it is not in the overlay.
std::string fabricmanager_unit() {
  return "[Unit]\n"
         "Description=NVIDIA fabric manager service\n"
         "After=network-online.target\n"
         "Requires=network-online.target\n"
         "\n"
         "[Service]\n"
         "User=root\n"
         "PrivateTmp=false\n"
         "Type=forking\n"
         "ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg\n"
         "LimitCORE=infinity\n"
         "\n"
         "[Install]\n"
         "WantedBy=multi-user.target\n";
}

// The upstream version in a package file name: name_1.2-3_amd64.deb, name-1.2-3.x86_64.rpm.
bool package_has_version(const std::string& file, const std::string& version) {
  if (ends_with(file, ".deb")) {
    auto parts = split(file, '_');
    return parts.size() == 3 && (parts[1] == version || starts_with(parts[1], version + "-") || parts[1].find(":" + version + "-") != std::string::npos);
  }
  return file.find("-" + version + "-") != std::string::npos;
}

// The .deb/.rpm files in `from`, sorted; checked, nothing copied.
Result<std::vector<std::string>> list_packages(const fs::path& from, const std::string& option, const std::string& need_version) {
  std::error_code ec;
  if (!fs::is_directory(from, ec)) return input_error(from.string() + ": " + option + " is not a folder");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    auto name = e.path().filename().string();
    if (!ends_with(name, ".deb") && !ends_with(name, ".rpm")) continue;
    if (!is_package_file_name(name))
      return input_error(e.path().string() + ": " + option + ": a package file name may hold only letters, digits and . _ + ~ -");
    if (!fs::is_regular_file(e.path(), ec)) return input_error(e.path().string() + ": " + option + ": not a file");
    if (!need_version.empty() && !package_has_version(name, need_version))
      return input_error(e.path().string() + ": " + option + " must match driver " + need_version +
                         " (the fabric manager refuses to run against another driver version)");
    names.push_back(name);
  }
  if (ec) return op_error(from.string() + ": " + ec.message());
  if (names.empty()) return input_error(from.string() + ": " + option + " holds no .deb or .rpm packages");
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool is_package_file_name(std::string_view name) {
  return (ends_with(name, ".deb") || ends_with(name, ".rpm")) && is_word(name.substr(0, name.size() - 4), "._+~-");
}

Result<void> check_bake_options(const BakeOptions& options, const std::string& driver_version) {
  if (!options.toolkit_packages.empty())
    if (auto r = list_packages(options.toolkit_packages, "--toolkit-packages", ""); !r) return r.error();
  if (!options.fabric_manager_packages.empty())
    if (auto r = list_packages(options.fabric_manager_packages, "--fabric-manager-packages", driver_version); !r) return r.error();
  return {};
}

Result<BakeResult> bake_node_overlay(const recipes::Recipe& recipe, const PreparedDriver& driver, const BakeOptions& options) {
  const auto& version = driver.installer.manifest.version;
  std::error_code ec;
  fs::create_directories(options.output, ec);
  if (ec) return op_error(options.output.string() + ": " + ec.message());

  LayerBuilder layer;
  std::vector<std::string> kernels;
  for (const auto& km : driver.kernels) {
    add_modules(layer, km, "lib/modules/" + km.kernel + "/updates/nvidia");
    kernels.push_back(km.kernel);
  }
  layer.add_data("etc/modprobe.d/nvidia.conf",
                 "# Written by gpubundle node-image bake\n"
                 "blacklist nouveau\n"
                 "options nouveau modeset=0\n"
                 "options nvidia NVreg_CoherentGPUMemoryMode=driver\n");
  layer.add_data("etc/modules-load.d/nvidia.conf", "# Written by gpubundle node-image bake\nnvidia\nnvidia-uvm\nnvidia-modeset\n");
  auto user = add_userspace(layer, driver.installer, "lib/firmware/nvidia/" + version);
  if (!user) return user.error();
  if (!layer.has("usr/bin/nvidia-smi"))
    return input_error(driver.installer.source + ": the manifest installs no usr/bin/nvidia-smi; the operator needs it on a preinstalled host");
  layer.add_data("etc/ld.so.conf.d/nvidia.conf", std::string("/") + k_libdir + "\n");
  layer.add_data("usr/lib/systemd/system/nvidia-persistenced.service", persistenced_unit());
  std::vector<std::string> units = {"nvidia-persistenced.service"};
  const bool fabric_manager = options.fabric_manager || !options.fabric_manager_packages.empty();
  if (fabric_manager) {
    units.push_back("nvidia-fabricmanager.service");
    if (options.fabric_manager_packages.empty()) {
      layer.add_data("usr/lib/systemd/system/nvidia-fabricmanager.service", fabricmanager_unit());
      log_warn("fabric manager: the NVIDIA installer does not ship nv-fabricmanager; the unit is in the overlay, but "
                "the binary must come from the nvidia-fabricmanager " + version +
                " package (--fabric-manager-packages DIR, or install it in the image)");
    }
  }
  std::string mok;
  if (driver.signer) {
    layer.add_data(k_mok_path, driver.signer->certificate_der);
    mok = std::string("/") + k_mok_path;
  }
  bool host_toolkit = recipe.toolkit_mode == recipes::ToolkitMode::Host;
  if (host_toolkit) layer.add_data("etc/containerd/conf.d/99-nvidia.toml", containerd_dropin());

  fs::path overlay = options.output / "overlay.tar";
  std::vector<LayerFileRecord> records;
  auto blob = layer.write_tar(overlay, &records);
  if (!blob) return blob.error();

  // install.sh's @VAR@ values; PACKAGES once the packages are copied.
  std::map<std::string, std::string> script_vars = {{"VERSION", version},
                                                    {"KERNELS", join(kernels, " ")},
                                                    {"UNITS", join(units, " ")},
                                                    {"MOK_CERT", mok},
                                                    {"TOOLKIT_HOST", host_toolkit ? "yes" : ""}};

  std::string values = "# Helm values fragment for a node image with the NVIDIA driver preinstalled (gpubundle node-image bake)\n"
                       "driver:\n  enabled: false\n";
  if (host_toolkit) values += "toolkit:\n  enabled: false\n";
  if (auto r = write_atomic(options.output / "values.yaml", values); !r) return r.error();

  // Packages go in packages/ (a clean copy each run); install.sh installs exactly these.
  fs::path pkgdir = options.output / "packages";
  fs::remove_all(pkgdir, ec);
  std::vector<std::string> packages;
  std::vector<fs::path> package_files;
  auto take = [&](const fs::path& from, const std::string& option, const std::string& need) -> Result<void> {
    auto names = list_packages(from, option, need);
    if (!names) return names.error();
    for (const auto& n : *names) {
      if (std::find(packages.begin(), packages.end(), n) != packages.end())
        return input_error((from / n).string() + ": " + n + " is given twice");
      packages.push_back(n);
      package_files.push_back(from / n);
    }
    return {};
  };
  if (!options.toolkit_packages.empty()) {
    if (auto r = take(options.toolkit_packages, "--toolkit-packages", ""); !r) return r.error();
  } else if (host_toolkit) {
    log_warn("toolkit mode host: no --toolkit-packages given, so the overlay has the containerd drop-in but not "
              "nvidia-container-toolkit itself; install it in the image");
  }
  if (!options.fabric_manager_packages.empty())
    if (auto r = take(options.fabric_manager_packages, "--fabric-manager-packages", version); !r) return r.error();
  if (!package_files.empty()) fs::create_directories(pkgdir, ec);
  for (const auto& f : package_files) {
    fs::copy_file(f, pkgdir / f.filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) return op_error(f.string() + ": " + ec.message());
  }
  std::sort(packages.begin(), packages.end());
  script_vars["PACKAGES"] = join(packages, " ");
  std::string script = fill_template(node_install_script(), script_vars);
  if (auto r = write_atomic(options.output / "install.sh", script, 0755); !r) return r.error();

  nlohmann::ordered_json m;
  m["schemaVersion"] = 1;
  m["driver"] = {{"version", version}, {"branch", driver_branch(version)}, {"moduleType", driver.module_type}};
  m["kernels"] = kernels;
  m["signer"] = driver.signer ? nlohmann::ordered_json{{"fingerprint", driver.signer->fingerprint}, {"subject", driver.signer->subject}}
                              : nlohmann::ordered_json(nullptr);
  m["installer"] = {{"source", fs::path(driver.installer.source).filename().string()}, {"sha256", driver.installer.sha256}};
  m["overlay"] = {{"file", "overlay.tar"}, {"sha256", blob->sha256}, {"size", blob->size}};
  m["packages"] = packages;
  m["units"] = units;
  auto files = nlohmann::ordered_json::array();
  for (const auto& r : records) {
    nlohmann::ordered_json f = {{"path", "/" + r.path}, {"type", r.type}, {"mode", r.mode}};
    if (r.type == "file") {
      f["size"] = r.size;
      f["sha256"] = r.sha256;
    }
    if (r.type == "symlink") f["link"] = r.link;
    files.push_back(f);
  }
  m["files"] = files;
  if (auto r = write_atomic(options.output / "manifest.json", m.dump(2) + "\n"); !r) return r.error();
  return BakeResult{overlay, blob->sha256, records.size(), packages};
}

}  // namespace gb::node_images
