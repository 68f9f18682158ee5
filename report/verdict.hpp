#pragma once
// The report's verdict, recomputed from the results' own numbers: a `passed`
// field or an exit code that the numbers contradict is not believed.
//
//   FAIL        something failed: a FAIL check, a node check that exited 1
//               (or an exit code node check never gives), an NCCL run with
//               #wrong values, out-of-bounds values, avgBusBw below its
//               minBusBw, no rows, an absurd bandwidth, `passed: false`, or,
//               where the fabric was required, a transport of Socket or none.
//   INCOMPLETE  nothing failed, but the results do not show the kit works:
//               a result the kit asks for is missing, a result names another
//               kit, or a source passed nothing (every check SKIP, no checks,
//               a node check that exited 2 or 3).
//   PASS        otherwise, and at least one check or run passed.
//
// What the kit asks for (with --kit): a verify.sh result; an NCCL run when
// the kit has acceptance/nccl-allreduce.sh (its manifest's `files`, written
// for a recipe with acceptance.nccl); and a node check of every GPU node the
// results name: verify.sh's node-gpus lines ("node NAME ...") and the NCCL
// runs' `nodes`, with or without --kit. A node check is matched by its file
// name (docs/report.md).
//
// Another kit (with --kit): a verify.sh result whose generator names another
// bundle or recipe; a node check whose OS, kernel or driver is not the kit's
// (kernel: one of the kit's kernels when it lists some; driver: the kit's
// version, else its branch); an NCCL run whose image is not at the kit's site
// registry; a node check of a node the results do not list as a GPU node.

#include <string>
#include <vector>

#include "report/results.hpp"

namespace gb::report {

// Bus bandwidths above this (GB/s) are no measurement: today's largest NVLink
// domains reach a few TB/s per GPU. The plot clamps them, and the run fails.
constexpr double k_max_bus_bw = 1e5;

enum class Outcome { Pass, Fail, Incomplete };
const char* to_string(Outcome o);  // "PASS", "FAIL", "INCOMPLETE"

// One source's outcome and, unless it passed, why (one line).
struct SourceOutcome {
  Outcome outcome = Outcome::Pass;
  std::string why;
};
SourceOutcome outcome(const VerifyRun& v);
SourceOutcome outcome(const NodeCheck& n);
SourceOutcome outcome(const NcclRun& r);

// What a run's own numbers say is wrong, whatever its `passed` says; empty
// when it passed.
std::vector<std::string> nccl_problems(const NcclRun& r);

// GPU nodes the results name (verify.sh's node-gpus lines, the NCCL runs'
// nodes), sorted, each once.
std::vector<std::string> gpu_nodes(const Results& r);

struct Verdict {
  Outcome outcome = Outcome::Incomplete;
  std::vector<std::string> failed;      // "node gpu-node-1: 1 check failed"
  std::vector<std::string> missing;     // "no node check of gpu-node-2"
  std::vector<std::string> mismatches;  // "h200-node.json: OS ubuntu24.04, the kit's is ubuntu22.04"
  std::vector<std::string> passed_nothing;  // sources that passed nothing
  int passed_sources = 0;
  // "FAIL: ..." as the report and the command print it; results from another
  // kit by file name only (`mismatches` says what differs).
  std::string line() const;
};
Verdict verdict(const Results& r);

}  // namespace gb::report
