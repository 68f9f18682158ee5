#include "node/check.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"
#include "signing/digest.hpp"
#include "signing/module_sign.hpp"

namespace gb::node {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// Thresholds of the kit's alerts.yaml, so that a node that passes here does
// not page on its first scrape.
constexpr unsigned k_temperature_alert_c = 85;
constexpr double k_memory_alert_fraction = 0.95;
// Where bake puts the module signing certificate (node-images/bake.hpp).
constexpr const char* k_overlay_cert = "usr/share/gpubundle/mok/module-signing.der";

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

std::string branch_of(const std::string& version) { return version.substr(0, version.find('.')); }

std::string catalog_name(const std::string& pci_id) {
  const recipes::GpuInfo* g = recipes::Catalog::builtin().find_gpu(pci_id);
  return g ? g->name : "";
}

// "auto" is what the resolver pins: the driver container's rule for the
// recipe's GPUs (Catalog::auto_module_type); a host driver by its branch.
std::string resolve_module_type(const std::string& type, const std::string& version, const std::string& branch,
                                const std::string& mode, const std::vector<std::string>& gpus) {
  if (type != "auto" && !type.empty()) return type;
  if (branch.empty()) return "";
  const recipes::Catalog& cat = recipes::Catalog::builtin();
  if (mode == "host") return std::atoi(branch.c_str()) >= cat.auto_open_from_branch() ? "open" : "proprietary";
  std::vector<const recipes::GpuInfo*> known;
  for (const auto& name : gpus)
    if (const recipes::GpuInfo* g = cat.find_gpu(name)) known.push_back(g);
  return cat.auto_module_type(known, version, branch).type;
}

// What a lock and a recipe both name: the GPUs (as the catalog names them), OS, kernels and driver mode.
Expectation expect_target(const fs::path& file, const std::vector<std::string>& gpus, const std::string& os,
                          const std::vector<std::string>& kernels, const std::string& driver_mode) {
  Expectation e;
  e.source = file.filename().string();
  for (const auto& w : gpus) {
    const recipes::GpuInfo* g = recipes::Catalog::builtin().find_gpu(w);
    e.gpus.push_back(g ? g->name : w);
  }
  e.os = os;
  e.kernels = kernels;
  e.driver_mode = driver_mode;
  return e;
}

void set_driver(Expectation& e, const std::string& version, const std::string& branch, const std::string& type) {
  if (!version.empty() && !starts_with(version, "sha256:")) e.driver_version = version;
  e.driver_branch = !branch.empty() ? branch : branch_of(e.driver_version);
  e.module_type = resolve_module_type(type, e.driver_version, e.driver_branch, e.driver_mode, e.gpus);
}

struct Checker {
  const NodeCheckOptions& o;
  NodeReport& r;
  std::optional<NvmlReport> nvml;
  std::optional<CudaReport> cuda;

  const Expectation* exp() const { return r.expected ? &*r.expected : nullptr; }
  void add(const char* check, Status s, std::string detail) { r.checks.push_back({check, s, std::move(detail)}); }
  bool driver_loaded() const { return !r.facts.module_version.empty() || !r.facts.proc_version.empty(); }
  bool mig_on() const { return nvml && std::any_of(nvml->gpus.begin(), nvml->gpus.end(), [](const auto& g) { return g.mig_enabled.value_or(false); }); }

