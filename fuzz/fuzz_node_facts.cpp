// A node's files (node/facts.hpp) under a scratch --root, read by
// `gpubundle node check --root` and `node detect --root`: the input is split
// by a marker line into os-release, the kernel release and machine, the
// driver's /proc and /sys versions, one PCI function's vendor, class and
// device, the running kernel's nvidia.ko, a process's comm and /dev names
// (node_files.hpp). Facts and checks must come from below the root only:
// canary files with a per-run token sit beside and above it, and the kernel
// release, which names a folder, is a release or is refused. The check's
// JSON must stay valid JSON (`report` reads it).
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "fuzz/fuzz_input.hpp"
#include "fuzz/node_files.hpp"
#include "node/check.hpp"
#include "node/facts.hpp"
#include "recipes/recipe.hpp"

namespace {

namespace fs = std::filesystem;

void put(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A token no input can guess, and the same tree of files holding it at
// every level above the root: read, it shows up in the facts.
struct Canary {
  std::string token;
  fs::path base = gbfuzz::memory_scratch_dir() / "node_facts";
  fs::path root = base / "a" / "b" / "root";
  Canary() {
    std::random_device rd;
    for (int i = 0; i < 4; ++i) token += std::to_string(rd());
    for (const fs::path& dir : {base, base / "a", base / "a" / "b"}) {
      for (std::size_t n = 0; n < gbfuzz::k_node_files.size(); ++n) {
        std::string rel = gbfuzz::k_node_files[n];
        if (rel.find("<kver>") != std::string::npos) rel.replace(rel.find("<kver>"), 6, "6.8.0-" + token);
        put(dir / rel, "ID=" + token + "\nVERSION_ID=" + token + "\n" + token + "\n");
      }
      put(dir / "lib/modules" / token / "nvidia.ko", token);
    }
  }
};

bool has(const std::string& s, const std::string& token) { return s.find(token) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Canary canary;
  std::error_code ec;
  fs::remove_all(canary.root, ec);
  gbfuzz::write_node_files(canary.root, gbfuzz::text(data, size));

  gb::node::NodeCheckOptions options;
  options.root = canary.root;
  options.probe.root = canary.root;
  options.probe.xid_wait_ms = 0;
  options.cuda = false;
  gb::node::Expectation e;
  e.source = "fuzz/h200-node.lock.json";
  e.gpus = {"H200"};
  e.os = "ubuntu24.04";
  e.kernels = {"6.8.0-45-generic"};
  e.driver_mode = "conventional";
  e.driver_version = "580.159.04";
  e.driver_branch = "580";
  e.module_type = "open";
  e.mig_config = "all-disabled";
  options.expected = e;
  gb::node::NodeReport report = gb::node::check_node(options);
  const gb::node::NodeFacts& f = report.facts;

  // The kernel release names lib/modules/<release>: one plain folder name.
  if (!f.kernel.empty() && (!gb::recipes::is_kernel_release(f.kernel) || has(f.kernel, "/"))) std::abort();
  if (f.module_file && (f.module_file->path.rfind("/lib/modules/", 0) != 0 || has(f.module_file->path, "/../"))) std::abort();
  std::string text = report.text() + gb::node::detect_target(f);
  std::string json = report.json();
  // libFuzzer learns the token from these very comparisons: an input that
  // holds it proves nothing.
  if (!has(std::string(gbfuzz::text(data, size)), canary.token) && (has(text, canary.token) || has(json, canary.token))) std::abort();
  if (!nlohmann::json::accept(json)) std::abort();
  return 0;
}
