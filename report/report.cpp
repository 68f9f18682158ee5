#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "report/plot.hpp"
#include "report/verdict.hpp"

namespace gb::report {

namespace {

std::string esc(std::string_view s) { return html_escape(s); }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string plural(long n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string counts_text(const Counts& c) {
  return std::to_string(c.pass) + " pass, " + std::to_string(c.fail) + " fail, " + std::to_string(c.skip) + " skip";
}

const char* css_class(Outcome o) { return o == Outcome::Pass ? "pass" : o == Outcome::Fail ? "fail" : "incomplete"; }

std::string badge(Outcome o) { return std::string("<span class=\"badge ") + css_class(o) + "\">" + to_string(o) + "</span>"; }

// A bandwidth as the tables show it: one beyond any fabric in its own
// notation (it would print 300 digits), and saying the plot clamps it.
std::string bw_text(double v) {
  if (!std::isfinite(v) || v > k_max_bus_bw) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return std::string(buf) + " (no measurement; plotted at " + fixed(k_max_bus_bw, 0) + ")";
  }
  return fixed(v, 2);
}

// What the plot draws of a bandwidth: within 0 .. k_max_bus_bw.
double plotted(double v) { return std::isfinite(v) ? std::clamp(v, 0.0, k_max_bus_bw) : 0.0; }

// The cell after an outcome badge: why, when it did not pass.
std::string why_text(const SourceOutcome& o, const std::string& details) {
  return o.outcome == Outcome::Pass ? details : esc(o.why) + "; " + details;
}

std::string file_name(const std::string& file) { return std::filesystem::path(file).filename().string(); }

// A run's name in the legend and its tables: its file, without ".json".
std::string run_name(const NcclRun& r) { return std::filesystem::path(r.file).stem().string(); }

// "IB (fabric required)"; results older than the field have no transport.
std::string transport_text(const NcclRun& r) {
  return (r.transport.empty() ? std::string("not recorded") : r.transport) + (r.fabric_required ? " (fabric required)" : "");
}

std::string join_words(const std::vector<std::string>& words, const char* sep = ", ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// The section's heading; without `given`, the line saying so, and false.
bool section(std::string& h, const char* title, bool given, const char* missing) {
  h += std::string("<h2>") + title + "</h2>\n";
  if (!given) h += std::string("<p class=\"missing\">") + missing + "</p>\n";
  return given;
}

void checks_table(std::string& h, const std::vector<Check>& checks) {
  h += "<table class=\"checks\">\n<tr><th>check</th><th>status</th><th>detail</th></tr>\n";
  for (const auto& c : checks) {
    const char* cls = c.status == Status::Pass ? "pass" : c.status == Status::Fail ? "fail" : "skip";
    h += "<tr><td>" + esc(c.name) + "</td><td><span class=\"badge " + cls + "\">" + to_string(c.status) + "</span></td><td>" +
         esc(c.detail) + "</td></tr>\n";
  }
  h += "</table>\n";
}

constexpr const char* k_style = R"CSS(
body { font-family: sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #212529; background: #ffffff; }
h1 { font-size: 24px; margin: 0 0 4px 0; }
h2 { font-size: 19px; margin: 28px 0 8px 0; border-bottom: 1px solid #dee2e6; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 18px 0 6px 0; }
p.meta { color: #495057; margin: 0 0 12px 0; }
.verdict { font-size: 20px; font-weight: bold; padding: 10px 14px; border-radius: 6px; margin: 12px 0; }
.verdict.pass { background: #ebfbee; color: #2b8a3e; border: 1px solid #8ce99a; }
.verdict.fail { background: #fff5f5; color: #c92a2a; border: 1px solid #ffa8a8; }
.verdict.incomplete { background: #fff9db; color: #e67700; border: 1px solid #ffe066; }
table { border-collapse: collapse; margin: 6px 0 12px 0; font-size: 14px; }
th, td { border: 1px solid #dee2e6; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono, span.mono { font-family: monospace; font-size: 13px; word-break: break-all; }
.badge { display: inline-block; min-width: 38px; text-align: center; font-weight: bold; font-size: 12px; padding: 1px 6px; border-radius: 4px; }
.badge.pass { background: #d3f9d8; color: #2b8a3e; }
.badge.fail { background: #ffe3e3; color: #c92a2a; }
.badge.skip { background: #e9ecef; color: #495057; }
.badge.incomplete, .badge.warning { background: #fff3bf; color: #e67700; }
.missing { color: #868e96; font-style: italic; }
.swatch { display: inline-block; width: 22px; height: 4px; vertical-align: middle; margin-right: 6px; }
svg.plot { max-width: 100%; height: auto; font-family: sans-serif; }
)CSS";

void summary_section(std::string& h, const Results& r, const Verdict& overall) {
  h += "<table class=\"summary\">\n<tr><th>source</th><th>result</th><th>details</th></tr>\n";
  if (r.verify.empty()) h += "<tr><td>verify.sh</td><td></td><td class=\"missing\">not given</td></tr>\n";
  for (const auto& v : r.verify) {
    SourceOutcome o = outcome(v);
    h += "<tr><td>verify.sh <span class=\"mono\">" + esc(file_name(v.file)) + "</span></td><td>" + badge(o.outcome) + "</td><td>" +
         why_text(o, counts_text(count(v.checks))) + "</td></tr>\n";
  }
  if (r.nodes.empty()) h += "<tr><td>node check</td><td></td><td class=\"missing\">not given</td></tr>\n";
  for (const auto& n : r.nodes) {
    SourceOutcome o = outcome(n);
    h += "<tr><td>node check: " + esc(n.node) + "</td><td>" + badge(o.outcome) + "</td><td>" +
         why_text(o, counts_text(count(n.checks)) + ", exit " + std::to_string(n.exit_code)) + "</td></tr>\n";
  }
  if (r.nccl.empty()) h += "<tr><td>NCCL all-reduce</td><td></td><td class=\"missing\">not given</td></tr>\n";
  for (const auto& run : r.nccl)
    h += "<tr><td>NCCL " + esc(run.test) + ": " + esc(run_name(run)) + "</td><td>" + badge(outcome(run).outcome) + "</td><td>" +
         why_text(outcome(run), "avg bus bandwidth " + bw_text(run.avg_bus_bw) + " GB/s, transport " + esc(transport_text(run)) + ", " +
                                    plural(static_cast<long>(run.nodes.size()), "node", "nodes") + ", " +
                                    plural(static_cast<long>(run.ranks), "rank", "ranks")) +
         "</td></tr>\n";
  for (const auto& m : overall.missing)
    h += "<tr><td>missing</td><td><span class=\"badge incomplete\">MISSING</span></td><td>" + esc(m) + "</td></tr>\n";
  for (const auto& m : overall.mismatches)
    h += "<tr><td>another kit</td><td><span class=\"badge warning\">WARNING</span></td><td>" + esc(m) + "</td></tr>\n";
  h += "</table>\n";
}

void identity_section(std::string& h, const Results& r) {
  if (!section(h, "Bundle and versions", r.kit.has_value(), "No install kit given (gpubundle report --kit DIR).")) return;
  const KitIdentity& k = *r.kit;
  auto row = [&](const char* name, const std::string& value, bool mono = false) {
    h += std::string("<tr><th>") + name + "</th><td" + (mono ? " class=\"mono\"" : "") + ">" + esc(value) + "</td></tr>\n";
  };
  h += "<table class=\"identity\">\n";
  row("bundle", k.bundle_id.empty() ? "(kit made outside a bundle)" : k.bundle_id, true);
  row("recipe", k.recipe_name);
  row("recipe sha256", k.recipe_sha256, true);
  row("GPU Operator", k.operator_version);
  row("chart", k.chart_name + " " + k.chart_version + " (app " + k.chart_app_version + ")");
  row("chart sha256", k.chart_sha256, true);
  std::string driver = k.driver_mode + (k.driver_version.empty() ? "" : ", version " + k.driver_version) +
                       (k.driver_branch.empty() ? "" : ", branch " + k.driver_branch) +
                       (k.kernel_module_type.empty() ? "" : ", " + k.kernel_module_type + " kernel modules") +
                       (k.use_precompiled && k.driver_mode != "precompiled" ? ", precompiled" : "");
  row("driver", driver);
  row("target", join_words(k.gpus) + " on " + k.os + (k.kernels.empty() ? "" : ", kernels " + join_words(k.kernels)));
  row("site registry", k.registry, true);
  row("images", std::to_string(k.images.size()) + " (listed at the end)");
  row("kit written by", k.generator);
  h += "</table>\n";
}

void nccl_plot_section(std::string& h, const Results& r) {
  if (!section(h, "NCCL bus bandwidth", !r.nccl.empty(), "No NCCL all-reduce results given.")) return;
  std::vector<PlotSeries> series;
  bool any = false;
  for (const auto& run : r.nccl) {
    PlotSeries s{run_name(run) + " (" + plural(static_cast<long>(run.ranks), "rank", "ranks") + ")", {}};
    for (const auto& row : run.rows)
      if (row.bytes > 0) s.points.push_back({row.bytes, plotted(row.out_of_place.bus_bw)});
    any = any || !s.points.empty();
    series.push_back(std::move(s));
  }
  if (any) {
    h += "<p>Out-of-place bus bandwidth of each run against the message size.</p>\n";
    h += bus_bw_svg(series);
  } else {
    h += "<p class=\"missing\">The runs have no rows to plot.</p>\n";
  }
  h += "<table class=\"runs\">\n<tr><th>run</th><th>result</th><th>avg bus bandwidth</th><th>required avg</th><th>peak bus bandwidth</th><th>transport</th><th>nodes</th>"
       "<th>GPUs per node</th><th>ranks</th><th>NCCL</th><th>started</th></tr>\n";
  for (std::size_t n = 0; n < r.nccl.size(); ++n) {
    const NcclRun& run = r.nccl[n];
    double peak = 0;
    for (const auto& row : run.rows) peak = std::max(peak, row.out_of_place.bus_bw);
    SourceOutcome o = outcome(run);
    h += std::string("<tr><td><span class=\"swatch\" style=\"background: ") + series_colour(n) + "\"></span>" + esc(run_name(run)) +
         "</td><td>" + badge(o.outcome) + (o.outcome == Outcome::Pass ? "" : " " + esc(o.why)) + "</td><td class=\"num\">" +
         bw_text(run.avg_bus_bw) + " GB/s</td><td class=\"num\">" +
         (run.min_bus_bw && *run.min_bus_bw > 0 ? fixed(*run.min_bus_bw, 2) + " GB/s" : std::string("no bound")) + "</td><td class=\"num\">" +
         bw_text(peak) + " GB/s</td><td>" + esc(transport_text(run)) + "</td><td>" + esc(join_words(run.nodes)) + "</td><td class=\"num\">" + std::to_string(run.gpus_per_node) +
         "</td><td class=\"num\">" + std::to_string(run.ranks) + "</td><td>" + esc(run.nccl_version.empty() ? "not printed" : run.nccl_version) +
         "</td><td>" + esc(run.started_at) + "</td></tr>\n";
  }
  h += "</table>\n";
}

void verify_section(std::string& h, const Results& r) {
  if (!section(h, "verify.sh", !r.verify.empty(), "No verify.sh results given (run the kit's verify.sh --json FILE).")) return;
  for (const auto& v : r.verify) {
    h += "<h3><span class=\"mono\">" + esc(file_name(v.file)) + "</span>: " + counts_text(count(v.checks)) + "</h3>\n";
    h += "<p class=\"meta\">namespace " + esc(v.namespace_name) + ", started " + esc(v.started_at) + ", " + esc(v.generator) + "</p>\n";
    checks_table(h, v.checks);
  }
}

void nodes_section(std::string& h, const Results& r) {
  if (!section(h, "Node checks", !r.nodes.empty(), "No node check results given (gpubundle node check --json, one file per node).")) return;
  for (const auto& n : r.nodes) {
    h += "<h3>" + esc(n.node) + ": " + counts_text(count(n.checks)) + ", exit " + std::to_string(n.exit_code) + "</h3>\n";
    std::map<std::string, int> models;
    for (const auto& g : n.gpus) ++models[g];
    std::vector<std::string> gpus;
    for (const auto& [model, k] : models) gpus.push_back(std::to_string(k) + " x " + model);
    h += "<p class=\"meta\">" + esc(gpus.empty() ? "no GPU found" : join_words(gpus)) + "; driver " + esc(n.driver.empty() ? "none loaded" : n.driver) +
         "; " + esc(n.os) + ", kernel " + esc(n.kernel) + "</p>\n";
    checks_table(h, n.checks);
  }
}

void nccl_tables_section(std::string& h, const Results& r) {
  if (!r.nccl.empty()) h += "<h2>NCCL runs in detail</h2>\n";
  for (const auto& run : r.nccl) {
    h += "<h3>NCCL run " + esc(run_name(run)) + "</h3>\n";
    h += "<p class=\"meta\">" + esc(run.test) + ", " + esc(run.data_type) + " " + esc(run.red_op) + ", image <span class=\"mono\">" +
         esc(run.image) + "</span>; out-of-bounds values " + std::to_string(run.out_of_bounds) + "; avg bus bandwidth " +
         bw_text(run.avg_bus_bw) + " GB/s</p>\n";
    h += "<table class=\"nccl\">\n<tr><th rowspan=\"2\">size</th><th rowspan=\"2\">count</th><th colspan=\"4\">out of place</th>"
         "<th colspan=\"4\">in place</th></tr>\n<tr><th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th><th>#wrong</th>"
         "<th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th><th>#wrong</th></tr>\n";
    auto side = [&](const NcclSide& s) {
      return "<td class=\"num\">" + fixed(s.time_us, 1) + "</td><td class=\"num\">" + bw_text(s.alg_bw) + "</td><td class=\"num\">" +
             bw_text(s.bus_bw) + "</td><td class=\"num\">" + (s.wrong ? std::to_string(*s.wrong) : std::string("N/A")) + "</td>";
    };
    for (const auto& row : run.rows)
      h += "<tr><td class=\"num\">" + esc(size_label(row.bytes)) + "</td><td class=\"num\">" + std::to_string(row.count) + "</td>" +
           side(row.out_of_place) + side(row.in_place) + "</tr>\n";
    h += "</table>\n";
  }
}

void images_section(std::string& h, const Results& r) {
  if (!r.kit) return;
  h += "<h2>Images at the site registry</h2>\n<table class=\"images\">\n<tr><th>source</th><th>site</th><th>digest</th></tr>\n";
  for (const auto& i : r.kit->images)
    h += "<tr><td class=\"mono\">" + esc(i.source) + "</td><td class=\"mono\">" + esc(i.destination) + "</td><td class=\"mono\">" +
         esc(i.digest) + "</td></tr>\n";
  h += "</table>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

bool passed(const Results& results) { return verdict(results).outcome == Outcome::Pass; }

std::string report_html(const Results& r, const std::string& generated_at) {
  std::string title = "GPU Operator acceptance report";
  if (r.kit) title += ": " + r.kit->recipe_name;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + esc(title) + "</title>\n<style>" +
                  k_style + "</style>\n</head>\n<body>\n";
  h += "<h1>" + esc(title) + "</h1>\n";
  h += "<p class=\"meta\">Made by gpubundle " GPUBUNDLE_VERSION " at " + esc(generated_at) + "</p>\n";
  Verdict v = verdict(r);
  h += std::string("<div class=\"verdict ") + css_class(v.outcome) + "\">" + esc(v.line()) + "</div>\n";
  summary_section(h, r, v);
  identity_section(h, r);
  nccl_plot_section(h, r);
  verify_section(h, r);
  nodes_section(h, r);
  nccl_tables_section(h, r);
  images_section(h, r);
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace gb::report