  void gpus() {
    const auto& f = r.facts;
    if (f.gpus.empty()) {
      if (o.expect_gpu_count > 0) return add("gpus", Status::Fail, "no NVIDIA GPU on the PCI bus; expected " + std::to_string(o.expect_gpu_count));
      if (exp() && !exp()->gpus.empty()) return add("gpus", Status::Fail, "no NVIDIA GPU on the PCI bus; " + exp()->source + " lists " + join(exp()->gpus, ", "));
      return add("gpus", Status::Skip, "no NVIDIA GPU on the PCI bus (" + (f.root / "sys/bus/pci/devices").string() + ")");
    }
    std::map<std::string, int> models;
    std::vector<std::string> wrong;
    for (const auto& g : f.gpus) {
      std::string name = catalog_name(g.pci_id);
      std::string label = name.empty() ? g.pci_id + " (not in the catalog)" : name;
      ++models[label];
      if (exp() && !exp()->gpus.empty() && std::find(exp()->gpus.begin(), exp()->gpus.end(), name) == exp()->gpus.end())
        wrong.push_back(g.address + " is " + label);
    }
    std::vector<std::string> parts;
    for (const auto& [m, n] : models) parts.push_back(std::to_string(n) + " x " + m);
    std::string found = join(parts, ", ");
    if (!wrong.empty()) return add("gpus", Status::Fail, join(wrong, "; ") + ", but " + exp()->source + " lists " + join(exp()->gpus, ", "));
    if (o.expect_gpu_count > 0 && static_cast<int>(f.gpus.size()) != o.expect_gpu_count)
      return add("gpus", Status::Fail, "found " + found + "; expected " + std::to_string(o.expect_gpu_count) + " GPUs");
    add("gpus", Status::Pass, found + (exp() && !exp()->gpus.empty() ? " (listed in " + exp()->source + ")" : ""));
  }

  void os_and_kernel() {
    const auto& f = r.facts;
    if (!exp() || exp()->os.empty())
      add("os", Status::Skip, "nothing to compare with; this node runs " + (f.os.empty() ? std::string("an OS without os-release") : f.os));
    else if (f.os == exp()->os || starts_with(f.os, exp()->os + "."))
      add("os", Status::Pass, f.os);
    else
      add("os", Status::Fail, "this node runs " + (f.os.empty() ? "?" : f.os) + ", " + exp()->source + " targets " + exp()->os);
    if (!f.kernel_problem.empty())
      add("kernel", Status::Fail, f.kernel_problem);
    else if (!exp() || exp()->kernels.empty())
      add("kernel", Status::Skip, "nothing to compare with; this node runs " + f.kernel);
    else if (std::find(exp()->kernels.begin(), exp()->kernels.end(), f.kernel) != exp()->kernels.end())
      add("kernel", Status::Pass, f.kernel);
    else
      add("kernel", Status::Fail, "running kernel " + f.kernel + " is not one " + exp()->source + " covers (" + join(exp()->kernels, ", ") + ")");
  }

  void driver() {
    const auto& f = r.facts;
    if (!driver_loaded()) {
      if (f.gpus.empty()) return add("driver", Status::Skip, "no nvidia kernel module loaded and no GPU");
      return add("driver", Status::Fail, "no nvidia kernel module loaded (" + (f.root / "proc/driver/nvidia/version").string() + " is absent)");
    }
    std::string version = f.module_version;
    std::string kind = f.open_module ? (*f.open_module ? "open" : "proprietary") : "unknown";
    std::string found = version + ", " + kind + " kernel modules";
    if (!f.proc_version.empty() && !version.empty() && f.proc_version.find(version) == std::string::npos)
      return add("driver", Status::Fail, "/sys/module/nvidia/version says " + version + " but /proc/driver/nvidia/version says: " + f.proc_version);
    if (exp()) {
      const auto& e = *exp();
      if (!e.driver_version.empty() && version != e.driver_version)
        return add("driver", Status::Fail, "loaded " + found + "; " + e.source + " has driver " + e.driver_version);
      if (e.driver_version.empty() && !e.driver_branch.empty() && branch_of(version) != e.driver_branch)
        return add("driver", Status::Fail, "loaded " + found + "; " + e.source + " has branch " + e.driver_branch);
      if (!e.module_type.empty() && f.open_module && kind != e.module_type)
        return add("driver", Status::Fail, "loaded " + found + "; " + e.source + " wants " + e.module_type + " kernel modules");
    }
    add("driver", Status::Pass, found);
  }

