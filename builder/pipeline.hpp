#pragma once
// `gpubundle build`: resolve -> mirror -> driver images or node overlay (when asked) ->
// site package repository (conventional recipes with packages.sources) ->
// install kit -> bundle -> verify, one step after another. A failed step
// stops the run with the step's name and what to do; whatever was already
// mirrored stays in the store, so a re-run continues from there.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gb {
class Progress;
}

namespace gb::cli {

struct BuildRequest {
  std::filesystem::path input;   // recipe, or a lock to build as is
  std::filesystem::path output;  // bundle
  std::filesystem::path lock;    // "": the lock given, else default_lock_path() (recipes/chart_source.hpp)
  std::filesystem::path key;
  std::string passphrase_env, passphrase_file;
  std::filesystem::path registry_config;
  std::filesystem::path chart;  // overrides operator.chart
  std::string split;
  std::filesystem::path since;
  int jobs = 8;
  bool all_platforms = false;  // --platforms all (mirror/mirror.hpp MirrorOptions)
  // With an installer: driver images (precompiled mode) or a baked node overlay (host mode).
  std::filesystem::path installer;
  std::vector<std::filesystem::path> kernel_builds, kernel_headers;
  std::filesystem::path sign_key, sign_cert;
  std::string driver_base;
  // Precompiled recipes: the result files of a driver build matrix
  // (node-images/driver_plan.hpp); the images come from its registry.
  std::vector<std::filesystem::path> driver_results;
  // Conventional recipes with packages.sources: the site repository's signing
  // key (OpenPGP, armoured); "": STORE/keys/package-repo.asc, made on first use.
  std::filesystem::path repo_key;
};

struct BuildPhase {
  std::string name;
  double seconds = 0;
};

struct BuildImageLine {
  std::string ref;
  std::uint64_t bytes = 0;
  bool reused = false;
};

struct BuildSummary {
  std::vector<BuildPhase> phases;
  std::vector<BuildImageLine> images;
  std::uint64_t bytes_downloaded = 0;
  std::size_t blobs_fetched = 0, blobs_reused = 0;
  std::vector<std::filesystem::path> volumes;
  std::filesystem::path lock;
  std::string bundle_id;
  std::string signer;
  std::size_t built_driver_images = 0;
  std::filesystem::path overlay_dir;  // the baked overlay's folder (host mode), "" when none
  std::size_t repo_packages = 0;      // in the site package repository, 0 when none
  std::string repo_fingerprint;       // its signing key
};

BuildSummary run_build(const BuildRequest& request, const std::filesystem::path& store, Progress& progress);

}  // namespace gb::cli
