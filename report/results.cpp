#include "report/results.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "common/strings.hpp"

namespace gb::report {

using nlohmann::json;

namespace {

constexpr int k_max_depth = 32;

// A field that is missing or has the wrong type; caught once per file.
struct BadField {
  std::string field, problem;
};

std::string field_path(const std::string& at, std::string_view key) { return at.empty() ? std::string(key) : at + "." + std::string(key); }

// The field key of obj; with `is`, of the type it accepts ("must be <what>").
const json& need(const json& obj, const std::string& at, const char* key, bool (json::*is)() const noexcept = nullptr,
                 const char* what = "") {
  if (!obj.is_object()) throw BadField{at, "must be an object"};
  auto it = obj.find(key);
  if (it == obj.end()) throw BadField{field_path(at, key), "missing"};
  if (is && !((*it).*is)()) throw BadField{field_path(at, key), std::string("must be ") + what};
  return *it;
}

std::string str(const json& obj, const std::string& at, const char* key) {
  return need(obj, at, key, &json::is_string, "a string").get<std::string>();
}

bool boolean(const json& obj, const std::string& at, const char* key) { return need(obj, at, key, &json::is_boolean, "true or false").get<bool>(); }

double number(const json& obj, const std::string& at, const char* key) {
  double d = need(obj, at, key, &json::is_number, "a number").get<double>();
  if (!std::isfinite(d) || d < 0) throw BadField{field_path(at, key), "must be a finite number from 0"};
  return d;
}

std::int64_t integer(const json& v, const std::string& field) {
  // A writer that copies all_reduce_perf's text may spell a count "3e+06".
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) >= 9.2e18) throw BadField{field, "must be a whole number"};
    return static_cast<std::int64_t>(d);
  }
  // Compared as JSON numbers: get<int64_t>() would wrap 2^64 - 1.
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    throw BadField{field, "must be a whole number"};
  return v.get<std::int64_t>();
}

std::int64_t integer(const json& obj, const std::string& at, const char* key) { return integer(need(obj, at, key), field_path(at, key)); }

std::int64_t natural(const json& obj, const std::string& at, const char* key) {
  std::int64_t n = integer(obj, at, key);
  if (n < 0) throw BadField{field_path(at, key), "must be a whole number from 0"};
  return n;
}

const json& array(const json& obj, const std::string& at, const char* key) { return need(obj, at, key, &json::is_array, "a list"); }

// Calls read(element, its field path) for each element of the list at key.
template <typename F>
void each(const json& obj, const std::string& at, const char* key, F&& read) {
  const json& list = array(obj, at, key);
  for (std::size_t n = 0; n < list.size(); ++n) read(list[n], field_path(at, key) + "[" + std::to_string(n) + "]");
}

std::vector<std::string> strings(const json& obj, const std::string& at, const char* key) {
  std::vector<std::string> out;
  each(obj, at, key, [&](const json& s, const std::string& here) {
    if (!s.is_string()) throw BadField{here, "must be a string"};
    out.push_back(s.get<std::string>());
  });
  return out;
}

Status status(const json& obj, const std::string& at, const char* key) {
  std::string s = str(obj, at, key);
  if (s == "PASS") return Status::Pass;
  if (s == "FAIL") return Status::Fail;
  if (s == "SKIP") return Status::Skip;
  throw BadField{field_path(at, key), quote(s) + " is not PASS, FAIL or SKIP"};
}

// schemaVersion: a whole number from 1, no newer than this reader.
void check_schema(const json& j) {
  const json& v = need(j, "", "schemaVersion");
  if (!v.is_number_integer() || v < 1) throw BadField{"schemaVersion", "must be a whole number from 1"};
  if (v > k_results_schema_version)
    throw BadField{"schemaVersion", v.dump() + " is newer than this gpubundle reads (" + std::to_string(k_results_schema_version) +
                                        "); upgrade gpubundle"};
}

// The summary a writer gives must agree with its checks.
void check_summary(const json& j, const std::vector<Check>& checks) {
  Counts c = count(checks);
  const json& s = need(j, "", "summary");
  auto agree = [&](const char* key, int n, const char* word) {
    std::int64_t said = natural(s, "summary", key);
    if (said != n)
      throw BadField{field_path("summary", key), std::to_string(said) + ", but " + std::to_string(n) + " checks are " + word};
  };
  agree("pass", c.pass, "PASS");
  agree("fail", c.fail, "FAIL");
  agree("skip", c.skip, "SKIP");
}

