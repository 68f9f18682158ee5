#include "builder/pipeline.hpp"
#include "builder/pipeline_packages.hpp"

#include <chrono>
#include <unistd.h>

#include "bundles/bundle.hpp"
#include "bundles/delta.hpp"
#include "bundles/kit_files.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/chart_fetch.hpp"
#include "mirror/mirror.hpp"
#include "mirror/store.hpp"
#include "node-images/bake.hpp"
#include "node-images/driver_image.hpp"
#include "node-images/driver_plan.hpp"
#include "node-images/kernel_packages.hpp"
#include "node-images/overlay_artifact.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Runs one step; a failure names the step and says what to do next.
template <typename F>
auto step(BuildSummary& s, const std::string& name, const std::string& hint, F&& body) {
  auto t0 = Clock::now();
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      s.phases.push_back({name, std::chrono::duration<double>(Clock::now() - t0).count()});
    } else {
      auto r = body();
      s.phases.push_back({name, std::chrono::duration<double>(Clock::now() - t0).count()});
      return r;
    }
  } catch (const Error& e) {
    throw Error(e.kind(), std::string(e.what()) + "\nbuild stopped at step '" + name + "'" + (hint.empty() ? "" : ": " + hint));
  }
}

node_images::DriverInputs driver_inputs(const BuildRequest& q) {
  node_images::DriverInputs in;
  in.installer = q.installer;
  in.kernel_builds = q.kernel_builds;
  in.kernel_headers = q.kernel_headers;
  in.sign_key = q.sign_key;
  in.sign_cert = q.sign_cert;
  return in;
}

}  // namespace

