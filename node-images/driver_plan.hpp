#pragma once
// The precompiled driver build matrix (`gpubundle driver plan`), for a CI
// matrix, a Kubernetes Indexed Job or an Argo Workflow (docs/scale.md): one
// entry per (kernel, OS, platform, branch) whose image the lock lists, each
// with the exact `gpubundle driver build` arguments that make it, and where
// the image goes. Each entry runs alone, on any machine, and pushes its image
// with a result line that `gpubundle build --driver-results` checks.
//
// Plan file (JSON; `driver build --plan FILE --entry N` reads it back):
//   {"apiVersion": "gpubundle/v1", "kind": "DriverBuildPlan",
//    "recipe": FILE, "installer": FILE, "base": REF|"", "signKey": FILE|"", "signCert": FILE|"",
//    "registryConfig": FILE|"", "push": "host[:port][/prefix]", "layout": "strip-host"|"keep-host",
//    "entries": [{"index": N, "kernel", "osTag", "platform", "branch", "version",
//                 "repository", "image" (the lock's reference), "pushed" (where it goes),
//                 "result" (its result file), "args": [...] (driver build ...)}]}
// Paths are as the jobs see them, relative to their working folder.
//
// Result line (one JSON object per line; `driver build --result FILE`):
//   {"apiVersion": "gpubundle/v1", "kind": "DriverBuildResult", "image": REF,
//    "pushed": REF, "digest": "sha256:...", "kernel": K, "platform": "linux/amd64"}
// Readers refuse unknown kinds, malformed references and digests, and more than
// k_max_plan_entries entries.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "node-images/driver_image.hpp"
#include "recipes/lock.hpp"

namespace gb {
class Progress;
}
namespace gb::mirror {
class ImageSource;
class Store;
}

namespace gb::node_images {

constexpr std::size_t k_max_plan_entries = 10000;

struct DriverPlanEntry {
  std::size_t index = 0;
  std::string kernel, os_tag, platform, branch, version, repository;
  std::string image;   // the lock's reference: <repository>:<branch>-<kernel>-<osTag>
  std::string pushed;  // where `--push` puts it (kit::site_reference of image)
  std::string result;  // the result file the args name
  std::vector<std::string> args;  // gpubundle's, from "driver"
};

struct DriverPlan {
  std::string recipe, installer, base, sign_key, sign_cert, registry_config, push, layout = "strip-host";
  std::vector<DriverPlanEntry> entries;
};

// The plan of `lock` (driver.mode precompiled). `inputs` carries the
// recipe, installer, base, keys, registry config, push and layout fields.
Result<DriverPlan> plan_driver_builds(const recipes::Lock& lock, const DriverPlan& inputs);
// Each entry's args and result file again, from the plan's fields.
void set_entry_args(DriverPlan& plan);
std::string plan_to_json(const DriverPlan& plan);
Result<DriverPlan> parse_plan(const std::string& text, const std::string& file);

struct DriverBuildResult {
  std::string image, pushed, digest, kernel, platform;
};
std::string result_to_json(const DriverBuildResult& result);  // one line, no newline
// Every result line of one file (blank lines skipped).
Result<std::vector<DriverBuildResult>> parse_results(const std::string& text, const std::string& file);
// Every result line of every file (each at most 16 MiB).
Result<std::vector<DriverBuildResult>> read_results(const std::vector<std::filesystem::path>& files);

// Assembly (`build --driver-results`): the matrix's images into the store.
// Every precompiled driver image of the lock needs exactly one result, and
// every result names one of them; each pushed image is pulled by its tag,
// which must still resolve to the result's digest, its bytes checked as any
// pull, its config labels naming the entry's kernel and the lock's driver
// version; then it is stored under the lock's reference. Nothing is stored
// under those names unless all of them pass.
Result<std::vector<BuiltDriverImage>> take_driver_results(const recipes::Lock& lock, const std::vector<DriverBuildResult>& results,
                                                          mirror::Store& store, mirror::ImageSource& source, Progress& progress);

}  // namespace gb::node_images
