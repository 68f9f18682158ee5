#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "node/check.hpp"
#include "node/facts.hpp"
#include "recipes/catalog.hpp"

namespace gb::cli {

namespace {

// node detect --json: the target section as JSON, and what the YAML says in
// comments (GPUs per model, the loaded driver, NVSwitches) as fields.
std::string detect_json(const node::NodeFacts& f) {
  nlohmann::json gpus = nlohmann::json::array(), counts = nlohmann::json::object(), unknown = nlohmann::json::array();
  for (const auto& gpu : f.gpus) {
    const recipes::GpuInfo* known = recipes::Catalog::builtin().find_gpu(gpu.pci_id);
    std::string name = known ? known->name : gpu.pci_id;
    if (!known && std::find(unknown.begin(), unknown.end(), name) == unknown.end()) unknown.push_back(name);
    if (!counts.contains(name)) gpus.push_back(name);
    counts[name] = counts.value(name, 0) + 1;
  }
  auto one = [](const std::string& v) { return v.empty() ? nlohmann::json::array() : nlohmann::json::array({v}); };
  nlohmann::json j = {{"target", {{"gpus", gpus}, {"os", f.os}, {"kernels", one(f.kernel)}, {"platforms", one(f.platform)}}},
                      {"gpuCount", counts},
                      {"notInCatalog", unknown},
                      {"driver", f.module_version},
                      {"openKernelModule", f.open_module ? nlohmann::json(*f.open_module) : nlohmann::json(nullptr)},
                      {"nvswitches", f.nvswitches}};
  // os-release and sysfs bytes are not always UTF-8: replaced, not thrown on.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

CommandSpec node_command() {
  return {
      "node",
      "On a GPU node: write its recipe target (detect), or check it against a lock (check)",
      "`node detect` reads the live node (PCI ids in sysfs, os-release, the running kernel, the platform) and writes "
      "the recipe's target section, so a site starts its recipe from a real node (with --json: the same as JSON, with the "
      "GPUs per model and the loaded driver as fields). `node check` prints one "
      "PASS/FAIL/SKIP line per check: GPUs, OS and kernel, the loaded driver (version, branch, open or proprietary), "
      "the nvidia.ko on disk (vermagic; signer against a baked overlay's manifest), device nodes, NVML (names, "
      "memory, MIG layout, ECC and retired pages, XID, temperature, utilisation, memory used), a CUDA workload "
      "(a PTX kernel the driver compiles, run on every GPU and checked, plus a copy bandwidth figure) and the "
      "daemons. NVML and CUDA are loaded with dlopen from the driver's own libraries: the loader's path first, "
      "then /usr/local/nvidia/lib64 and the other places drivers install to. A check that cannot run here is "
      "SKIP with its reason. Exit 0 when nothing failed, 1 when a check failed, 3 when nothing could be checked. "
      "The same commands ship as the lean `gpubundle-node` executable, which needs only glibc, for nodes and node "
      "images without gpubundle's libraries.",
      "gpubundle node check --lock site-a.lock.json --expect-gpus 8",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        struct Opts {
          std::string out, lock, recipe, overlay, root = "/";
          std::vector<std::string> lib_dirs;
          int expect_gpus = 0;
          int xid_wait_ms = 1000;
          bool no_cuda = false;
        };
        auto o = std::make_shared<Opts>();
        CLI::App* detect = app.add_subcommand("detect", "Write the recipe's target section for this node");
        detect->add_option("-o,--output", o->out, "Write the YAML (JSON with --json) here (default: stdout)");
        detect->footer("Example:\n  gpubundle node detect -o site-a.target.yaml");
        CLI::App* check = app.add_subcommand("check", "Check this node against a lock, a recipe or a baked overlay");
        auto* lock = check->add_option("--lock", o->lock, "The lock the site's bundle was made from");
        auto* recipe = check->add_option("--recipe", o->recipe, "A recipe, when there is no lock");
        auto* overlay = check->add_option("--overlay-manifest", o->overlay, "manifest.json of a node-image bake");
        lock->excludes(recipe)->excludes(overlay);
        recipe->excludes(overlay);
        check->add_option("--expect-gpus", o->expect_gpus, "GPUs this node must have (default: any number)")->check(CLI::Range(0, 64));
        check->add_option("--xid-wait-ms", o->xid_wait_ms, "How long to listen for XID events (default 1000)")->check(CLI::Range(0, 60000));
        check->add_flag("--no-cuda", o->no_cuda, "Skip the CUDA workload");
        check->footer("Example:\n  gpubundle node check --lock site-a.lock.json --expect-gpus 8");
        check->add_option("--lib-dir", o->lib_dirs, "Look for libnvidia-ml.so.1 and libcuda.so.1 here first (repeatable)");
        for (CLI::App* sub : {detect, check})
          sub->add_option("--root", o->root, "Read sysfs, /proc, /dev and /etc below this folder (default /)");

        return [o, &g, detect, check]() -> int {
          if (detect->parsed()) {
            node::NodeFacts facts = node::read_node_facts(o->root);
            std::string yaml = g.json ? detect_json(facts) : node::detect_target(facts);
            if (o->out.empty()) std::fputs(yaml.c_str(), stdout);
            else write_atomic(o->out, yaml).value_or_throw();
            return 0;
          }
          node::NodeCheckOptions opts;
          opts.root = o->root;
          opts.probe.root = o->root;
          for (const auto& d : o->lib_dirs) opts.probe.lib_dirs.emplace_back(d);
          opts.probe.xid_wait_ms = o->xid_wait_ms;
          opts.expect_gpu_count = o->expect_gpus;
          opts.cuda = !o->no_cuda;
          if (!o->lock.empty()) opts.expected = node::expectation_from_lock(o->lock).value_or_throw();
          if (!o->recipe.empty()) opts.expected = node::expectation_from_recipe(o->recipe).value_or_throw();
          if (!o->overlay.empty()) opts.expected = node::expectation_from_overlay_manifest(o->overlay).value_or_throw();
          node::NodeReport report = node::check_node(opts);
          std::string out = g.json ? report.json() : report.text();
          std::fputs(out.c_str(), stdout);
          (void)check;
          return report.exit_code();
        };
      },
  };
}

}  // namespace gb::cli
