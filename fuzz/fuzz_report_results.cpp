// Acceptance results (report/results.hpp) made into the verdict and the
// HTML report (verdict.hpp, report.hpp, plot.hpp), as `gpubundle report`
// does: the input holds one or more result documents joined by a marker line
// (node check, verify.sh or NCCL results, read as gpu-node-1.json,
// gpu-node-2.json, ...); a part no result reader takes is tried as the kit's
// manifest.json. The verdict is checked against an oracle written here from
// docs/report.md, apart from verdict.cpp: never PASS when no check or run
// passed, when every check of a source is SKIP, when a node check's exitCode
// is not 0, or when an NCCL run's own numbers fail (#wrong, out of bounds, an
// absurd or non-finite bandwidth, avgBusBw under its minBusBw, no rows,
// passed: false, a fabric run over Socket or with no transport). The HTML
// must carry no `<script` from the input.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "fuzz/bundle_volumes.hpp"
#include "fuzz/fuzz_input.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "report/verdict.hpp"

namespace {

using namespace gb::report;

// Whether a source passed, by the results' own numbers.
bool checks_passed(const std::vector<Check>& checks) {
  bool pass = false;
  for (const auto& c : checks) {
    if (c.status == Status::Fail) return false;
    pass = pass || c.status == Status::Pass;
  }
  return pass;
}

bool sane_bw(double v) { return std::isfinite(v) && v >= 0 && v <= k_max_bus_bw; }

bool run_passed(const NcclRun& r) {
  if (!r.passed || r.rows.empty() || r.out_of_bounds != 0 || !sane_bw(r.avg_bus_bw)) return false;
  if (r.min_bus_bw && *r.min_bus_bw > 0 && !(r.avg_bus_bw >= *r.min_bus_bw)) return false;
  // A fabric run: a transport named, and no ", "-separated part of it Socket.
  if (r.fabric_required && (r.transport.empty() || (", " + r.transport + ", ").find(", Socket, ") != std::string::npos)) return false;
  for (const auto& row : r.rows)
    for (const NcclSide* s : {&row.out_of_place, &row.in_place})
      if (s->wrong.value_or(0) != 0 || !sane_bw(s->bus_bw) || !sane_bw(s->alg_bw)) return false;
  return true;
}

// Could the verdict be PASS at all?
bool may_pass(const Results& r) {
  if (r.verify.empty() && r.nodes.empty() && r.nccl.empty()) return false;
  if (r.kit && r.verify.empty()) return false;
  for (const auto& v : r.verify)
    if (!checks_passed(v.checks)) return false;
  for (const auto& n : r.nodes)
    if (n.exit_code != 0 || !checks_passed(n.checks)) return false;
  for (const auto& run : r.nccl)
    if (!run_passed(run)) return false;
  return true;
}

bool has_script(const std::string& html) {
  std::string lower(html.size(), '\0');
  std::transform(html.begin(), html.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("<script") != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Results results;
  std::size_t n = 0;
  for (std::string_view part : gbfuzz::split_volumes(gbfuzz::text(data, size))) {
    std::string file = "results/gpu-node-" + std::to_string(++n) + ".json";
    if (add_result(results, part, file)) continue;
    if (!results.kit)
      if (auto kit = parse_kit_manifest(part, "kit/manifest.json")) results.kit = std::move(*kit);
  }
  Verdict v = verdict(results);
  if (v.outcome == Outcome::Pass && !may_pass(results)) std::abort();
  if ((v.outcome == Outcome::Pass) != passed(results)) std::abort();
  (void)v.line();
  std::string html = report_html(results, "2026-01-01T00:00:00Z");
  if (has_script(html)) std::abort();
  return 0;
}