  void module_file() {
    const auto& f = r.facts;
    if (!f.module_file) return add("module", Status::Skip, "no nvidia.ko under " + (f.root / "lib/modules" / f.kernel).string() + " (a driver container, or no module tree here)");
    const auto& m = *f.module_file;
    if (!m.problem.empty()) return add("module", Status::Skip, m.path + ": " + m.problem);
    std::string vermagic_kernel = m.vermagic.substr(0, m.vermagic.find(' '));
    if (vermagic_kernel != f.kernel) return add("module", Status::Fail, m.path + " vermagic " + vermagic_kernel + " is not the running kernel " + f.kernel);
    if (!f.module_version.empty() && !m.version.empty() && m.version != f.module_version)
      return add("module", Status::Fail, m.path + " is " + m.version + " but " + f.module_version + " is loaded (reboot pending?)");
    std::string detail = m.path + ", vermagic " + vermagic_kernel;
    if (exp() && !exp()->signer_fingerprint.empty()) {
      if (!m.signed_module) return add("module", Status::Fail, m.path + " is not signed; " + exp()->source + " was signed by " + exp()->signer_subject);
      fs::path cert = f.root / k_overlay_cert;
      auto fp = signing::sha256_file_hex(cert);
      if (!fp) return add("module", Status::Fail, "module signing certificate " + cert.string() + " unreadable: " + fp.error().message);
      if (*fp != exp()->signer_fingerprint)
        return add("module", Status::Fail, cert.string() + " is not the certificate " + exp()->source + " names (" + exp()->signer_subject + ")");
      auto bytes = read_file(f.root / m.path.substr(1));
      if (!bytes) return add("module", Status::Fail, bytes.error().message);
      if (auto v = signing::verify_module_signature(*bytes, m.path, cert); !v) return add("module", Status::Fail, v.error().message);
      detail += ", signed by " + exp()->signer_subject;
    } else {
      detail += m.signed_module ? ", signed" : ", unsigned";
    }
    add("module", Status::Pass, detail);
  }

  void devices() {
    const auto& f = r.facts;
    if (f.gpus.empty() && !driver_loaded()) return add("devices", Status::Skip, "no GPU and no driver: no device nodes expected");
    std::set<std::string> have(f.device_nodes.begin(), f.device_nodes.end());
    std::vector<std::string> missing;
    auto need = [&](const std::string& n) {
      if (!have.count(n)) missing.push_back("/dev/" + n);
    };
    need("nvidiactl");
    for (std::size_t i = 0; i < f.gpus.size(); ++i) need("nvidia" + std::to_string(i));
    need("nvidia-uvm");
    need("nvidia-uvm-tools");
    if (mig_on() && f.cap_nodes.empty()) missing.push_back("/dev/nvidia-caps/* (MIG is on)");
    if (!missing.empty()) return add("devices", Status::Fail, "missing " + join(missing, ", "));
    std::string caps = f.cap_nodes.empty() ? "no nvidia-caps (created when MIG is used)" : std::to_string(f.cap_nodes.size()) + " nvidia-caps";
    add("devices", Status::Pass, std::to_string(f.device_nodes.size()) + " /dev/nvidia* nodes, " + caps);
  }

  void nvml_checks() {
    const auto& f = r.facts;
    nvml = probe_nvml(o.probe);
    const auto& n = *nvml;
    if (n.library.path.empty()) {
      add("nvml", Status::Skip, n.library.missing);
      for (const char* c : {"mig", "ecc", "signals"}) add(c, Status::Skip, "needs NVML");
      return;
    }
    if (!n.error.empty()) {
      bool expected_off = !driver_loaded() && f.gpus.empty();
      bool no_permission = n.error.find("Permission") != std::string::npos || n.error.find("permission") != std::string::npos;
      add("nvml", expected_off || no_permission ? Status::Skip : Status::Fail, n.library.path + ": " + n.error);
      for (const char* c : {"mig", "ecc", "signals"}) add(c, Status::Skip, "NVML did not start");
      return;
    }
    std::vector<std::string> names, problems;
    for (const auto& g : n.gpus) {
      names.push_back("GPU" + std::to_string(g.index) + " " + g.name + " " + gib(g.memory_total));
      if (!g.problem.empty()) problems.push_back("GPU" + std::to_string(g.index) + ": " + g.problem);
    }
    std::string lib = " (" + n.library.path + ")";
    if (!f.module_version.empty() && n.driver_version != f.module_version)
      add("nvml", Status::Fail, "NVML reports driver " + n.driver_version + " but kernel module " + f.module_version + " is loaded" + lib);
    else if (n.gpus.size() != f.gpus.size())
      add("nvml", Status::Fail, "NVML sees " + std::to_string(n.gpus.size()) + " GPUs, the PCI bus has " + std::to_string(f.gpus.size()) + lib);
    else if (!problems.empty())
      add("nvml", Status::Fail, join(problems, "; "));
    else
      add("nvml", Status::Pass, "driver " + n.driver_version + ": " + join(names, "; ") + lib);
    mig();
    ecc();
    signals();
  }