// The checks, each named by name_key, and the summary that must agree with them.
std::vector<Check> read_checks(const json& j, const char* name_key) {
  std::vector<Check> out;
  each(j, "", "checks", [&](const json& c, const std::string& at) {
    out.push_back({str(c, at, name_key), status(c, at, "status"), str(c, at, "detail")});
  });
  check_summary(j, out);
  return out;
}

VerifyRun verify_run(const json& j, const std::string& file) {
  VerifyRun v;
  v.file = file;
  v.generator = str(j, "", "generator");
  v.started_at = str(j, "", "startedAt");
  v.namespace_name = str(j, "", "namespace");
  v.checks = read_checks(j, "name");
  return v;
}

NodeCheck node_check(const json& j, const std::string& file) {
  NodeCheck c;
  c.file = file;
  c.node = std::filesystem::path(file).stem().string();
  const json& node = need(j, "", "node");
  c.os = str(node, "node", "os");
  c.kernel = str(node, "node", "kernel");
  c.driver = str(node, "node", "driver");
  each(node, "node", "gpus", [&](const json& g, const std::string& at) { c.gpus.push_back(str(g, at, "name")); });
  c.checks = read_checks(j, "check");
  c.exit_code = static_cast<int>(std::clamp<std::int64_t>(integer(j, "", "exitCode"), -1, 255));
  return c;
}

NcclSide nccl_side(const json& row, const std::string& at, const char* key) {
  const json& side = need(row, at, key);
  std::string here = field_path(at, key);
  NcclSide s{number(side, here, "timeUs"), number(side, here, "algBw"), number(side, here, "busBw"), std::nullopt};
  const json& wrong = need(side, here, "wrong");
  if (!wrong.is_null()) {
    // A count: a negative one would cancel the other side's in the verdict's sum.
    s.wrong = integer(wrong, field_path(here, "wrong"));
    if (*s.wrong < 0) throw BadField{field_path(here, "wrong"), "must be a whole number from 0, or null"};
  }
  return s;
}

NcclRun nccl_run(const json& j, const std::string& file) {
  NcclRun r;
  r.file = file;
  r.test = str(j, "", "test");
  r.started_at = str(j, "", "startedAt");
  r.image = str(j, "", "image");
  r.nodes = strings(j, "", "nodes");
  r.gpus_per_node = natural(j, "", "gpusPerNode");
  r.ranks = natural(j, "", "ranks");
  r.nccl_version = str(j, "", "ncclVersion");
  r.data_type = str(j, "", "dataType");
  r.red_op = str(j, "", "redOp");
  if (array(j, "", "rows").size() > k_nccl_max_rows) throw BadField{"rows", "more than " + std::to_string(k_nccl_max_rows) + " rows"};
  // A braced list is read left to right: the first bad field is the one named.
  each(j, "", "rows", [&](const json& row, const std::string& at) {
    r.rows.push_back({static_cast<std::uint64_t>(natural(row, at, "bytes")), static_cast<std::uint64_t>(natural(row, at, "count")),
                      str(row, at, "type"), str(row, at, "redop"), integer(row, at, "root"), nccl_side(row, at, "outOfPlace"),
                      nccl_side(row, at, "inPlace")});
  });
  r.avg_bus_bw = number(j, "", "avgBusBw");
  r.out_of_bounds = natural(j, "", "outOfBounds");
  if (j.contains("minBusBw")) r.min_bus_bw = number(j, "", "minBusBw");
  // Both are newer than schema 1's first writers: absent, no fabric was asked for.
  if (j.contains("transport")) r.transport = str(j, "", "transport");
  if (j.contains("fabricRequired")) r.fabric_required = boolean(j, "", "fabricRequired");
  r.passed = boolean(j, "", "passed");
  return r;
}

KitIdentity kit_identity(const json& j, const std::string& file) {
  KitIdentity k;
  k.file = file;
  k.generator = str(j, "", "generator");
  k.bundle_id = str(j, "", "bundleId");
  const json& recipe = need(j, "", "recipe");
  k.recipe_name = str(recipe, "recipe", "name");
  k.recipe_sha256 = str(recipe, "recipe", "sha256");
  const json& chart = need(j, "", "chart");
  k.chart_name = str(chart, "chart", "name");
  k.chart_version = str(chart, "chart", "version");
  k.chart_app_version = str(chart, "chart", "appVersion");
  k.chart_sha256 = str(chart, "chart", "sha256");
  k.operator_version = str(need(j, "", "operator"), "operator", "version");
  const json& registry = need(j, "", "registry");
  k.registry = str(registry, "registry", "host");
  if (std::string prefix = str(registry, "registry", "prefix"); !prefix.empty()) k.registry += "/" + prefix;
  const json& driver = need(j, "", "driver");
  k.driver_mode = str(driver, "driver", "mode");
  k.driver_version = str(driver, "driver", "version");
  k.driver_branch = str(driver, "driver", "branch");
  k.kernel_module_type = str(driver, "driver", "kernelModuleType");
  k.use_precompiled = boolean(driver, "driver", "usePrecompiled");
  const json& target = need(j, "", "target");
  k.gpus = strings(target, "target", "gpus");
  k.os = str(target, "target", "os");
  k.kernels = strings(target, "target", "kernels");
  each(j, "", "images", [&](const json& i, const std::string& at) {
    k.images.push_back({str(i, at, "source"), str(i, at, "destination"), str(i, at, "digest")});
  });
  k.files = strings(j, "", "files");
  return k;
}

