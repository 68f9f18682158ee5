#include <CLI/CLI.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/time.hpp"
#include "report/report.hpp"

namespace gb::cli {

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string kit, out;
};

int run_report(const ReportArgs& a) {
  if (a.inputs.empty() && a.kit.empty()) throw Error(ErrorKind::Input, "report needs result files or folders, or --kit DIR");
  std::vector<fs::path> inputs(a.inputs.begin(), a.inputs.end());
  report::Results results = report::load_results(inputs, a.kit).value_or_throw();
  auto epoch = source_date_epoch().value_or_throw();
  std::string generated_at = epoch ? rfc3339_utc(*epoch) : rfc3339_utc_now();
  write_atomic(a.out, report::report_html(results, generated_at)).value_or_throw();
  log::info(std::string("report ") + (report::passed(results) ? "PASS" : "FAIL") + ": " + std::to_string(results.verify.size()) +
            " verify.sh result(s), " + std::to_string(results.nodes.size()) + " node check(s), " + std::to_string(results.nccl.size()) +
            " NCCL run(s)" + (results.kit ? ", kit " + results.kit->recipe_name : "") + "; written to " + a.out);
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
      "NCCL bus bandwidth against message size per run, and every check. The exit code says whether the report was "
      "written, not whether the site passed. See docs/report.md.",
      "gpubundle report --kit site-a-install-kit results/ -o acceptance-report.html",
      [](CLI::App& app, Globals&) -> std::function<int()> {
        auto a = std::make_shared<ReportArgs>();
        app.add_option("results", a->inputs, "Result files, or folders whose *.json files are read");
        app.add_option("--kit", a->kit, "The install kit folder; its manifest.json gives the identity and versions");
        app.add_option("-o,--output", a->out, "The HTML file to write")->required();
        return [a] { return run_report(*a); };
      },
  };
}

}  // namespace gb::cli
