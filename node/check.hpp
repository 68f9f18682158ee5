#pragma once
// `gpubundle node check`: did this node come up the way the lock says?
// One PASS/FAIL/SKIP line per check. A check that cannot run here (no GPU,
// no NVML, no permission) is SKIP with its reason, never a silent pass.
//
// Exit codes (docs/node-check.md):
//   0  nothing failed and at least one check passed
//   1  at least one check failed
//   2  bad usage or bad input (lock, recipe, overlay manifest)
//   3  nothing failed, but nothing could be checked either (every check
//      SKIP: not a GPU node, or no permission to look)
//
// --json prints {"node": facts, "expected": {...}, "checks": [{check, status,
// detail}], "summary": {pass, fail, skip}, "exitCode"}: the shape a later
// DaemonSet would post for the kit's verify.sh to collect.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "node/facts.hpp"
#include "node/gpu_probe.hpp"

namespace gb::node {

enum class Status { Pass, Fail, Skip };
const char* to_string(Status s);

struct CheckResult {
  std::string check;  // "gpus", "driver", "module", "devices", "nvml", "ecc", ...
  Status status = Status::Skip;
  std::string detail;
};

// What the node should be, from a lock, a recipe or a baked overlay's
// manifest.json. Empty fields are not checked.
struct Expectation {
  std::string source;             // the file, for messages
  std::vector<std::string> gpus;  // catalog names
  std::string os;
  std::vector<std::string> kernels;
  std::string driver_mode;     // conventional | precompiled | host
  std::string driver_version;  // "580.105.08"
  std::string driver_branch;   // "580"
  std::string module_type;     // open | proprietary; "auto" resolved against the catalog
  std::string mig_config;      // "all-disabled", "all-1g.18gb", ...
  std::string signer_fingerprint;  // sha256 of the module signing certificate's DER
  std::string signer_subject;
};

Result<Expectation> expectation_from_lock(const std::filesystem::path& file);
Result<Expectation> expectation_from_recipe(const std::filesystem::path& file);
Result<Expectation> expectation_from_overlay_manifest(const std::filesystem::path& file);

struct NodeCheckOptions {
  std::filesystem::path root = "/";
  ProbeOptions probe;
  std::optional<Expectation> expected;
  int expect_gpu_count = 0;  // 0: any number
  bool cuda = true;
};

struct NodeReport {
  NodeFacts facts;
  std::optional<Expectation> expected;
  std::vector<CheckResult> checks;
  int exit_code() const;
  std::string text() const;
  std::string json() const;
};

NodeReport check_node(const NodeCheckOptions& options);

// The recipe's `target` section for this node, as YAML with comments
// (`gpubundle node detect`).
std::string detect_target(const NodeFacts& facts);

}  // namespace gb::node
