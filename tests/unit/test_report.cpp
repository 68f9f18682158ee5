// The handover report (report/): reading the results, the plot's axes and
// points, HTML escaping, and the one-line refusals of bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>

#include "report/plot.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "report/verdict.hpp"

using namespace gb;
using namespace gb::report;
using nlohmann::json;

namespace {

json nccl_doc(const std::vector<std::pair<std::uint64_t, double>>& rows) {
  json r = json::array();
  for (const auto& [bytes, busbw] : rows) {
    json side = {{"timeUs", 10.5}, {"algBw", busbw / 2}, {"busBw", busbw}, {"wrong", 0}};
    json in_place = side;
    in_place["wrong"] = nullptr;
    r.push_back({{"bytes", bytes}, {"count", bytes / 4}, {"type", "float"}, {"redop", "sum"}, {"root", -1}, {"outOfPlace", side}, {"inPlace", in_place}});
  }
  return {{"schemaVersion", 1}, {"kind", "gpubundle.nccl"}, {"test", "all_reduce_perf"}, {"startedAt", "2026-12-01T10:05:00Z"},
          {"image", "site/nccl-tests:1"}, {"nodes", {"n1", "n2"}}, {"gpusPerNode", 8}, {"ranks", 16}, {"ncclVersion", "2.28.9"},
          {"dataType", "float"}, {"redOp", "sum"}, {"rows", r}, {"avgBusBw", 12.5}, {"outOfBounds", 0}, {"passed", true}};
}

json verify_doc() {
  return {{"schemaVersion", 1},
          {"kind", "gpubundle.verify"},
          {"generator", "gpubundle 0.1.0 (kit of recipe r)"},
          {"startedAt", "2026-12-01T10:00:00Z"},
          {"namespace", "gpu-operator"},
          {"checks", {{{"name", "pods"}, {"status", "PASS"}, {"detail", "all pods ready"}}, {{"name", "mig"}, {"status", "SKIP"}, {"detail", "no MIG"}}}},
          {"summary", {{"pass", 1}, {"fail", 0}, {"skip", 1}}}};
}

// The message add_result gives for a document, "" when it is accepted.
std::string refusal(const json& doc, const std::string& file = "r.json") {
  Results r;
  auto added = add_result(r, doc.dump(), file);
  return added ? "" : added.error().message;
}

}  // namespace

