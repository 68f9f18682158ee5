#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "mirror/chart_fetch.hpp"

namespace gb::cli {

namespace {

void print_table(const recipes::Lock& lock) {
  std::printf("%s: GPU Operator %s, %s driver", lock.recipe_name.c_str(), lock.operator_version.c_str(),
              lock.driver.mode.c_str());
  if (!lock.driver.version.empty()) std::printf(" %s", lock.driver.version.c_str());
  else if (!lock.driver.branch.empty()) std::printf(" branch %s", lock.driver.branch.c_str());
  std::printf(" (%s modules), %s\n\n", lock.driver.kernel_module_type.c_str(), lock.os_tag.c_str());
  size_t width = 9;
  for (const auto& i : lock.images) {
    size_t w = 0;
    for (const auto& c : i.components) w += c.size() + 1;
    width = std::max(width, w);
  }
  std::printf("%-*s  %s\n", static_cast<int>(width), "COMPONENT", "IMAGE");
  for (const auto& i : lock.images) {
    std::string comps;
    for (const auto& c : i.components) comps += (comps.empty() ? "" : ",") + c;
    std::printf("%-*s  %s\n", static_cast<int>(width), comps.c_str(), i.source.c_str());
    if (!i.destination.empty()) std::printf("%-*s    -> %s\n", static_cast<int>(width), "", i.destination.c_str());
  }
  std::printf("\n%zu images for %s\n", lock.images.size(), [&] {
    std::string p;
    for (const auto& x : lock.platforms) p += (p.empty() ? "" : ", ") + x;
    return p;
  }().c_str());
}

}  // namespace

CommandSpec resolve_command() {
  return {
      "resolve",
      "Resolve a recipe into the exact image list (a lock file)",
      "Reads the recipe and the GPU Operator chart it names, takes every image from the chart's own values.yaml "
      "and subcharts, adds the driver tags the operator composes at run time (<version>-<osTag>, precompiled "
      "<branch>-<kernel>-<osTag>), and checks the GPUs against the driver branch and kernel module type. "
      "Needs no network: a remote chart (Helm repository, oci://) is read from the store's copy that `gpubundle mirror` "
      "fetched, or pass --chart. Writes the lock with -o; prints a table, or the lock itself with --json. "
      "Chart sources and lock names: docs/lock.md.",
      "gpubundle resolve examples/precompiled.yaml --chart gpu-operator-v26.7.0.tgz -o site-a.lock.json",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto recipe_path = std::make_shared<std::string>();
        auto chart = std::make_shared<std::string>();
        auto out = std::make_shared<std::string>();
        app.add_option("recipe", *recipe_path, "Recipe file (YAML)")->required();
        app.add_option("--chart", *chart, "Chart .tgz or folder; overrides the recipe's operator.chart");
        app.add_option("-o,--output", *out, "Write the lock file here");
        return [&g, recipe_path, chart, out]() -> int {
          auto in = recipes::read_recipe_or_lock(*recipe_path).value_or_throw();
          if (!in.recipe)
            throw Error(input_error(*recipe_path + ": is a lock; resolve reads a recipe (mirror, build, bundle create and overrides take a lock)"));
          mirror::ChartAccess offline{g.store};
          recipes::Lock lock = mirror::resolve_recipe(*in.recipe, *chart, offline).value_or_throw().lock;
          for (const auto& w : lock.warnings) log_warn(w);
          std::string json = recipes::lock_to_json(lock);
          if (!out->empty()) {
            recipes::set_chart_sources_for_lock(lock, *in.recipe, *out);
            json = recipes::lock_to_json(lock);
            write_atomic(*out, json).value_or_throw();
            log_info("wrote " + *out);
          }
          if (g.json) {
            std::fwrite(json.data(), 1, json.size(), stdout);
          } else if (!g.quiet) {
            print_table(lock);
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
