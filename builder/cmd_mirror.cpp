#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/chart_fetch.hpp"
#include "mirror/mirror.hpp"
#include "mirror/registry_config.hpp"
#include "mirror/store.hpp"
#include "node-images/driver_plan.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

namespace {

ProgressStyle progress_style(const Globals& g) {
  if (g.json) return ProgressStyle::Json;
  if (g.quiet) return ProgressStyle::None;
  return ProgressStyle::Auto;
}

}  // namespace

CommandSpec mirror_command() {
  return {
      "mirror",
      "Fetch every image of a recipe or lock (and the chart) into the content store",
      "Given a recipe, takes its chart (--chart, else operator.chart: a folder, a .tgz, a Helm HTTP repository or oci://), "
      "keeps it in STORE/charts and resolves the image list; given a lock, uses it and stores the chart it names. Checks that every image and "
      "platform exists before downloading any blob and names every missing reference. Indexes are copied sparsely: "
      "the index bytes stay intact but only the lock's platforms (and their attestations) are fetched; the site then gets an index of "
      "those alone, whose digest the lock records as siteDigest. --platforms all fetches every child and keeps upstream digests. Blobs already in the store are not "
      "fetched again. Writes the digests into the lock (-o; default <recipe folder>/<metadata.name>.lock.json, the lock `bundle create RECIPE` "
      "reads, or the lock in place; docs/lock.md). "
      "With --locked, fails when an upstream digest differs from the lock.",
      "gpubundle --store /srv/gpubundle mirror site-a.yaml --registry-config registries.yaml -j 8",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        struct Opts {
          std::string input, registry_config, out, chart;
          int jobs = 8;
          bool locked = false;
          bool all_platforms = false;
          std::vector<std::filesystem::path> driver_results;
        };
        auto o = std::make_shared<Opts>();
        app.add_option("input", o->input, "Recipe (YAML) or lock (JSON)")->required();
        app.add_option("--registry-config", o->registry_config, "Per-host mirrors, TLS and credentials (YAML, docs/registries.md)");
        app.add_option("-j,--jobs", o->jobs, "Parallel transfers (default 8)")->check(CLI::Range(1, 64));
        app.add_flag("--locked", o->locked, "Refuse when an upstream digest differs from the lock");
        add_platforms_option(app, o->all_platforms);
        app.add_option("-o,--output", o->out, "Write the lock with digests here");
        app.add_option("--chart", o->chart, "Chart .tgz or folder; overrides the recipe's operator.chart");
        app.add_option("--driver-results", o->driver_results,
                       "Result files of a driver build matrix: the precompiled driver images come from where its entries pushed them "
                       "(docs/scale.md); repeatable");
        return [&g, o]() -> int {
          auto in = recipes::read_recipe_or_lock(o->input).value_or_throw();
          // Read before any download: a bad result file must not cost one.
          auto results = node_images::read_results(o->driver_results).value_or_throw();
          mirror::RegistryConfig config;
          if (!o->registry_config.empty()) config = mirror::RegistryConfig::load(o->registry_config).value_or_throw();
          mirror::ClientOptions copts;
          copts.max_parallel = o->jobs;
          copts.max_per_host = o->jobs;
          auto source = mirror::registry_source(config, copts);
          mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive, store_lock_wait_seconds()).value_or_throw();
          if (const auto& sw = store.swept(); sw.temps_removed)
            log_info("removed " + std::to_string(sw.temps_removed) + " temp files of interrupted runs (" + human_bytes(sw.bytes_freed) + ")");

          recipes::Lock lock;
          fs::path out = o->out;
          mirror::ChartAccess access{store.root(), &store, source.get()};
          std::optional<mirror::LoadedChart> chart;
          if (in.lock) {
            lock = std::move(*in.lock);
            if (out.empty()) out = o->input;
            // A hand-made lock may name no chart: its images still mirror.
            if (o->chart.empty() && lock.chart.source.empty() && !fs::exists(store.chart_path(lock.chart.name, lock.chart.version)))
              log_warn(o->input + ": names no chart source and chart " + lock.chart.name + " " + lock.chart.version +
                        " is not in the store; `bundle create` needs it: mirror again with --chart FILE");
            else
              chart = mirror::lock_chart(lock, o->input, o->chart, access).value_or_throw();
          } else {
            if (out.empty()) out = recipes::default_lock_path(*in.recipe);
            auto r = mirror::resolve_recipe(*in.recipe, o->chart, access).value_or_throw();
            lock = std::move(r.lock);
            recipes::set_chart_sources_for_lock(lock, *in.recipe, out);
            chart = std::move(r.chart);
            for (const auto& w : lock.warnings) log_warn(w);
            if (o->locked) {
              // The digests to hold upstream to are the ones in the existing lock.
              auto old = recipes::load_lock(out.string());
              if (!old) throw Error(input_error("--locked needs the existing lock " + out.string() + ": " + old.error().message));
              for (auto& i : lock.images)
                if (auto* prev = old->find(i.source)) i.digest = prev->digest;
            }
          }
          if (chart && chart->fetched) log_info("fetched chart " + lock.chart.name + " " + lock.chart.version + " from " + chart->chart.path.string());
          if (chart && chart->stored) log_info("stored chart in " + store.chart_path(lock.chart.name, lock.chart.version).string());

          auto progress = make_progress(progress_style(g));
          mirror::MirrorOptions mopts;
          mopts.jobs = o->jobs;
          mopts.locked = o->locked;
          mopts.all_platforms = o->all_platforms;
          if (!results.empty()) {
            if (lock.driver.mode != "precompiled")
              throw Error(ErrorKind::Input, "--driver-results: the lock's driver.mode is " + lock.driver.mode + ", not precompiled");
            for (auto* img : lock.precompiled_driver_images()) img->built = recipes::BuiltKind::DriverImage;
          }
          mirror::MirrorSummary s = mirror::mirror_images(lock, store, *source, *progress, mopts).value_or_throw();
          if (!results.empty())
            for (const auto& b : node_images::take_driver_results(lock, results, store, *source, *progress).value_or_throw())
              recipes::record_built(lock, b.built());
          write_atomic(out, recipes::lock_to_json(lock)).value_or_throw();

          std::size_t up = 0;
          std::uint64_t total = 0;
          for (const auto& i : s.images) {
            up += i.up_to_date;
            total += i.bytes;
          }
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.2f", s.seconds);
          std::string line = "mirrored " + std::to_string(s.images.size()) + " images (" + human_bytes(total) + ", " + std::to_string(up) +
                             " already up to date): " + std::to_string(s.blobs_fetched) + " blobs fetched, " +
                             std::to_string(s.blobs_present) + " already in the store, " + human_bytes(s.bytes_downloaded) +
                             " downloaded in " + secs + "s";
          progress->end(line);
          if (g.json) {
            nlohmann::json j;
            j["lock"] = out.string();
            j["store"] = store.root().string();
            j["blobsFetched"] = s.blobs_fetched;
            j["blobsPresent"] = s.blobs_present;
            j["bytesDownloaded"] = s.bytes_downloaded;
            j["seconds"] = s.seconds;
            j["images"] = nlohmann::json::array();
            for (const auto& i : s.images)
              j["images"].push_back({{"ref", i.ref}, {"digest", i.digest}, {"mediaType", i.media_type}, {"bytes", i.bytes}, {"upToDate", i.up_to_date}});
            std::printf("%s\n", j.dump(2).c_str());
          } else {
            log_info(line);
            log_info("wrote " + out.string());
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