  void mig() {
    const auto& n = *nvml;
    std::vector<std::string> layout, bad;
    std::string want = exp() ? exp()->mig_config : "";
    std::string all_profile = starts_with(want, "all-") && want != "all-disabled" ? want.substr(4) : "";
    for (const auto& g : n.gpus) {
      std::string id = "GPU" + std::to_string(g.index);
      if (!g.mig_enabled) {
        layout.push_back(id + " no MIG");
        continue;
      }
      layout.push_back(id + (*g.mig_enabled ? " MIG on [" + join(g.mig_profiles, ",") + "]" : " MIG off"));
      if (want == "all-disabled" && *g.mig_enabled) bad.push_back(id + " has MIG on");
      if (!all_profile.empty()) {
        if (!*g.mig_enabled) bad.push_back(id + " has MIG off");
        else if (g.mig_profiles.empty()) bad.push_back(id + " has no MIG devices");
        else
          for (const auto& p : g.mig_profiles)
            if (p != all_profile) {
              bad.push_back(id + " has a " + p + " instance");
              break;
            }
      }
    }
    if (n.gpus.empty()) return add("mig", Status::Skip, "no GPU");
    if (!bad.empty()) return add("mig", Status::Fail, "mig.config " + want + ": " + join(bad, "; ") + " (has the MIG manager applied it?)");
    if (want.empty()) return add("mig", Status::Skip, "no mig.config to compare with; " + join(layout, "; "));
    if (want != "all-disabled" && all_profile.empty())
      return add("mig", Status::Skip, "mig.config " + want + " is a named layout this check cannot expand; " + join(layout, "; "));
    add("mig", Status::Pass, "mig.config " + want + ": " + join(layout, "; "));
  }

  void ecc() {
    const auto& n = *nvml;
    std::vector<std::string> bad, notes;
    bool any = false;
    for (const auto& g : n.gpus) {
      std::string id = "GPU" + std::to_string(g.index);
      if (g.ecc_enabled) {
        any = true;
        notes.push_back(id + " ECC " + (*g.ecc_enabled ? "on" : "off"));
      }
      if (g.ecc_uncorrected && *g.ecc_uncorrected > 0) bad.push_back(id + " " + std::to_string(*g.ecc_uncorrected) + " uncorrected ECC errors");
      if (g.retired_pages && *g.retired_pages > 0) bad.push_back(id + " " + std::to_string(*g.retired_pages) + " retired pages (double-bit)");
      if (g.remap_failed.value_or(false)) bad.push_back(id + " row remapping failed");
      if (g.remap_pending.value_or(false)) bad.push_back(id + " row remapping pending (reset the GPU)");
      if (g.remap_failed || g.retired_pages) any = true;
    }
    if (!bad.empty()) return add("ecc", Status::Fail, join(bad, "; "));
    if (!any) return add("ecc", Status::Skip, "the GPUs report no ECC or retirement state");
    add("ecc", Status::Pass, join(notes, "; ") + "; no uncorrected errors, retired pages or failed row remaps");
  }