TEST_CASE("html_escape makes input text inert in text and attributes", "[report]") {
  CHECK(html_escape(R"(<a href="x" onclick='y'>&amp;</a>)") == "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  CHECK(html_escape("plain text: 8 GiB, é") == "plain text: 8 GiB, é");
}

TEST_CASE("every string from the inputs reaches the HTML escaped", "[report]") {
  const std::string evil = "<script>alert(1)</script>\"'&";
  Results r;
  json v = verify_doc();
  v["checks"][0]["detail"] = evil;
  v["checks"][0]["name"] = evil;
  v["namespace"] = evil;
  v["generator"] = evil;
  REQUIRE(add_result(r, v.dump(), "<b>verify</b>.json"));
  json n = nccl_doc({{8, 0.5}, {1024, 3.5}});
  n["image"] = evil;
  n["nodes"] = {evil};
  n["ncclVersion"] = evil;
  n["startedAt"] = evil;
  REQUIRE(add_result(r, n.dump(), "<i>run</i>.json"));
  json node = {{"node", {{"os", evil}, {"kernel", evil}, {"driver", evil}, {"gpus", {{{"name", evil}}}}}},
               {"checks", {{{"check", evil}, {"status", "FAIL"}, {"detail", evil}}}},
               {"summary", {{"pass", 0}, {"fail", 1}, {"skip", 0}}},
               {"exitCode", 1}};
  REQUIRE(add_result(r, node.dump(), "results/<u>node.json"));
  KitIdentity kit;
  kit.recipe_name = kit.bundle_id = kit.operator_version = kit.registry = evil;
  kit.images.push_back({evil, evil, evil});
  r.kit = kit;
  std::string html = report_html(r, evil);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(html.find("<i>") == std::string::npos);
  CHECK(html.find("<u>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;") != std::string::npos);
  CHECK(html.find("&lt;u&gt;node") != std::string::npos);  // the node's name comes from its file
  CHECK(html.find("FAIL: node &lt;u&gt;node: 1 check failed") != std::string::npos);
}

TEST_CASE("the target row names kernels only when the lock has some", "[report]") {
  Results r;
  KitIdentity kit;
  kit.gpus = {"H200-SXM-141GB"};
  kit.os = "ubuntu24.04";
  r.kit = kit;
  CHECK(report_html(r, "t").find("H200-SXM-141GB on ubuntu24.04</td>") != std::string::npos);
  r.kit->kernels = {"6.8.0-45-generic"};
  CHECK(report_html(r, "t").find("H200-SXM-141GB on ubuntu24.04, kernels 6.8.0-45-generic</td>") != std::string::npos);
}

TEST_CASE("sizes are labelled in bytes and binary units", "[report]") {
  CHECK(size_label(8) == "8 B");
  CHECK(size_label(1000) == "1000 B");
  CHECK(size_label(1024) == "1 KiB");
  CHECK(size_label(1536) == "1.5 KiB");
  CHECK(size_label(std::uint64_t{8} << 30) == "8 GiB");
  CHECK(size_label(std::uint64_t{1} << 40) == "1 TiB");
}

TEST_CASE("the size axis runs 8 B to 8 GiB for all_reduce_perf -b 8 -e 8G", "[report]") {
  SizeAxis a = size_axis(8, std::uint64_t{8} << 30);
  CHECK(a.lo == 3);
  CHECK(a.hi == 33);
  CHECK(a.step == 3);
  std::vector<std::string> labels;
  for (const auto& t : size_ticks(a)) labels.push_back(t.label);
  CHECK(labels == std::vector<std::string>{"8 B", "64 B", "512 B", "4 KiB", "32 KiB", "256 KiB", "2 MiB", "16 MiB", "128 MiB", "1 GiB", "8 GiB"});
  CHECK(size_ticks(a).back().value == std::ldexp(1.0, 33));

  // A short range gets a label at every doubling; odd ends widen to powers of two.
  SizeAxis b = size_axis(1000, 1 << 20);
  CHECK(b.lo == 9);
  CHECK(b.hi == 20);
  CHECK(b.step == 1);
  CHECK(size_ticks(b).size() == 12);
  // One size alone still spans a doubling.
  SizeAxis c = size_axis(4096, 4096);
  CHECK(c.lo == 12);
  CHECK(c.hi == 13);
}

TEST_CASE("the bandwidth axis ends on a round step above the data", "[report]") {
  ValueAxis a = value_axis(468.8);
  CHECK(a.step == 100);
  CHECK(a.top == 500);
  std::vector<std::string> labels;
  for (const auto& t : value_ticks(a)) labels.push_back(t.label);
  CHECK(labels == std::vector<std::string>{"0", "100", "200", "300", "400", "500"});
  ValueAxis b = value_axis(12.5);
  CHECK(b.step == 2.5);
  CHECK(b.top == 12.5);
  CHECK(value_ticks(b)[1].label == "2.5");
  ValueAxis c = value_axis(0.9);
  CHECK(c.step == Approx(0.2));
  CHECK(c.top == Approx(1.0));
  CHECK(value_ticks(c).back().label == "1.0");
  CHECK(value_axis(0).top == 1);  // a run that moved nothing still has an axis
}

TEST_CASE("the SVG polylines hold the data's points, one colour per run", "[report]") {
  std::vector<PlotSeries> series = {
      {"run-a", {{std::uint64_t{8} << 30, 370.0}, {8, 0.01}, {1 << 20, 120.5}}},  // unsorted on purpose
      {"run-b", {{64, 0.2}, {std::uint64_t{1} << 30, 455.25}}},
  };
  PlotFrame f = plot_frame(series);
  // The frame's ends are the axis ends: 8 B at the left, 8 GiB at the right, 0 at the bottom.
  CHECK(f.x(8) == Approx(f.left));
  CHECK(f.x(std::ldexp(1.0, 33)) == Approx(f.left + f.width));
  CHECK(f.y(0) == Approx(f.top + f.height));
  CHECK(f.y_axis.top == 500);
  CHECK(f.y(500) == Approx(f.top));
  CHECK(f.x(1 << 18) == Approx(f.left + f.width * 15.0 / 30.0));  // 2^18 is halfway from 2^3 to 2^33

  std::string svg = bus_bw_svg(series);
  std::regex polyline(R"re(<polyline class="run" data-run="(\d+)" points="([^"]*)" fill="none" stroke="(#[0-9a-f]{6})")re");
  std::vector<std::smatch> found;
  for (std::sregex_iterator it(svg.begin(), svg.end(), polyline), end; it != end; ++it) found.push_back(*it);
  REQUIRE(found.size() == 2);
  for (std::size_t n = 0; n < found.size(); ++n) {
    CHECK(std::stoul(found[n][1].str()) == n);
    CHECK(found[n][3].str() == series_colour(n));
    auto points = series[n].points;
    std::sort(points.begin(), points.end());
    std::string list = found[n][2].str();
    std::regex pair(R"((-?[0-9.]+),(-?[0-9.]+))");
    std::size_t k = 0;
    for (std::sregex_iterator it(list.begin(), list.end(), pair), end; it != end; ++it, ++k) {
      REQUIRE(k < points.size());
      // Back from pixels to data.
      double bytes = std::exp2(f.x_axis.lo + (std::stod((*it)[1].str()) - f.left) / f.width * (f.x_axis.hi - f.x_axis.lo));
      double gbps = (f.top + f.height - std::stod((*it)[2].str())) / f.height * f.y_axis.top;
      CHECK(bytes == Approx(static_cast<double>(points[k].first)).epsilon(1e-4));
      CHECK(gbps == Approx(points[k].second).margin(0.02));
    }
    CHECK(k == points.size());
  }
  CHECK(std::string(series_colour(0)) != series_colour(1));
  CHECK(svg.find("run-a") != std::string::npos);  // the legend
  CHECK(svg.find("http") == std::string::npos);   // no namespace URL, no link
}

TEST_CASE("results are told apart by kind and read field by field", "[report]") {
  Results r;
  REQUIRE(add_result(r, verify_doc().dump(), "v.json"));
  REQUIRE(add_result(r, nccl_doc({{8, 0.1}, {16, 0.2}}).dump(), "dir/run1.json"));
  REQUIRE(r.verify.size() == 1);
  CHECK(r.verify[0].checks[0].name == "pods");
  CHECK(r.verify[0].checks[1].status == Status::Skip);
  REQUIRE(r.nccl.size() == 1);
  CHECK(r.nccl[0].rows.size() == 2);
  CHECK(r.nccl[0].rows[1].bytes == 16);
  CHECK(r.nccl[0].rows[1].out_of_place.bus_bw == 0.2);
  CHECK(r.nccl[0].rows[1].out_of_place.wrong == 0);
  CHECK_FALSE(r.nccl[0].rows[1].in_place.wrong.has_value());  // -c 0: "N/A"
  CHECK_FALSE(r.nccl[0].min_bus_bw.has_value());
  // Counts as all_reduce_perf may print them, and the recipe's bound.
  json spelled = nccl_doc({{8, 0.1}});
  spelled["rows"][0]["count"] = 3e+06;
  spelled["minBusBw"] = 350.5;
  REQUIRE(add_result(r, spelled.dump(), "spelled.json"));
  CHECK(r.nccl.back().rows[0].count == 3000000);
  CHECK(r.nccl.back().min_bus_bw == 350.5);
  CHECK(outcome(r.nccl[0]).outcome == Outcome::Pass);
  json failed = nccl_doc({{8, 0.1}});
  failed["passed"] = false;
  REQUIRE(add_result(r, failed.dump(), "run2.json"));
  CHECK(outcome(r.nccl.back()).why == "the run says it failed (passed: false)");
  CHECK(verdict(r).outcome == Outcome::Fail);
  // Past a double's range (1.8e308) or NaN spelled as text, JSON never reaches the plot.
  json doc = nccl_doc({{8, 0.1}});
  std::string text = doc.dump();
  text.replace(text.find("\"busBw\":0.1"), 11, "\"busBw\":1.8e308");
  Results parsed;
  auto added = add_result(parsed, text, "r.json");
  REQUIRE_FALSE(added);
  CHECK(added.error().kind == ErrorKind::Input);
  CHECK(added.error().message == "r.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1.8e308'");
}

TEST_CASE("the real H200 node check and the sample results read", "[report]") {
  auto results = load_results({std::string(GB_SOURCE_DIR) + "/examples/acceptance-results"}, {});
  REQUIRE(results);
  CHECK(results->verify.size() == 1);
  REQUIRE(results->nodes.size() == 1);
  const NodeCheck& node = results->nodes[0];
  CHECK(node.node == "h200-node");
  CHECK(node.gpus == std::vector<std::string>{"H200-SXM-141GB"});
  CHECK(node.driver == "580.159.04");
  CHECK(count(node.checks).pass == 11);
  CHECK(count(node.checks).skip == 2);
  REQUIRE(results->nccl.size() == 2);
  CHECK(results->nccl[0].rows.size() == 31);  // 8 B to 8 GiB
  CHECK(results->nccl[0].file < results->nccl[1].file);  // name order
}

TEST_CASE("bad input is refused in one line naming the file and the field", "[report]") {
  Results r;
  auto bad = add_result(r, "{\"kind\": ", "run.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().kind == ErrorKind::Input);
  CHECK(bad.error().message.rfind("run.json: not valid JSON: ", 0) == 0);
  CHECK(refusal(json::array({1})) == "r.json: not a JSON object");

  json unknown = verify_doc();
  unknown["kind"] = "gpubundle.upgrade";
  CHECK(refusal(unknown) == "r.json: field kind: 'gpubundle.upgrade' is not a result this gpubundle reads (gpubundle.verify, gpubundle.nccl)");
  CHECK(refusal(json{{"checks", json::array()}}) ==
        "r.json: field kind: missing, and not `gpubundle node check --json` output either (no node and checks)");

  json newer = nccl_doc({{8, 0.1}});
  newer["schemaVersion"] = 2;
  CHECK(refusal(newer) == "r.json: field schemaVersion: 2 is newer than this gpubundle reads (1); upgrade gpubundle");
  newer["schemaVersion"] = "1";
  CHECK(refusal(newer) == "r.json: field schemaVersion: must be a whole number from 1");

  json missing = nccl_doc({{8, 0.1}, {16, 0.2}});
  missing["rows"][1]["outOfPlace"].erase("busBw");
  CHECK(refusal(missing) == "r.json: field rows[1].outOfPlace.busBw: missing");
  json typed = nccl_doc({{8, 0.1}});
  typed["rows"][0]["inPlace"]["busBw"] = "fast";
  CHECK(refusal(typed) == "r.json: field rows[0].inPlace.busBw: must be a number");
  typed = nccl_doc({{8, 0.1}});
  typed["rows"][0]["bytes"] = 8.5;
  CHECK(refusal(typed) == "r.json: field rows[0].bytes: must be a whole number");
  // A negative #wrong would cancel the other side's in the verdict's sum (fuzz_report_results).
  typed = nccl_doc({{8, 0.1}});
  typed["rows"][0]["outOfPlace"]["wrong"] = -1;
  typed["rows"][0]["inPlace"]["wrong"] = 1;
  CHECK(refusal(typed) == "r.json: field rows[0].outOfPlace.wrong: must be a whole number from 0, or null");
  typed = nccl_doc({{8, 0.1}});
  typed["rows"][0]["outOfPlace"]["wrong"] = "N/A";
  CHECK(refusal(typed) == "r.json: field rows[0].outOfPlace.wrong: must be a whole number");

  json status = verify_doc();
  status["checks"][1]["status"] = "OK";
  CHECK(refusal(status) == "r.json: field checks[1].status: 'OK' is not PASS, FAIL or SKIP");
  json summary = verify_doc();
  summary["summary"]["fail"] = 2;
  CHECK(refusal(summary) == "r.json: field summary.fail: 2, but 0 checks are FAIL");

  json node = {{"node", {{"os", "x"}, {"kernel", "k"}, {"driver", ""}, {"gpus", json::array()}}}, {"checks", {{{"check", "gpus"}, {"status", "PASS"}}}}};
  CHECK(refusal(node) == "r.json: field checks[0].detail: missing");

  std::string deep(100, '[');
  auto nested = add_result(r, "{\"a\": " + deep, "deep.json");
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message == "deep.json: nested deeper than 32 levels");

  auto kit = parse_kit_manifest(R"({"schemaVersion": 3})", "kit/manifest.json");
  REQUIRE_FALSE(kit);
  CHECK(kit.error().message == "kit/manifest.json: field schemaVersion: 3 is newer than this gpubundle reads (1); upgrade gpubundle");
  kit = parse_kit_manifest(R"({"schemaVersion": 1, "generator": "g", "bundleId": ""})", "kit/manifest.json");
  REQUIRE_FALSE(kit);
  CHECK(kit.error().message == "kit/manifest.json: field recipe: missing");

  auto none = load_results({"/nonexistent/results.json"}, {});
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "/nonexistent/results.json: cannot read: No such file or directory");
  auto no_kit = load_results({}, "/nonexistent-kit");
  REQUIRE_FALSE(no_kit);
  CHECK(no_kit.error().message == "/nonexistent-kit/manifest.json: cannot read: No such file or directory");

  for (const std::string& m : {refusal(missing), refusal(unknown), bad.error().message}) CHECK(m.find('\n') == std::string::npos);
}

// --- the verdict (verdict.hpp): recomputed, never PASS on nothing ----------

namespace {

json node_doc(const std::string& os = "ubuntu22.04", const std::string& kernel = "5.15.0-126-generic", const std::string& driver = "580.95.05",
              const std::vector<std::string>& statuses = {"PASS", "SKIP"}, int exit_code = 0) {
  json checks = json::array();
  int pass = 0, fail = 0, skip = 0;
  for (const auto& st : statuses) {
    checks.push_back({{"check", "gpus"}, {"status", st}, {"detail", "d"}});
    (st == "PASS" ? pass : st == "FAIL" ? fail : skip)++;
  }
  return {{"node", {{"os", os}, {"kernel", kernel}, {"driver", driver}, {"gpus", {{{"name", "H200-SXM-141GB"}}}}}},
          {"checks", checks},
          {"summary", {{"pass", pass}, {"fail", fail}, {"skip", skip}}},
          {"exitCode", exit_code}};
}

// verify.sh naming two GPU nodes, from the kit of recipe site-a.
json verify_two_nodes() {
  json v = verify_doc();
  v["generator"] = "gpubundle 0.1.0 (kit of recipe site-a)";
  v["checks"].push_back({{"name", "node-gpus"}, {"status", "PASS"}, {"detail", "node n1 allocatable: nvidia.com/gpu=8"}});
  v["checks"].push_back({{"name", "node-gpus"}, {"status", "PASS"}, {"detail", "node n2 allocatable: nvidia.com/gpu=8"}});
  v["summary"]["pass"] = 3;
  return v;
}

KitIdentity site_kit(bool nccl) {
  KitIdentity k;
  k.recipe_name = "site-a";
  k.os = "ubuntu22.04";
  k.kernels = {"5.15.0-126-generic"};
  k.driver_mode = "precompiled";
  k.driver_branch = "580";
  k.registry = "site";  // nccl_doc's image is site/nccl-tests:1
  k.files = {"values.yaml", "verify.sh", "manifest.json"};
  if (nccl) k.files.push_back("acceptance/nccl-allreduce.sh");
  return k;
}

// A complete, passing set for site_kit(true): verify.sh, both nodes, one run.
Results complete() {
  Results r;
  r.kit = site_kit(true);
  REQUIRE(add_result(r, verify_two_nodes().dump(), "verify.json"));
  REQUIRE(add_result(r, node_doc().dump(), "n1.json"));
  REQUIRE(add_result(r, node_doc().dump(), "n2.json"));
  REQUIRE(add_result(r, nccl_doc({{8, 0.1}, {1 << 20, 20.0}}).dump(), "run.json"));
  return r;
}

}  // namespace

TEST_CASE("a complete set of passing results for its kit is PASS", "[report]") {
  Verdict v = verdict(complete());
  CHECK(v.line() == "PASS: 4 results passed, none failed");
  CHECK(v.outcome == Outcome::Pass);
  CHECK(report_html(complete(), "t").find("<div class=\"verdict pass\">PASS: 4 results passed") != std::string::npos);
}

TEST_CASE("the verdict is INCOMPLETE when the kit asks for an NCCL run that is not given", "[report]") {
  Results r = complete();
  r.nccl.clear();
  CHECK(verdict(r).line() == "INCOMPLETE: no NCCL run, though the kit has acceptance/nccl-allreduce.sh");
  r.kit = site_kit(false);  // a recipe without acceptance.nccl asks for none
  CHECK(verdict(r).outcome == Outcome::Pass);
  // The kit's manifest lists its files; the NCCL script is what acceptance.nccl writes.
  json manifest = {{"schemaVersion", 1}, {"generator", "g"}, {"bundleId", ""}, {"recipe", {{"name", "r"}, {"sha256", "x"}}},
                   {"chart", {{"name", "gpu-operator"}, {"version", "v1"}, {"appVersion", "v1"}, {"sha256", "y"}}},
                   {"operator", {{"version", "v1"}}}, {"registry", {{"host", "h"}, {"prefix", ""}}},
                   {"driver", {{"mode", "host"}, {"version", ""}, {"branch", ""}, {"kernelModuleType", "open"}, {"usePrecompiled", false}}},
                   {"target", {{"gpus", json::array()}, {"os", "ubuntu22.04"}, {"kernels", json::array()}}}, {"images", json::array()},
                   {"files", {"verify.sh", "acceptance/nccl-allreduce.sh"}}};
  auto kit = parse_kit_manifest(manifest.dump(), "kit/manifest.json");
  REQUIRE(kit);
  CHECK(kit->nccl_acceptance());
  manifest["files"] = {"verify.sh"};
  CHECK_FALSE(parse_kit_manifest(manifest.dump(), "kit/manifest.json")->nccl_acceptance());
}

TEST_CASE("every GPU node the results name needs its node check", "[report]") {
  Results r = complete();
  CHECK(gpu_nodes(r) == std::vector<std::string>{"n1", "n2"});
  r.nodes.pop_back();
  CHECK(verdict(r).line() == "INCOMPLETE: no node check of n2");
  // The NCCL run's nodes count too, without verify.sh or a kit.
  Results runs;
  REQUIRE(add_result(runs, nccl_doc({{8, 0.1}}).dump(), "run.json"));
  CHECK(verdict(runs).line() == "INCOMPLETE: no node check of n1, n2");
  std::string html = report_html(runs, "t");
  CHECK(html.find("<span class=\"badge incomplete\">MISSING</span></td><td>no node check of n1, n2") != std::string::npos);
  // verify.sh without --kit asks for nothing more.
  Results alone;
  REQUIRE(add_result(alone, verify_doc().dump(), "v.json"));
  CHECK(verdict(alone).outcome == Outcome::Pass);
  // With --kit, verify.sh is asked for.
  Results kit_only;
  kit_only.kit = site_kit(false);
  CHECK(verdict(kit_only).line() == "INCOMPLETE: no verify.sh result; no results given");
}

TEST_CASE("a result naming another bundle, registry, OS, kernel or driver is warned about and not PASS", "[report]") {
  auto with = [](auto change) {
    Results r = complete();
    change(r);
    return verdict(r);
  };
  Verdict os = with([](Results& r) { r.nodes[0].os = "ubuntu24.04"; });
  CHECK(os.outcome == Outcome::Incomplete);
  CHECK(os.line() == "INCOMPLETE: 1 result names another kit (n1.json)");
  CHECK(os.mismatches == std::vector<std::string>{"n1.json: OS ubuntu24.04, the kit's is ubuntu22.04"});
  CHECK(with([](Results& r) { r.nodes[1].kernel = "6.8.0-45-generic"; }).mismatches ==
        std::vector<std::string>{"n2.json: kernel 6.8.0-45-generic, the kit's are 5.15.0-126-generic"});
  CHECK(with([](Results& r) { r.nodes[1].driver = "570.86.15"; }).mismatches ==
        std::vector<std::string>{"n2.json: driver 570.86.15, the kit's is branch 580"});
  CHECK(with([](Results& r) { r.kit->driver_version = "580.95.06"; }).mismatches.size() == 2);  // both nodes run .05
  CHECK(with([](Results& r) { r.nccl[0].image = "registry.other:5000/gpu/nccl-tests:1"; }).mismatches ==
        std::vector<std::string>{"run.json: image registry.other:5000/gpu/nccl-tests:1 is not at the kit's registry site"});
  CHECK(with([](Results& r) { r.kit->bundle_id = "b-123"; }).mismatches ==
        std::vector<std::string>{"verify.json: verify.sh of a kit made outside a bundle (recipe site-a), the kit's bundle is b-123"});
  CHECK(with([](Results& r) { r.verify[0].generator = "gpubundle 0.1.0 (kit of bundle b-9)"; }).mismatches ==
        std::vector<std::string>{"verify.json: verify.sh of bundle b-9, the kit's is none"});
  CHECK(with([](Results& r) { r.verify[0].generator = "gpubundle 0.1.0 (kit of recipe site-b)"; }).mismatches ==
        std::vector<std::string>{"verify.json: verify.sh of recipe site-b, the kit's is site-a"});
  CHECK(with([](Results& r) { r.nodes[1].node = "h200-node"; }).mismatches ==
        std::vector<std::string>{"n2.json: node h200-node is not among the GPU nodes the results name (n1, n2)"});
  Results r = complete();
  r.nodes[0].os = "ubuntu24.04";
  std::string html = report_html(r, "t");
  CHECK(html.find("<div class=\"verdict incomplete\">INCOMPLETE: 1 result names another kit") != std::string::npos);
  CHECK(html.find("<span class=\"badge warning\">WARNING</span></td><td>n1.json: OS ubuntu24.04") != std::string::npos);
  // A failure still reads FAIL, whatever kit it came from.
  r.nodes[0].checks[0].status = Status::Fail;
  CHECK(verdict(r).outcome == Outcome::Fail);
  // Past a double's range (1.8e308) or NaN spelled as text, JSON never reaches the plot.
  json doc = nccl_doc({{8, 0.1}});
  std::string text = doc.dump();
  text.replace(text.find("\"busBw\":0.1"), 11, "\"busBw\":1.8e308");
  Results parsed;
  auto added = add_result(parsed, text, "r.json");
  REQUIRE_FALSE(added);
  CHECK(added.error().kind == ErrorKind::Input);
  CHECK(added.error().message == "r.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1.8e308'");
}

TEST_CASE("the report never says PASS when nothing passed", "[report]") {
  CHECK(verdict(Results{}).line() == "INCOMPLETE: no results given");
  Results skipped;
  json v = verify_doc();
  v["checks"] = {{{"name", "mig"}, {"status", "SKIP"}, {"detail", "no MIG"}}};
  v["summary"] = {{"pass", 0}, {"fail", 0}, {"skip", 1}};
  REQUIRE(add_result(skipped, v.dump(), "v.json"));
  CHECK(verdict(skipped).line() == "INCOMPLETE: verify.sh v.json: nothing passed: every check SKIP");
  Results empty;
  v["checks"] = json::array();
  v["summary"] = {{"pass", 0}, {"fail", 0}, {"skip", 0}};
  REQUIRE(add_result(empty, v.dump(), "v.json"));
  CHECK(verdict(empty).line() == "INCOMPLETE: verify.sh v.json: no checks");
  // Node checks: all SKIP (exit 3), or exit 2 (bad input), whatever the lines say.
  Results nodes;
  REQUIRE(add_result(nodes, node_doc("o", "k", "", {"SKIP", "SKIP"}, 3).dump(), "a.json"));
  REQUIRE(add_result(nodes, node_doc("o", "k", "", {"PASS"}, 2).dump(), "b.json"));
  CHECK(verdict(nodes).line() ==
        "INCOMPLETE: node a: nothing passed: every check SKIP; node b: exit 2: the node check refused its input and checked nothing");
  Results odd;
  REQUIRE(add_result(odd, node_doc("o", "k", "", {"PASS"}, 1).dump(), "c.json"));
  CHECK(verdict(odd).line() == "FAIL: node c: exit 1, though no check says FAIL");
  // One all-SKIP source keeps a passing set from PASS.
  Results r = complete();
  r.nodes[1].checks = {{"gpus", Status::Skip, "no GPU"}};
  CHECK(verdict(r).line() == "INCOMPLETE: node n2: nothing passed: every check SKIP");
}

TEST_CASE("an NCCL run's own numbers decide, not its passed field", "[report]") {
  auto problems = [](auto change) {
    json doc = nccl_doc({{8, 0.1}, {1 << 20, 20.0}});
    change(doc);
    Results r;
    REQUIRE(add_result(r, doc.dump(), "run.json"));
    return outcome(r.nccl[0]);
  };
  auto slow = problems([](json& d) { d["minBusBw"] = 350.5; });  // avgBusBw 12.5
  CHECK(slow.outcome == Outcome::Fail);
  CHECK(slow.why == "says passed, but avgBusBw 12.50 GB/s is below its minBusBw 350.50 GB/s");
  CHECK(problems([](json& d) { d["outOfBounds"] = 3; }).why == "says passed, but 3 out-of-bounds values");
  CHECK(problems([](json& d) { d["rows"][1]["outOfPlace"]["wrong"] = 2; }).why == "says passed, but 2 wrong values (#wrong) in 1 row");
  CHECK(problems([](json& d) { d["rows"] = json::array(); }).why == "says passed, but no rows: all_reduce_perf measured nothing");
  // Both sides at INT64_MAX: counted saturating, no overflow (fuzz_report_results).
  CHECK(problems([](json& d) {
          d["rows"][1]["outOfPlace"]["wrong"] = INT64_MAX;
          d["rows"][1]["inPlace"]["wrong"] = INT64_MAX;
        }).why == "says passed, but " + std::to_string(static_cast<long>(INT64_MAX)) + " wrong values (#wrong) in 1 row");
  CHECK(problems([](json& d) { d["minBusBw"] = 12.5; }).outcome == Outcome::Pass);  // at the bound passes
  Results r = complete();
  r.nccl[0].out_of_bounds = 1;
  CHECK(verdict(r).line() == "FAIL: NCCL run run: says passed, but 1 out-of-bounds value");
  CHECK(report_html(r, "t").find("<span class=\"badge fail\">FAIL</span> says passed, but 1 out-of-bounds value") != std::string::npos);
}

TEST_CASE("absurd bandwidths are clamped in the plot and said in the tables", "[report]") {
  // Never a NaN, an infinity or a zero step on the axis, whatever the data.
  for (double max : {1e-323, 1.7e308, std::nan(""), -1.0, std::numeric_limits<double>::infinity()}) {
    ValueAxis a = value_axis(max);
    CHECK(std::isfinite(a.top));
    CHECK(a.step > 0);
    CHECK(a.top / a.step <= 11);
    CHECK(value_ticks(a).size() <= 12);
  }
  std::string svg = bus_bw_svg({{"weird", {{8, 1e-323}, {64, 1.7e308}, {512, std::nan("")}, {4096, -5.0}, {1 << 20, 20.0}}}});
  for (const char* bad : {"nan", "inf"}) CHECK(svg.find(bad) == std::string::npos);

  Results r = complete();
  r.nccl[0].rows[0].out_of_place.bus_bw = 1e-323;
  r.nccl[0].rows[1].out_of_place.bus_bw = 1.7e308;
  std::string html = report_html(r, "t");
  CHECK(html.find("1.7e+308 (no measurement; plotted at 100000)") != std::string::npos);
  std::regex polyline(R"re(<polyline class="run" data-run="0" points="([^"]*)")re");
  std::smatch m;
  REQUIRE(std::regex_search(html, m, polyline));
  CHECK(m[1].str().find("nan") == std::string::npos);
  CHECK(outcome(r.nccl[0]).why == "says passed, but 1 bandwidth above 100000 GB/s, no measurement");
  CHECK(verdict(r).outcome == Outcome::Fail);
  // Past a double's range (1.8e308) or NaN spelled as text, JSON never reaches the plot.
  json doc = nccl_doc({{8, 0.1}});
  std::string text = doc.dump();
  text.replace(text.find("\"busBw\":0.1"), 11, "\"busBw\":1.8e308");
  Results parsed;
  auto added = add_result(parsed, text, "r.json");
  REQUIRE_FALSE(added);
  CHECK(added.error().kind == ErrorKind::Input);
  CHECK(added.error().message == "r.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1.8e308'");
}

TEST_CASE("a fabric run over sockets fails whatever it says; older results without a transport read as before", "[report]") {
  auto run = [](auto change) {
    json doc = nccl_doc({{8, 0.1}, {1 << 20, 20.0}});
    change(doc);
    Results r;
    REQUIRE(add_result(r, doc.dump(), "run.json"));
    return r.nccl[0];
  };
  // Written before the fields existed: no fabric asked for, nothing recorded, still PASS.
  NcclRun old = run([](json&) {});
  CHECK(old.transport.empty());
  CHECK_FALSE(old.fabric_required);
  CHECK(outcome(old).outcome == Outcome::Pass);

  NcclRun ib = run([](json& d) { d["transport"] = "IB"; d["fabricRequired"] = true; });
  CHECK(ib.transport == "IB");
  CHECK(outcome(ib).outcome == Outcome::Pass);
  CHECK(outcome(run([](json& d) { d["transport"] = "AWS Libfabric"; d["fabricRequired"] = true; })).outcome == Outcome::Pass);

  auto sockets = outcome(run([](json& d) { d["transport"] = "Socket"; d["fabricRequired"] = true; }));
  CHECK(sockets.outcome == Outcome::Fail);
  CHECK(sockets.why == "says passed, but NCCL used sockets (transport Socket), not the fabric");
  // One rank's communicator on sockets is enough to fail.
  CHECK(outcome(run([](json& d) { d["transport"] = "IB, Socket"; d["fabricRequired"] = true; })).why ==
        "says passed, but NCCL used sockets (transport IB, Socket), not the fabric");
  CHECK(outcome(run([](json& d) { d["transport"] = ""; d["fabricRequired"] = true; })).why ==
        "says passed, but the fabric is untested: the run does not say which network NCCL used");
  CHECK(outcome(run([](json& d) { d["fabricRequired"] = true; })).outcome == Outcome::Fail);
  // Without a fabric to test, sockets are only recorded.
  CHECK(outcome(run([](json& d) { d["transport"] = "Socket"; d["fabricRequired"] = false; })).outcome == Outcome::Pass);
  // Not a name like "Sockets" or "MySocket": only NCCL's own Socket transport.
  CHECK(outcome(run([](json& d) { d["transport"] = "MySocket"; d["fabricRequired"] = true; })).outcome == Outcome::Pass);

  json typed = nccl_doc({{8, 0.1}});
  typed["transport"] = 1;
  CHECK(refusal(typed) == "r.json: field transport: must be a string");
  typed = nccl_doc({{8, 0.1}});
  typed["fabricRequired"] = "yes";
  CHECK(refusal(typed) == "r.json: field fabricRequired: must be true or false");

  // The tables show it, escaped.
  Results r = complete();
  r.nccl[0].transport = "Socket";
  r.nccl[0].fabric_required = true;
  CHECK(verdict(r).line() == "FAIL: NCCL run run: says passed, but NCCL used sockets (transport Socket), not the fabric");
  std::string html = report_html(r, "t");
  CHECK(html.find("<th>transport</th>") != std::string::npos);
  CHECK(html.find("<td>Socket (fabric required)</td>") != std::string::npos);
  CHECK(html.find("transport Socket (fabric required), ") != std::string::npos);
  r.nccl[0].transport = "<b>IB</b>";
  CHECK(report_html(r, "t").find("<b>IB") == std::string::npos);
}

TEST_CASE("a #wrong count all_reduce_perf prints as 1e+06 or 1.04858e+06 is a count of wrong values", "[report]") {
  for (const char* spelled : {"1e+06", "1.04858e+06"}) {
    INFO(spelled);
    json doc = nccl_doc({{8, 0.1}});
    std::string text = doc.dump();
    auto at = text.find("\"wrong\":0");
    REQUIRE(at != std::string::npos);
    text.replace(at, 9, std::string("\"wrong\":") + spelled);
    Results r;
    REQUIRE(add_result(r, text, "run.json"));
    CHECK(r.nccl[0].rows[0].out_of_place.wrong.value_or(0) == (std::string(spelled) == "1e+06" ? 1000000 : 1048580));
    CHECK(outcome(r.nccl[0]).outcome == Outcome::Fail);
  }
}
