#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/chart_fetch.hpp"
#include "mirror/mirror.hpp"
#include "mirror/registry_config.hpp"
#include "mirror/store.hpp"
#include "recipes/resolver.hpp"

namespace gb::cli {

namespace fs = std::filesystem;

namespace {

// A lock is JSON; a recipe is YAML and never starts with '{'.
bool looks_like_lock(const std::string& text) {
  auto t = trim(text);
  return !t.empty() && t.front() == '{';
}

int lock_wait_seconds() {
  if (const char* env = std::getenv("GPUBUNDLE_LOCK_WAIT_S"); env && *env) return std::atoi(env);
  return 10;
}

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
      "Given a recipe, fetches the GPU Operator chart first when it is remote (Helm HTTP repository, oci:// or a local "
      ".tgz) into STORE/charts, then resolves the image list; given a lock, uses it. Checks that every image and "
      "platform exists before downloading any blob and names every missing reference. Indexes are copied sparsely: "
      "the index bytes stay intact but only the lock's platforms are fetched. Blobs already in the store are not "
      "fetched again. Writes the digests into the lock (-o; default <recipe>.lock.json, or the lock in place). "
      "With --locked, fails when an upstream digest differs from the lock.",
      "gpubundle --store /srv/gpubundle mirror site-a.yaml --registry-config registries.yaml -j 8",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        struct Opts {
          std::string input, registry_config, out, chart;
          int jobs = 8;
          bool locked = false;
        };
        auto o = std::make_shared<Opts>();
        app.add_option("input", o->input, "Recipe (YAML) or lock (JSON)")->required();
        app.add_option("--registry-config", o->registry_config, "Per-host mirrors, TLS and credentials (YAML, docs/registries.md)");
        app.add_option("-j,--jobs", o->jobs, "Parallel transfers (default 8)")->check(CLI::Range(1, 64));
        app.add_flag("--locked", o->locked, "Refuse when an upstream digest differs from the lock");
        app.add_option("-o,--output", o->out, "Write the lock with digests here");
        app.add_option("--chart", o->chart, "Chart .tgz or folder; overrides the recipe's operator.chart");
        return [&g, o]() -> int {
          std::string text = read_file(o->input, k_lock_max_bytes).value_or_throw();  // a recipe or a lock
          RegistryConfig config;
          if (!o->registry_config.empty()) config = RegistryConfig::load(o->registry_config).value_or_throw();
          ClientOptions copts;
          copts.max_parallel = o->jobs;
          copts.max_per_host = o->jobs;
          auto source = registry_source(config, copts);
          Store store = Store::open(g.store, StoreAccess::Exclusive, lock_wait_seconds()).value_or_throw();
          if (const auto& sw = store.swept(); sw.temps_removed)
            log::info("removed " + std::to_string(sw.temps_removed) + " temp files of interrupted runs (" + human_bytes(sw.bytes_freed) + ")");

          Lock lock;
          fs::path out = o->out;
          fs::path input = o->input;
          if (looks_like_lock(text)) {
            lock = parse_lock(text, o->input).value_or_throw();
            if (out.empty()) out = input;
            if (!o->chart.empty()) {
              // An explicit chart file is used as is.
            } else if (!lock.chart.source.empty() && !lock.chart.version.empty()) {
              auto c = fetch_chart(lock.chart.source, input.parent_path(), lock.chart.name.empty() ? "gpu-operator" : lock.chart.name,
                                   lock.chart.version, store, *source)
                           .value_or_throw();
              if (c.fetched) log::info("fetched chart into " + c.path.string());
            }
          } else {
            Recipe recipe = parse_recipe(text, input).value_or_throw();
            if (out.empty()) out = input.parent_path() / (input.stem().string() + ".lock.json");
            fs::path chart_path = o->chart;
            if (chart_path.empty()) {
              if (recipe.operator_version.empty()) throw Error(input_error(recipe.where("operator.version") + "operator.version is required to fetch the chart"));
              auto c = fetch_chart(recipe.chart, recipe.file.parent_path(), "gpu-operator", recipe.operator_version, store, *source)
                           .value_or_throw();
              if (c.fetched) log::info("fetched chart into " + c.path.string());
              chart_path = c.path;
            }
            Chart chart = load_chart(chart_path).value_or_throw();
            lock = resolve(recipe, chart, Catalog::builtin()).value_or_throw();
            for (const auto& w : lock.warnings) log::warn(w);
            if (o->locked) {
              // The digests to hold upstream to are the ones in the existing lock.
              auto old = load_lock(out.string());
              if (!old) throw Error(input_error("--locked needs the existing lock " + out.string() + ": " + old.error().message));
              for (auto& i : lock.images)
                if (auto* prev = old->find(i.source)) i.digest = prev->digest;
            }
          }

          auto progress = make_progress(progress_style(g));
          MirrorOptions mopts;
          mopts.jobs = o->jobs;
          mopts.locked = o->locked;
          MirrorSummary s = mirror_images(lock, store, *source, *progress, mopts).value_or_throw();
          write_atomic(out, lock_to_json(lock)).value_or_throw();

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
            log::info(line);
            log::info("wrote " + out.string());
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