// Parses text and hands the object to `read`, turning every failure into one
// line naming the file (and the field).
template <typename F>
Result<void> read_json(std::string_view text, const std::string& file, F&& read) {
  if (text.size() > k_result_max_bytes) return input_error(file + ": larger than " + std::to_string(k_result_max_bytes) + " bytes");
  try {
    // Nesting is bounded before parsing: the destructor recurses.
    if (json_nests_deeper_than(text, k_max_depth)) throw BadField{"", "nested deeper than " + std::to_string(k_max_depth) + " levels"};
    json j = json::parse(text.begin(), text.end());
    if (!j.is_object()) return input_error(file + ": not a JSON object");
    read(j);
  } catch (const json::parse_error& e) {
    return input_error(file + ": not valid JSON: " + e.what());
  } catch (const json::out_of_range& e) {
    // A number past a double's range ("1.8e308") stops the parser itself.
    return input_error(file + ": not valid JSON: " + e.what());
  } catch (const BadField& b) {
    return input_error(file + ": " + (b.field.empty() ? "" : "field " + b.field + ": ") + b.problem);
  }
  return {};
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

Counts count(const std::vector<Check>& checks) {
  Counts c;
  for (const auto& check : checks) {
    if (check.status == Status::Pass) ++c.pass;
    else if (check.status == Status::Fail) ++c.fail;
    else ++c.skip;
  }
  return c;
}

bool KitIdentity::nccl_acceptance() const {
  return std::find(files.begin(), files.end(), "acceptance/nccl-allreduce.sh") != files.end();
}

Result<void> add_result(Results& into, std::string_view text, const std::string& file) {
  return read_json(text, file, [&](const json& j) {
    auto kind = j.find("kind");
    if (kind == j.end()) {
      if (!j.contains("node") || !j.contains("checks"))
        throw BadField{"kind", "missing, and not `gpubundle node check --json` output either (no node and checks)"};
      into.nodes.push_back(node_check(j, file));
      return;
    }
    if (!kind->is_string()) throw BadField{"kind", "must be a string"};
    std::string k = kind->get<std::string>();
    if (k != "gpubundle.verify" && k != "gpubundle.nccl")
      throw BadField{"kind", quote(k) + " is not a result this gpubundle reads (gpubundle.verify, gpubundle.nccl)"};
    check_schema(j);
    if (k == "gpubundle.verify") into.verify.push_back(verify_run(j, file));
    else into.nccl.push_back(nccl_run(j, file));
  });
}

Result<KitIdentity> parse_kit_manifest(std::string_view text, const std::string& file) {
  KitIdentity k;
  auto read = read_json(text, file, [&](const json& j) {
    check_schema(j);
    k = kit_identity(j, file);
  });
  if (!read) return read.error();
  return k;
}

Result<Results> load_results(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& kit_dir) {
  namespace fs = std::filesystem;
  Results results;
  auto add_file = [&](const fs::path& path) -> Result<void> {
    auto text = read_file(path, k_result_max_bytes);
    if (!text) return text.error();
    return add_result(results, *text, path.string());
  };
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      if (auto added = add_file(input); !added) return added.error();
      continue;
    }
    std::vector<fs::path> files;
    for (fs::directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".json" && it->is_regular_file(ec)) files.push_back(it->path());
    if (ec) return input_error(input.string() + ": cannot list the folder: " + ec.message());
    if (files.empty()) return input_error(input.string() + ": no *.json result files in the folder");
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      if (auto added = add_file(f); !added) return added.error();
  }
  if (!kit_dir.empty()) {
    fs::path manifest = kit_dir / "manifest.json";
    auto text = read_file(manifest, k_result_max_bytes);
    if (!text) return text.error();
    auto kit = parse_kit_manifest(*text, manifest.string());
    if (!kit) return kit.error();
    results.kit = std::move(*kit);
  }
  return results;
}

}  // namespace gb::report
