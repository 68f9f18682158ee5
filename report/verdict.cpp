#include "report/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>

namespace gb::report {

namespace {

std::string file_base(const std::string& file) { return std::filesystem::path(file).filename().string(); }

std::string n_of(long n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string gbps_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v > k_max_bus_bw || (v > 0 && v < 0.01) ? "%.3g" : "%.2f", v);
  return buf;
}

std::string joined(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// "gpubundle X (kit of bundle ID)" or "(kit of recipe NAME)": the kit verify.sh came from.
std::pair<std::string, std::string> generator_kit(const std::string& generator) {
  for (const char* what : {"bundle", "recipe"}) {
    std::string marker = std::string("(kit of ") + what + " ";
    auto at = generator.find(marker);
    if (at == std::string::npos) continue;
    auto start = at + marker.size();
    auto end = generator.find(')', start);
    if (end != std::string::npos) return {what, generator.substr(start, end - start)};
  }
  return {};
}

bool driver_matches(const KitIdentity& k, const std::string& driver) {
  if (!k.driver_version.empty()) return driver == k.driver_version;
  if (!k.driver_branch.empty()) return driver.rfind(k.driver_branch + ".", 0) == 0;
  return true;
}

std::vector<std::string> mismatches(const Results& r, const std::vector<std::string>& nodes) {
  std::vector<std::string> out;
  if (!r.kit) return out;
  const KitIdentity& k = *r.kit;
  for (const auto& v : r.verify) {
    auto [what, name] = generator_kit(v.generator);
    if (what == "bundle" && name != k.bundle_id)
      out.push_back(file_base(v.file) + ": verify.sh of bundle " + name + ", the kit's is " + (k.bundle_id.empty() ? "none" : k.bundle_id));
    else if (what == "recipe" && !k.bundle_id.empty())
      out.push_back(file_base(v.file) + ": verify.sh of a kit made outside a bundle (recipe " + name + "), the kit's bundle is " + k.bundle_id);
    else if (what == "recipe" && name != k.recipe_name)
      out.push_back(file_base(v.file) + ": verify.sh of recipe " + name + ", the kit's is " + k.recipe_name);
  }
  for (const auto& n : r.nodes) {
    std::vector<std::string> diff;
    if (!k.os.empty() && n.os != k.os) diff.push_back("OS " + n.os + ", the kit's is " + k.os);
    if (!k.kernels.empty() && std::find(k.kernels.begin(), k.kernels.end(), n.kernel) == k.kernels.end())
      diff.push_back("kernel " + n.kernel + ", the kit's are " + joined(k.kernels, ", "));
    if (!n.driver.empty() && !driver_matches(k, n.driver))
      diff.push_back("driver " + n.driver + ", the kit's is " + (k.driver_version.empty() ? "branch " + k.driver_branch : k.driver_version));
    if (!nodes.empty() && !std::binary_search(nodes.begin(), nodes.end(), n.node))
      diff.push_back("node " + n.node + " is not among the GPU nodes the results name (" + joined(nodes, ", ") + ")");
    if (!diff.empty()) out.push_back(file_base(n.file) + ": " + joined(diff, "; "));
  }
  for (const auto& run : r.nccl)
    if (!k.registry.empty() && run.image.rfind(k.registry + "/", 0) != 0)
      out.push_back(file_base(run.file) + ": image " + run.image + " is not at the kit's registry " + k.registry);
  return out;
}

}  // namespace

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "PASS";
    case Outcome::Fail: return "FAIL";
    case Outcome::Incomplete: return "INCOMPLETE";
  }
  return "?";
}

SourceOutcome outcome(const VerifyRun& v) {
  Counts c = count(v.checks);
  if (c.fail) return {Outcome::Fail, n_of(c.fail, "check", "checks") + " failed"};
  if (!c.pass) return {Outcome::Incomplete, v.checks.empty() ? "no checks" : "nothing passed: every check SKIP"};
  return {};
}

SourceOutcome outcome(const NodeCheck& n) {
  Counts c = count(n.checks);
  if (c.fail) return {Outcome::Fail, n_of(c.fail, "check", "checks") + " failed"};
  // docs/node-check.md: 0 passed, 1 failed, 2 bad usage or input, 3 nothing checked.
  if (n.exit_code == 2) return {Outcome::Incomplete, "exit 2: the node check refused its input and checked nothing"};
  if (n.exit_code != 0 && n.exit_code != 3) return {Outcome::Fail, "exit " + std::to_string(n.exit_code) + ", though no check says FAIL"};
  if (!c.pass) return {Outcome::Incomplete, n.checks.empty() ? "no checks" : "nothing passed: every check SKIP"};
  if (n.exit_code == 3) return {Outcome::Incomplete, "exit 3: nothing could be checked"};
  return {};
}