BuildSummary run_build(const BuildRequest& q, const std::filesystem::path& store_dir, Progress& progress) {
  BuildSummary s;
  // Inputs first: a bad key or recipe must not cost a download.
  signing::Passphrase pass;
  if (!q.passphrase_env.empty()) pass = signing::Passphrase::from_env(q.passphrase_env).value_or_throw();
  if (!q.passphrase_file.empty()) pass = signing::Passphrase::from_file(q.passphrase_file).value_or_throw();
  signing::PrivateKey key = signing::PrivateKey::load(q.key, pass).value_or_throw();
  s.signer = key.id();
  auto in = recipes::read_recipe_or_lock(q.input).value_or_throw();
  if (!q.repo_key.empty() && !std::filesystem::is_regular_file(q.repo_key))
    throw Error(ErrorKind::Input, "--repo-key " + q.repo_key.string() + ": no such key file");
  if (in.lock && !q.installer.empty())
    throw Error(ErrorKind::Input, q.input.string() + ": --installer needs the recipe (driver and kernels), not a lock");
  mirror::RegistryConfig config;
  if (!q.registry_config.empty()) config = mirror::RegistryConfig::load(q.registry_config).value_or_throw();
  mirror::ClientOptions co;
  co.max_parallel = q.jobs;
  auto source = mirror::registry_source(config, co);
  mirror::Store store = mirror::Store::open(store_dir, mirror::StoreAccess::Exclusive).value_or_throw();
  s.lock = !q.lock.empty() ? q.lock : in.lock ? q.input : recipes::default_lock_path(*in.recipe);

  // The chart is parsed once, here, and handed to the kit step.
  auto resolved = step(s, "resolve", "fix the recipe or the chart source, then run again", [&] {
    mirror::ChartAccess access{store.root(), &store, source.get()};
    if (in.lock) {
      mirror::LoadedChart c = mirror::lock_chart(*in.lock, q.input, q.chart.string(), access).value_or_throw();
      return std::pair{std::move(*in.lock), std::move(c.chart)};
    }
    mirror::ResolvedRecipe r = mirror::resolve_recipe(*in.recipe, q.chart.string(), access).value_or_throw();
    recipes::set_chart_sources_for_lock(r.lock, *in.recipe, s.lock);
    for (const auto& w : r.lock.warnings) log_warn(w);
    return std::pair{std::move(r.lock), std::move(r.chart.chart)};
  });
  recipes::Lock& lock = resolved.first;
  const recipes::Chart& chart = resolved.second;
  const recipes::Recipe* recipe = in.recipe ? &*in.recipe : nullptr;  // set whenever --installer is

  // --installer: precompiled driver images (driver.mode precompiled), or a
  // baked node overlay (driver.mode host: the driver is in the node image).
  bool build_drivers = !q.installer.empty() && lock.driver.mode == "precompiled";
  bool bake_overlay = !q.installer.empty() && lock.driver.mode == "host";
  if (!q.installer.empty() && !build_drivers && !bake_overlay)
    throw Error(ErrorKind::Input, "--installer builds precompiled driver images (driver.mode precompiled) or a node overlay "
                                  "(driver.mode host), but the recipe's driver.mode is " + lock.driver.mode);
  bool assemble_drivers = !q.driver_results.empty();
  if (assemble_drivers && (!q.installer.empty() || lock.driver.mode != "precompiled"))
    throw Error(ErrorKind::Input, "--driver-results takes the precompiled driver images a matrix built (driver.mode precompiled, no --installer)");
  // Read before any download: a bad result file must not cost one.
  std::vector<node_images::DriverBuildResult> results = node_images::read_results(q.driver_results).value_or_throw();
  if (build_drivers || assemble_drivers)  // made here or by the matrix, so the mirror leaves them alone
    for (auto* img : lock.precompiled_driver_images()) img->built = recipes::BuiltKind::DriverImage;

  auto mirrored = step(s, "mirror", "check the registry config and credentials; a re-run continues where this stopped", [&] {
    mirror::MirrorOptions mo;
    mo.jobs = q.jobs;
    mo.all_platforms = q.all_platforms;
    return mirror::mirror_images(lock, store, *source, progress, mo).value_or_throw();
  });
  s.bytes_downloaded = mirrored.bytes_downloaded;
  s.blobs_fetched = mirrored.blobs_fetched;
  s.blobs_reused = mirrored.blobs_present;
  for (const auto& i : mirrored.images) s.images.push_back({i.ref, i.bytes, i.up_to_date});

  if (build_drivers) {
    step(s, "driver", "check the installer, the kernel trees (or packages.sources) and the signing key and certificate", [&] {
      node_images::DriverInputs di = driver_inputs(q);
      ScratchDir work(std::filesystem::temp_directory_path() / ("gpubundle-headers-" + std::to_string(::getpid())));
      node_images::add_fetched_headers(*recipe, recipe->kernels, store, work.path(), di, &progress).value_or_throw();
      auto prepared = node_images::prepare_driver(*recipe, di).value_or_throw();
      node_images::DriverImageOptions io;
      io.os_tag = lock.os_tag;
      io.base = q.driver_base;
      for (const auto* img : lock.precompiled_driver_images()) io.repository = recipes::Reference::parse(img->source).value_or_throw().name();
      auto built = node_images::build_driver_images(*prepared, store, io).value_or_throw();
      for (const auto& b : built) {
        if (!lock.find(b.ref)) throw Error(ErrorKind::Failed, "built " + b.ref + ", which the lock does not list");
        recipes::record_built(lock, b.built());
        s.images.push_back({b.ref, b.size, false});
        ++s.built_driver_images;
      }
      for (const auto& img : lock.images)
        if (img.built == recipes::BuiltKind::DriverImage && img.digest.empty())
          throw Error(ErrorKind::Failed, "no driver image was built for " + img.source + ": is its kernel in --kernel-build/--kernel-headers?");
    });
  }

  if (assemble_drivers) {
    step(s, "drivers", "run the plan entries named again (driver build --plan --entry), then assemble again", [&] {
      auto taken = node_images::take_driver_results(lock, results, store, *source, progress).value_or_throw();
      for (const auto& b : taken) {
        recipes::record_built(lock, b.built());
        s.images.push_back({b.ref, b.size, false});
        ++s.built_driver_images;
      }
    });
  }

  if (bake_overlay) {
    step(s, "bake", "check the installer, the kernel trees (or packages.sources) and the signing key and certificate", [&] {
      node_images::DriverInputs di = driver_inputs(q);
      ScratchDir work(std::filesystem::temp_directory_path() / ("gpubundle-headers-" + std::to_string(::getpid())));
      node_images::add_fetched_headers(*recipe, recipe->kernels, store, work.path(), di, &progress).value_or_throw();
      auto prepared = node_images::prepare_driver(*recipe, di).value_or_throw();
      node_images::BakeOptions bo;
      bo.output = s.overlay_dir = q.output.parent_path() / (recipe->name + "-node-overlay");
      node_images::bake_node_overlay(*recipe, *prepared, bo).value_or_throw();
      std::string ref = std::string(node_images::k_node_overlay_repository) + ":" + node_images::overlay_tag(prepared->installer.manifest.version, lock.os_tag);
      auto stored = node_images::store_overlay(store, bo.output, ref).value_or_throw();
      recipes::record_built(lock, stored.built());
      s.images.push_back({stored.ref, stored.size, false});
    });
  }
  if (recipe && wants_package_repo(*recipe)) {
    step(s, "packages", "check packages.sources (URLs, keyrings) and that every kernel's packages are there", [&] {
      auto built = build_package_repo(*recipe, lock, store, q.repo_key, q.jobs, progress);
      s.images.push_back({built.ref, built.bytes, false});
      s.repo_packages = built.packages;
      s.repo_fingerprint = built.fingerprint;
    });
  }
  // Once, when every image has its digest: a failed step leaves the lock as it was.
  write_atomic(s.lock, recipes::lock_to_json(lock)).value_or_throw();

  ScratchDir scratch(q.output.parent_path() / (".gpubundle-kit." + std::to_string(::getpid())));
  bundles::CreateOptions co2;
  step(s, "kit", "the install kit needs the lock's destination registry to be valid", [&] {
    std::optional<mirror::LoadedChart> network_chart;
    if (lock.network) network_chart = mirror::lock_network_chart(lock, s.lock, mirror::ChartAccess{store.root()}).value_or_throw();
    bundles::add_kit_files(lock, chart, "", scratch.path(), co2.extra, network_chart ? &network_chart->chart : nullptr).value_or_throw();
  });

  auto report = step(s, "bundle", "check free space at the output and the signing key", [&] {
    co2.output = q.output;
    if (!q.split.empty()) co2.split_bytes = parse_size(q.split).value_or_throw();
    if (!q.since.empty()) {
      co2.have_blobs = bundles::blobs_site_has(q.since, store).value_or_throw();
      co2.delta_base = q.since.filename().string();
    }
    bundles::apply_source_date_epoch(co2).value_or_throw();
    return bundles::create_bundle(store, lock, key, co2, progress).value_or_throw();
  });
  s.volumes = report.volumes;
  s.bundle_id = report.bundle_id;

  step(s, "verify", "the bundle just written does not verify: check the disk, then run again", [&] {
    bundles::VerifyOptions vo;
    signing::Keyring trusted = signing::Keyring::of(key.public_key());
    vo.trusted = &trusted;
    auto v = bundles::verify_bundle(s.volumes, vo);
    if (!v.problems.empty()) {
      std::string all;
      for (const auto& p : v.problems) all += (all.empty() ? "" : "\n") + p;
      throw Error(ErrorKind::Failed, all);
    }
  });
  return s;
}

}  // namespace gb::cli