  void signals() {
    const auto& n = *nvml;
    if (n.gpus.empty()) return add("signals", Status::Skip, "no GPU");
    std::vector<std::string> bad, seen;
    for (const auto& g : n.gpus) {
      std::string id = "GPU" + std::to_string(g.index);
      std::string line = id;
      if (!g.xids.empty()) {
        std::vector<std::string> x;
        for (auto v : g.xids) x.push_back(std::to_string(v));
        bad.push_back(id + " XID " + join(x, ","));
      }
      if (g.temperature_c) {
        line += " " + std::to_string(*g.temperature_c) + " C";
        if (*g.temperature_c > k_temperature_alert_c) bad.push_back(id + " at " + std::to_string(*g.temperature_c) + " C");
      }
      if (g.utilization_pct) line += ", " + std::to_string(*g.utilization_pct) + "% busy";
      if (g.memory_total) {
        line += ", " + gib(g.memory_used) + " used";
        if (static_cast<double>(g.memory_used) > k_memory_alert_fraction * static_cast<double>(g.memory_total))
          bad.push_back(id + " memory " + gib(g.memory_used) + " of " + gib(g.memory_total) + " used");
      }
      seen.push_back(line);
    }
    char wait[32];
    std::snprintf(wait, sizeof wait, "%.1f s", n.xid_wait_ms / 1000.0);
    if (!bad.empty()) return add("signals", Status::Fail, join(bad, "; "));
    add("signals", Status::Pass, join(seen, "; ") + "; no XID in " + wait);
  }

  void cuda_checks() {
    const auto& f = r.facts;
    if (!o.cuda) return add("cuda", Status::Skip, "--no-cuda");
    cuda = probe_cuda(o.probe);
    const auto& c = *cuda;
    if (c.library.path.empty()) return add("cuda", Status::Skip, c.library.missing);
    std::string lib = " (" + c.library.path + ")";
    if (!c.error.empty()) {
      bool expected_off = f.gpus.empty() && !driver_loaded();
      return add("cuda", expected_off ? Status::Skip : Status::Fail, c.error + lib);
    }
    if (c.gpus.empty()) return add("cuda", f.gpus.empty() ? Status::Skip : Status::Fail, "CUDA sees no device" + lib);
    std::vector<std::string> bad, good;
    for (const auto& g : c.gpus) {
      std::string id = "GPU" + std::to_string(g.ordinal);
      if (!g.error.empty()) bad.push_back(id + ": " + g.error);
      else if (!g.kernel_ok)
        bad.push_back(id + ": " + std::to_string(g.mismatches) + " of " + std::to_string(g.elements) + " results wrong");
      else {
        char bw[64] = "";
        if (g.copy_gbps > 0) std::snprintf(bw, sizeof bw, ", copy %.0f GB/s", g.copy_gbps);
        good.push_back(id + " " + g.name + ": PTX kernel ok on " + std::to_string(g.elements) + " elements" + bw);
      }
    }
    if (!bad.empty()) return add("cuda", Status::Fail, join(bad, "; "));
    if (!mig_on() && c.gpus.size() != f.gpus.size())
      return add("cuda", Status::Fail, "CUDA sees " + std::to_string(c.gpus.size()) + " devices, the PCI bus has " + std::to_string(f.gpus.size()));
    add("cuda", Status::Pass, "CUDA " + std::to_string(c.cuda_version / 1000) + "." + std::to_string(c.cuda_version % 1000 / 10) + ": " +
                                  join(good, "; ") + lib);
  }

  bool running(const std::string& comm) const {
    // comm is cut at 15 characters ("nvidia-persiste", "nv-fabricmanage").
    std::string cut = comm.substr(0, 15);
    return std::find(r.facts.processes.begin(), r.facts.processes.end(), cut) != r.facts.processes.end();
  }

