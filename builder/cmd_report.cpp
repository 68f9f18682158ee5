#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/time.hpp"
#include "report/report.hpp"
#include "report/verdict.hpp"

namespace gb::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string kit, out;
};

int run_report(const Globals& g, const ReportArgs& a) {
  if (a.inputs.empty() && a.kit.empty()) throw Error(ErrorKind::Input, "report needs result files or folders, or --kit DIR");
  std::vector<fs::path> inputs(a.inputs.begin(), a.inputs.end());
  report::Results results = report::load_results(inputs, a.kit).value_or_throw();
  auto epoch = source_date_epoch().value_or_throw();
  std::string generated_at = epoch ? rfc3339_utc(*epoch) : rfc3339_utc_now();
  write_atomic(a.out, report::report_html(results, generated_at)).value_or_throw();
  report::Verdict v = report::verdict(results);
  if (g.json) {
    nlohmann::json j = {{"verdict", report::to_string(v.outcome)},
                        {"line", v.line()},
                        {"output", a.out},
                        {"failed", v.failed},
                        {"missing", v.missing},
                        {"mismatches", v.mismatches},
                        {"passedNothing", v.passed_nothing},
                        {"results", {{"verify", results.verify.size()}, {"nodes", results.nodes.size()}, {"nccl", results.nccl.size()}}},
                        {"kit", results.kit ? results.kit->recipe_name : ""}};
    std::string text = j.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  log_info("report " + v.line());
  for (const auto& m : v.mismatches) log_warn(m);
  log_info(std::to_string(results.verify.size()) + " verify.sh result(s), " + std::to_string(results.nodes.size()) + " node check(s), " +
            std::to_string(results.nccl.size()) + " NCCL run(s)" + (results.kit ? ", kit " + results.kit->recipe_name : "") +
            "; written to " + a.out);
  return 0;
}

}  // namespace

CommandSpec report_command() {
  return {
      "report",
      "Turn the site's acceptance results into one self-contained HTML handover report",
      "Reads the results the kit's scripts and gpubundle node check write (docs/acceptance-results.md): verify.sh --json, "
      "node check --json (one file per node, named after it), and one NCCL all-reduce JSON per run, given as files or as "
      "folders of *.json files, plus the kit's manifest.json (--kit) for the bundle, recipe, chart, driver and images. "
      "Writes one HTML file with no external assets (inline styles, inline SVG plots, no script): the verdict, versions, "
      "NCCL bus bandwidth against message size per run, and every check. The verdict is PASS, FAIL, or INCOMPLETE when "
      "a result the kit asks for is missing (verify.sh, an NCCL run for a recipe with acceptance.nccl, a node check "
      "per GPU node the results name), a result names another kit, or nothing passed; it is recomputed from the "
      "numbers, never taken from a result's own passed field. With --json, the verdict as JSON on stdout and nothing "
      "else. The exit code says whether the report was written, not whether the site passed. See docs/report.md.",
      "gpubundle report --kit site-a-install-kit results/ -o acceptance-report.html",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<ReportArgs>();
        app.add_option("results", a->inputs, "Result files, or folders whose *.json files are read");
        app.add_option("--kit", a->kit, "The install kit folder; its manifest.json gives the identity and versions");
        app.add_option("-o,--output", a->out, "The HTML file to write")->required();
        return [&g, a] { return run_report(g, *a); };
      },
  };
}

}  // namespace gb::cli
