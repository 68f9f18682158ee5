#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "builder/pipeline.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"

namespace gb::cli {

namespace {

void print_summary(const BuildSummary& s) {
  std::printf("\nimages\n");
  std::uint64_t total = 0;
  for (const auto& i : s.images) {
    std::printf("  %10s  %s%s\n", human_bytes(i.bytes).c_str(), i.ref.c_str(), i.reused ? "  (up to date)" : "");
    total += i.bytes;
  }
  std::printf("  %10s  total, %zu images%s\n", human_bytes(total).c_str(), s.images.size(),
              s.built_driver_images ? (", " + std::to_string(s.built_driver_images) + " driver images built here").c_str() : "");
  std::printf("\ndownloaded %s in %zu blobs, reused %zu blobs already in the store\n", human_bytes(s.bytes_downloaded).c_str(),
              s.blobs_fetched, s.blobs_reused);
  std::printf("\nsteps\n");
  double all = 0;
  for (const auto& p : s.phases) {
    std::printf("  %-8s %7.2fs\n", p.name.c_str(), p.seconds);
    all += p.seconds;
  }
  std::printf("  %-8s %7.2fs\n", "total", all);
  std::printf("\nlock    %s\n", s.lock.string().c_str());
  if (!s.overlay_dir.empty()) std::printf("overlay %s (install.sh --root IMAGE_ROOT)\n", s.overlay_dir.string().c_str());
  if (s.repo_packages)
    std::printf("packages %zu in the site repository, signed by OpenPGP key %s\n", s.repo_packages, s.repo_fingerprint.c_str());
  for (const auto& v : s.volumes) std::printf("bundle  %s\n", v.string().c_str());
  std::printf("id      %s, signed by key %s, verified\n", s.bundle_id.c_str(), s.signer.substr(0, 16).c_str());
}

}  // namespace

CommandSpec build_command() {
  return {
      "build",
      "Everything for the build machine: resolve, mirror, driver images, install kit, bundle, verify",
      "Runs resolve -> mirror -> driver images (precompiled recipes, when --installer is given) or a baked node overlay "
      "(driver.mode host, when --installer is given; written next to the bundle and carried in it) -> site package repository "
      "(driver.mode conventional with packages.sources: the kernels' packages, signed, as an image; docs/package-repos.md) -> install kit (when the "
      "recipe has a destination) -> bundle -> verify, and prints the images with their sizes, the bytes downloaded and "
      "reused, the time of each step, and where the bundle and the lock are. It stops at the first failed step, naming "
      "it and what to do; what was already mirrored stays in the store, so running it again continues from there. Given a "
      "lock instead of a recipe, it builds exactly that lock (chart from the store or the lock's chart.source). Chart sources "
      "and the default lock: docs/lock.md. With --driver-results it assembles the images of a driver build matrix "
      "(`driver plan`, docs/scale.md): each is pulled from where its entry pushed it and checked against its result.",
      "gpubundle build examples/precompiled.yaml -o site-a.bundle --key release.key --registry-config registries.yaml",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto q = std::make_shared<BuildRequest>();
        app.add_option("input", q->input, "Recipe, or a lock to build as is (no --installer)")->required();
        app.add_option("-o,--output", q->output, "Bundle file (volumes .001, .002, ... with --split)")->required();
        app.add_option("--key", q->key, "Private signing key (PEM)")->required();
        app.add_option("--passphrase-env", q->passphrase_env, "Environment variable holding the key's passphrase");
        app.add_option("--passphrase-file", q->passphrase_file, "File holding the key's passphrase");
        app.add_option("--registry-config", q->registry_config, "Per-host mirrors, TLS and credentials (docs/registries.md)");
        app.add_option("--chart", q->chart, "Chart .tgz or folder; overrides the recipe's operator.chart");
        app.add_option("--lock", q->lock, "Where to write the lock (default: <recipe folder>/<metadata.name>.lock.json, or the lock given)");
        app.add_option("--split", q->split, "Largest volume size, e.g. 4G, 700M");
        app.add_option("--since", q->since, "Inventory, lock or bundle the site already has: ship only what is missing");
        app.add_option("-j,--jobs", q->jobs, "Parallel blob transfers (default 8)");
        add_platforms_option(app, q->all_platforms);
        app.add_option("--installer", q->installer,
                       "NVIDIA-Linux-*.run (or its extracted folder): build precompiled driver images, or bake a node overlay (driver.mode host)");
        app.add_option("--kernel-build", q->kernel_builds, "Kernel build tree (/lib/modules/<kver>/build), repeatable");
        app.add_option("--kernel-headers", q->kernel_headers, "Kernel header .deb packages, repeatable");
        app.add_option("--sign-key", q->sign_key, "Secure Boot module signing key (PEM)");
        app.add_option("--sign-cert", q->sign_cert, "Secure Boot module signing certificate (PEM or DER)");
        app.add_option("--driver-results", q->driver_results,
                       "Result files of a driver build matrix (driver build --push --result): take the precompiled driver images "
                       "from the registry they were pushed to instead of building them (docs/scale.md); repeatable");
        app.add_option("--driver-base", q->driver_base, "Base image for built driver images (default: the conventional driver image)");
        app.add_option("--repo-key", q->repo_key,
                       "OpenPGP key (armoured, no passphrase) that signs the site package repository of a conventional recipe with "
                       "packages.sources (default: <store>/keys/package-repo.asc, made on first use)");
        return [&g, q] {
          auto progress = make_progress(g.json ? ProgressStyle::Json : g.quiet ? ProgressStyle::None : ProgressStyle::Auto);
          BuildSummary s = run_build(*q, g.store, *progress);
          if (g.json) {
            nlohmann::json j = {{"bundleId", s.bundle_id},
                                {"lock", s.lock.string()},
                                {"bytesDownloaded", s.bytes_downloaded},
                                {"blobsFetched", s.blobs_fetched},
                                {"blobsReused", s.blobs_reused},
                                {"builtDriverImages", s.built_driver_images},
                                {"signer", s.signer}};
            if (!s.overlay_dir.empty()) j["nodeOverlay"] = s.overlay_dir.string();
            if (s.repo_packages) j["packageRepo"] = {{"packages", s.repo_packages}, {"fingerprint", s.repo_fingerprint}};
            for (const auto& v : s.volumes) j["volumes"].push_back(v.string());
            for (const auto& p : s.phases) j["phases"][p.name] = p.seconds;
            for (const auto& i : s.images) j["images"].push_back({{"ref", i.ref}, {"bytes", i.bytes}, {"upToDate", i.reused}});
            std::printf("%s\n", j.dump(2).c_str());
          } else if (!g.quiet) {
            print_summary(s);
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
