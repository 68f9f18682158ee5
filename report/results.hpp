#pragma once
// The acceptance results `gpubundle report` reads, checked field by field.
// Their formats are the writers' (docs/acceptance-results.md):
//   kind "gpubundle.verify"   the kit's verify.sh --json
//   kind "gpubundle.nccl"     the kit's NCCL all-reduce script, one file per run
//   no kind, "node"+"checks"  gpubundle node check --json (docs/node-check.md);
//                             the node is named by the file ("gpu-node-1.json")
//   the kit's manifest.json   bundle and lock identity, versions, images (kit/kit.hpp)
// Any other document, a schemaVersion newer than k_results_schema_version, a
// missing or mistyped field: one input error naming the file and the field
// ("results/run1.json: field rows[3].outOfPlace.busBw: must be a number").
// Unknown fields are ignored, so writers may add some without a new schema.
// Whole-number fields also take a float that is whole ("3e+06"), since the
// NCCL script copies numbers as all_reduce_perf prints them.
//
// Limits: a file is at most k_result_max_bytes, nested at most 32 deep, and a
// run has at most k_nccl_max_rows rows.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb::report {

constexpr int k_results_schema_version = 1;
constexpr std::size_t k_result_max_bytes = 16 << 20;
constexpr std::size_t k_nccl_max_rows = 4096;

enum class Status { Pass, Fail, Skip };
const char* to_string(Status s);  // "PASS", "FAIL", "SKIP"

struct Check {
  std::string name;  // verify.sh's check name, or the node check's
  Status status = Status::Skip;
  std::string detail;
};

struct Counts {
  int pass = 0, fail = 0, skip = 0;
};
Counts count(const std::vector<Check>& checks);

// verify.sh --json.
struct VerifyRun {
  std::string file;  // as given; names the run in the report
  std::string generator, started_at, namespace_name;
  std::vector<Check> checks;
};

// gpubundle node check --json.
struct NodeCheck {
  std::string file;
  std::string node;  // the file name without ".json"
  std::string os, kernel, driver;
  std::vector<std::string> gpus;  // catalog names, one per GPU
  std::vector<Check> checks;
  int exit_code = 0;
};

// One all_reduce_perf launch.
struct NcclSide {
  double time_us = 0, alg_bw = 0, bus_bw = 0;  // microseconds, GB/s, GB/s
  std::optional<std::int64_t> wrong;           // none: run with -c 0 ("N/A")
};
struct NcclRow {
  std::uint64_t bytes = 0, count = 0;
  std::string type, redop;
  std::int64_t root = -1;
  NcclSide out_of_place, in_place;
};
struct NcclRun {
  std::string file;
  std::string test, started_at, image, nccl_version, data_type, red_op;
  std::vector<std::string> nodes;
  std::int64_t gpus_per_node = 0, ranks = 0;
  std::vector<NcclRow> rows;
  double avg_bus_bw = 0;  // GB/s, all_reduce_perf's "# Avg bus bandwidth"
  std::int64_t out_of_bounds = 0;
  std::optional<double> min_bus_bw;  // the recipe's bound on avgBusBw; none or 0: no bound
  // The network NCCL used ("IB", "Socket", a plugin's name; several joined by
  // ", "), "" when the log did not say or the file predates the field; and
  // whether the kit required the fabric (a lock with a network section).
  std::string transport;
  bool fabric_required = false;
  bool passed = false;  // as the file says; verdict.hpp recomputes it
};

// What the report shows from the kit's manifest.json.
struct KitIdentity {
  std::string file;
  std::string generator, bundle_id;
  std::string recipe_name, recipe_sha256;
  std::string chart_name, chart_version, chart_app_version, chart_sha256;
  std::string operator_version;
  std::string registry;  // host[/prefix]
  std::string driver_mode, driver_version, driver_branch, kernel_module_type;
  bool use_precompiled = false;
  std::vector<std::string> gpus, kernels;
  std::string os;
  struct Image {
    std::string source, destination, digest;
  };
  std::vector<Image> images;
  std::vector<std::string> files;  // the kit's files, as its manifest lists them
  // The recipe has acceptance.nccl: the kit carries the NCCL script.
  bool nccl_acceptance() const;
};

struct Results {
  std::optional<KitIdentity> kit;
  std::vector<VerifyRun> verify;
  std::vector<NodeCheck> nodes;
  std::vector<NcclRun> nccl;
};

// One result document (its text), told apart by kind and added to `into`;
// `file` names it in messages and in the report.
Result<void> add_result(Results& into, std::string_view text, const std::string& file);
Result<KitIdentity> parse_kit_manifest(std::string_view text, const std::string& file);

// Reads every input: a file, or a folder whose *.json files are read in name
// order (not its subfolders); and, when kit_dir is not empty, its manifest.json.
Result<Results> load_results(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& kit_dir);

}  // namespace gb::report