std::vector<std::string> nccl_problems(const NcclRun& r) {
  std::vector<std::string> p;
  if (!r.passed) p.push_back("the run says it failed (passed: false)");
  if (r.rows.empty()) p.push_back("no rows: all_reduce_perf measured nothing");
  // Counts from the file (results.cpp: each from 0) may reach INT64_MAX: summed saturating.
  auto sum = [](std::int64_t a, std::int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; };
  std::int64_t wrong = 0, wrong_rows = 0, absurd = 0;
  for (const auto& row : r.rows) {
    std::int64_t here = sum(std::max<std::int64_t>(row.out_of_place.wrong.value_or(0), 0), std::max<std::int64_t>(row.in_place.wrong.value_or(0), 0));
    wrong = sum(wrong, here);
    wrong_rows += here > 0;
    for (const NcclSide* s : {&row.out_of_place, &row.in_place})
      absurd += !std::isfinite(s->bus_bw) || s->bus_bw > k_max_bus_bw || !std::isfinite(s->alg_bw) || s->alg_bw > k_max_bus_bw;
  }
  if (wrong) p.push_back(n_of(static_cast<long>(wrong), "wrong value", "wrong values") + " (#wrong) in " + n_of(static_cast<long>(wrong_rows), "row", "rows"));
  if (r.out_of_bounds) p.push_back(n_of(static_cast<long>(r.out_of_bounds), "out-of-bounds value", "out-of-bounds values"));
  const std::string limit = std::to_string(static_cast<long>(k_max_bus_bw)) + " GB/s, no measurement";
  if (absurd) p.push_back(n_of(static_cast<long>(absurd), "bandwidth", "bandwidths") + " above " + limit);
  if (r.fabric_required) {
    std::vector<std::string> nets;
    for (std::size_t at = 0; at <= r.transport.size() && !r.transport.empty();) {
      auto end = std::min(r.transport.find(", ", at), r.transport.size());
      nets.push_back(r.transport.substr(at, end - at));
      at = end + 2;
    }
    if (nets.empty()) p.push_back("the fabric is untested: the run does not say which network NCCL used");
    else if (std::find(nets.begin(), nets.end(), "Socket") != nets.end())
      p.push_back("NCCL used sockets (transport " + r.transport + "), not the fabric");
  }
  if (!std::isfinite(r.avg_bus_bw) || r.avg_bus_bw > k_max_bus_bw) p.push_back("avgBusBw " + gbps_text(r.avg_bus_bw) + " GB/s is above " + limit);
  else if (r.min_bus_bw && *r.min_bus_bw > 0 && r.avg_bus_bw < *r.min_bus_bw)
    p.push_back("avgBusBw " + gbps_text(r.avg_bus_bw) + " GB/s is below its minBusBw " + gbps_text(*r.min_bus_bw) + " GB/s");
  return p;
}

SourceOutcome outcome(const NcclRun& r) {
  auto p = nccl_problems(r);
  if (p.empty()) return {};
  return {Outcome::Fail, (r.passed ? "says passed, but " : "") + joined(p, "; ")};
}

std::vector<std::string> gpu_nodes(const Results& r) {
  std::set<std::string> nodes;
  for (const auto& v : r.verify)
    for (const auto& c : v.checks) {
      // verify.sh: "node NAME allocatable: ...", "node NAME DRA devices: ...", "node NAME: ..."
      if (c.name != "node-gpus" || c.detail.rfind("node ", 0) != 0) continue;
      std::string name = c.detail.substr(5, c.detail.find_first_of(" :", 5) - 5);
      if (!name.empty()) nodes.insert(name);
    }
  for (const auto& run : r.nccl) nodes.insert(run.nodes.begin(), run.nodes.end());
  return {nodes.begin(), nodes.end()};
}

Verdict verdict(const Results& r) {
  Verdict v;
  auto note = [&](const SourceOutcome& o, const std::string& source) {
    if (o.outcome == Outcome::Fail) v.failed.push_back(source + ": " + o.why);
    else if (o.outcome == Outcome::Incomplete) v.passed_nothing.push_back(source + ": " + o.why);
    else ++v.passed_sources;
  };
  for (const auto& x : r.verify) note(outcome(x), "verify.sh " + file_base(x.file));
  for (const auto& x : r.nodes) note(outcome(x), "node " + x.node);
  for (const auto& x : r.nccl) note(outcome(x), "NCCL run " + std::filesystem::path(x.file).stem().string());

  std::vector<std::string> nodes = gpu_nodes(r);
  if (r.kit && r.verify.empty()) v.missing.push_back("no verify.sh result");
  if (r.kit && r.kit->nccl_acceptance() && r.nccl.empty()) v.missing.push_back("no NCCL run, though the kit has acceptance/nccl-allreduce.sh");
  std::vector<std::string> unchecked;
  for (const auto& n : nodes)
    if (std::none_of(r.nodes.begin(), r.nodes.end(), [&](const NodeCheck& c) { return c.node == n; })) unchecked.push_back(n);
  if (!unchecked.empty()) v.missing.push_back("no node check of " + joined(unchecked, ", "));
  if (r.verify.empty() && r.nodes.empty() && r.nccl.empty()) v.missing.push_back("no results given");
  v.mismatches = mismatches(r, nodes);

  if (!v.failed.empty()) v.outcome = Outcome::Fail;
  else if (!v.missing.empty() || !v.mismatches.empty() || !v.passed_nothing.empty() || v.passed_sources == 0) v.outcome = Outcome::Incomplete;
  else v.outcome = Outcome::Pass;
  return v;
}

std::string Verdict::line() const {
  if (outcome == Outcome::Pass) return "PASS: " + n_of(passed_sources, "result", "results") + " passed, none failed";
  std::vector<std::string> why = failed;
  // The files only: each one's rows say what differs.
  std::vector<std::string> files;
  for (const auto& m : mismatches) files.push_back(m.substr(0, m.find(": ")));
  if (!mismatches.empty()) why.push_back(n_of(static_cast<long>(mismatches.size()), "result names", "results name") + " another kit (" + joined(files, ", ") + ")");
  why.insert(why.end(), missing.begin(), missing.end());
  why.insert(why.end(), passed_nothing.begin(), passed_nothing.end());
  return std::string(to_string(outcome)) + ": " + joined(why, "; ");
}

}  // namespace gb::report