  void daemons() {
    const auto& f = r.facts;
    if (f.gpus.empty()) {
      add("persistenced", Status::Skip, "no GPU");
    } else {
      bool daemon = running("nvidia-persistenced");
      bool mode_on = nvml && !nvml->gpus.empty() &&
                     std::all_of(nvml->gpus.begin(), nvml->gpus.end(), [](const auto& g) { return g.persistence.value_or(false); });
      if (daemon) add("persistenced", Status::Pass, "nvidia-persistenced is running");
      else if (mode_on) add("persistenced", Status::Pass, "persistence mode is on for every GPU (nvidia-persistenced not visible from here)");
      else if (!nvml || nvml->library.path.empty() || !nvml->error.empty())
        add("persistenced", Status::Skip, "nvidia-persistenced not visible from here, and NVML cannot tell the persistence mode");
      else add("persistenced", Status::Fail, "nvidia-persistenced is not running and persistence mode is off");
    }
    if (f.nvswitches == 0) return add("fabricmanager", Status::Skip, "no NVSwitch on this node");
    if (running("nv-fabricmanager")) return add("fabricmanager", Status::Pass, std::to_string(f.nvswitches) + " NVSwitches, nv-fabricmanager running");
    add("fabricmanager", Status::Fail, std::to_string(f.nvswitches) + " NVSwitches, but nv-fabricmanager is not running");
  }
};

Json facts_json(const NodeFacts& f) {
  Json gpus = Json::array();
  for (const auto& g : f.gpus) gpus.push_back({{"address", g.address}, {"pci", g.pci_id}, {"name", catalog_name(g.pci_id)}});
  Json j = {{"gpus", gpus},       {"nvswitches", f.nvswitches},         {"os", f.os},
            {"kernel", f.kernel}, {"platform", f.platform},             {"driver", f.module_version},
            {"procVersion", f.proc_version}, {"deviceNodes", f.device_nodes}};
  if (f.open_module) j["openKernelModule"] = *f.open_module;
  if (f.module_file)
    j["moduleFile"] = {{"path", f.module_file->path}, {"vermagic", f.module_file->vermagic}, {"signed", f.module_file->signed_module}};
  return j;
}

}  // namespace

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Fail: return "FAIL";
    case Status::Skip: return "SKIP";
  }
  return "?";
}

Result<Expectation> expectation_from_lock(const fs::path& file) {
  auto lock = recipes::load_lock(file.string());
  if (!lock) return lock.error();
  Expectation e = expect_target(file, lock->gpus, lock->os, lock->kernels, lock->driver.mode);
  set_driver(e, lock->driver.version, lock->driver.branch, lock->driver.kernel_module_type);
  if (!lock->recipe_spec.empty()) {
    Json spec = Json::parse(lock->recipe_spec, nullptr, false);
    if (spec.is_object() && spec.contains("mig") && spec["mig"].is_object() && spec["mig"].value("config", Json()).is_string())
      e.mig_config = spec["mig"]["config"].get<std::string>();
  }
  return e;
}

Result<Expectation> expectation_from_recipe(const fs::path& file) {
  auto recipe = recipes::load_recipe(file);
  if (!recipe) return recipe.error();
  Expectation e = expect_target(file, recipe->gpus, recipe->os, recipe->kernels, to_string(recipe->driver_mode));
  set_driver(e, recipe->driver_version, recipe->driver_branch, recipe->kernel_module_type);
  e.mig_config = recipe->mig_config;
  return e;
}

Result<Expectation> expectation_from_overlay_manifest(const fs::path& file) {
  auto text = read_file(file, 1 << 20);  // a manifest is a few hundred bytes
  if (!text) return text.error();
  Json j = Json::parse(*text, nullptr, false);
  std::string where = file.string() + ": ";
  if (!j.is_object() || !j.contains("driver") || !j["driver"].is_object()) return input_error(where + "not a node overlay manifest (no driver object)");
  Expectation e;
  e.source = file.filename().string();
  e.driver_mode = "host";
  try {
    const Json& d = j["driver"];
    if (j.contains("kernels")) e.kernels = j["kernels"].get<std::vector<std::string>>();
    set_driver(e, d.value("version", ""), d.value("branch", ""), d.value("moduleType", ""));
    if (j.contains("signer") && j["signer"].is_object()) {
      e.signer_fingerprint = j["signer"].value("fingerprint", "");
      e.signer_subject = j["signer"].value("subject", "");
    }
  } catch (const Json::exception&) {
    return input_error(where + "driver, kernels or signer has the wrong type");
  }
  return e;
}

NodeReport check_node(const NodeCheckOptions& o) {
  NodeReport r;
  r.facts = read_node_facts(o.root);
  r.expected = o.expected;
  Checker c{o, r, {}, {}};
  c.gpus();
  c.os_and_kernel();
  c.driver();
  c.module_file();
  c.nvml_checks();
  c.devices();
  c.cuda_checks();
  c.daemons();
  // The report's order follows what an operator reads first.
  static const std::vector<std::string> order = {"gpus", "os", "kernel", "driver", "module", "devices", "nvml", "mig",
                                                 "ecc", "signals", "cuda", "persistenced", "fabricmanager"};
  std::stable_sort(r.checks.begin(), r.checks.end(), [&](const auto& a, const auto& b) {
    return std::find(order.begin(), order.end(), a.check) < std::find(order.begin(), order.end(), b.check);
  });
  return r;
}

int NodeReport::exit_code() const {
  bool pass = false;
  for (const auto& c : checks) {
    if (c.status == Status::Fail) return 1;
    pass = pass || c.status == Status::Pass;
  }
  return pass ? 0 : 3;
}

std::string NodeReport::text() const {
  std::ostringstream out;
  int n[3] = {0, 0, 0};
  for (const auto& c : checks) {
    out << to_string(c.status) << "  " << c.check << std::string(c.check.size() < 14 ? 14 - c.check.size() : 1, ' ') << c.detail << "\n";
    ++n[static_cast<int>(c.status)];
  }
  out << "node check: " << n[0] << " PASS, " << n[1] << " FAIL, " << n[2] << " SKIP\n";
  return out.str();
}

std::string NodeReport::json() const {
  Json checks_j = Json::array();
  int n[3] = {0, 0, 0};
  for (const auto& c : checks) {
    checks_j.push_back({{"check", c.check}, {"status", to_string(c.status)}, {"detail", c.detail}});
    ++n[static_cast<int>(c.status)];
  }
  Json j = {{"node", facts_json(facts)}, {"checks", checks_j}, {"summary", {{"pass", n[0]}, {"fail", n[1]}, {"skip", n[2]}}}, {"exitCode", exit_code()}};
  if (expected) {
    const auto& e = *expected;
    j["expected"] = {{"source", e.source}, {"gpus", e.gpus}, {"os", e.os}, {"kernels", e.kernels}, {"driverMode", e.driver_mode},
                     {"driverVersion", e.driver_version}, {"driverBranch", e.driver_branch}, {"kernelModuleType", e.module_type},
                     {"migConfig", e.mig_config}, {"signerFingerprint", e.signer_fingerprint}};
  }
  // Facts are a node's own bytes (os-release, sysfs, comm): not always UTF-8.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string detect_target(const NodeFacts& f) {
  std::ostringstream out;
  std::map<std::string, int> count;
  std::vector<std::string> order;
  for (const auto& g : f.gpus) {
    std::string name = catalog_name(g.pci_id);
    std::string key = name.empty() ? "\"" + g.pci_id + "\"" : name;
    if (!count[key]++) order.push_back(key);
  }
  out << "# gpubundle node detect: the recipe's target section for this node\n";
  out << "target:\n";
  if (order.empty()) out << "  gpus: []  # no NVIDIA GPU on the PCI bus\n";
  else {
    out << "  gpus:\n";
    for (const auto& k : order) {
      out << "    - " << k << "  # " << count[k] << " on this node";
      if (k.front() == '"') out << "; not in gpubundle's catalog";
      out << "\n";
    }
  }
  out << "  os: " << (f.os.empty() ? "\"\"  # no os-release" : f.os) << "\n";
  out << "  kernels: [" << f.kernel << "]\n";
  out << "  platforms: [" << f.platform << "]\n";
  if (!f.module_version.empty())
    out << "# loaded driver: " << f.module_version << (f.open_module ? (*f.open_module ? ", open kernel modules" : ", proprietary kernel modules") : "")
        << "\n";
  if (f.nvswitches) out << "# " << f.nvswitches << " NVSwitches: the fabric manager is needed\n";
  return out.str();
}

}  // namespace gb::node
