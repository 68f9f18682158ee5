#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/store.hpp"
#include "node-images/driver_image.hpp"
#include "node-images/kernel_packages.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::cli {

void add_driver_input_options(CLI::App& app, node_images::DriverInputs& in);  // cmd_node_image.cpp

namespace {

struct BuildArgs {
  std::string recipe;
  node_images::DriverInputs in;
  node_images::DriverImageOptions image;
  std::string lock;
  std::vector<std::string> kernels;  // --kernel
};

// The driver repository and OS tag the lock's precompiled tags use.
void take_from_lock(const recipes::Lock& lock, BuildArgs& a, bool repo_given, bool os_given) {
  if (!os_given && !lock.os_tag.empty()) a.image.os_tag = lock.os_tag;
  if (repo_given) return;
  for (const auto& img : lock.images)
    if (std::find(img.components.begin(), img.components.end(), "driver") != img.components.end()) {
      auto at = img.source.find('@');
      std::string s = img.source.substr(0, at);
      auto colon = s.rfind(':');
      if (colon != std::string::npos && s.find('/', colon) == std::string::npos) s = s.substr(0, colon);
      a.image.repository = s;
      return;
    }
}

}  // namespace

CommandSpec driver_command() {
  return {
      "driver",
      "Build precompiled driver images (one per kernel) into the store",
      "`driver build` builds the NVIDIA kernel modules from the installer for every kernel of the recipe, signs "
      "them for Secure Boot with --sign-key/--sign-cert, and writes one image per kernel into the store: the "
      "conventional driver image of the lock (or --base) plus one deterministic layer with the modules and "
      "depmod output, userspace, firmware in /opt/lib/firmware and gpubundle's nvidia-driver entrypoint. Tags are "
      "<branch>-<kernel>-<osTag>, as the operator with usePrecompiled=true looks them up. With --lock, the lock "
      "records them as built here, with their digests.",
      "gpubundle driver build precompiled.yaml --installer NVIDIA-Linux-x86_64-580.95.05.run --kernel-build "
      "/lib/modules/6.1.0-57-amd64/build --lock precompiled.lock.json",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        CLI::App* build = app.add_subcommand("build", "Build and store the precompiled driver images");
        auto a = std::make_shared<BuildArgs>();
        build->add_option("recipe", a->recipe, "Recipe file (YAML)")->required();
        add_driver_input_options(*build, a->in);
        auto* base = build->add_option("--base", a->image.base, "Base image: a reference in the store, or oci:DIR:TAG");
        auto* repo = build->add_option("--repository", a->image.repository, "Driver repository (default: from --lock, else nvcr.io/nvidia/driver)");
        auto* os = build->add_option("--os-tag", a->image.os_tag, "OS tag of the image tags (default: from --lock, else target.os)");
        build->add_option("--kernel", a->kernels,
                          "Build for this target.kernels entry only, its headers fetched from packages.sources; repeatable");
        build->add_option("--lock", a->lock, "Lock file to update: the images become origin \"built\" with their digests");
        (void)base;
        add_tool_image_subcommand(app, g);
        return [&g, a, repo, os]() -> int {
          recipes::Recipe recipe = recipes::load_recipe(a->recipe).value_or_throw();
          std::optional<recipes::Lock> lock;
          if (!a->lock.empty()) {
            lock = recipes::load_lock(a->lock).value_or_throw();
            take_from_lock(*lock, *a, repo->count() > 0, os->count() > 0);
          }
          if (a->image.os_tag.empty()) a->image.os_tag = recipe.os;
          if (!a->kernels.empty()) {
            if (!a->in.kernel_builds.empty() || !a->in.kernel_headers.empty())
              throw Error(ErrorKind::Input, "--kernel fetches the headers from packages.sources; it does not go with "
                                            "--kernel-build or --kernel-headers");
            if (recipe.packages.sources.empty())
              throw Error(ErrorKind::Input, recipe.where("packages.sources") + "--kernel " + a->kernels.front() +
                                                ": the recipe lists no packages.sources to fetch its headers from");
            for (const auto& k : a->kernels)
              if (std::find(recipe.kernels.begin(), recipe.kernels.end(), k) == recipe.kernels.end())
                throw Error(ErrorKind::Input, recipe.where("target.kernels") + "--kernel " + k + " is not in target.kernels (" +
                                                  join(recipe.kernels, ", ") + ")");
            recipe.kernels = a->kernels;
          }
          // A failed build leaves the store as it was, but for fetched headers (a cache).
          mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive).value_or_throw();
          ScratchDir work(std::filesystem::temp_directory_path() / ("gpubundle-headers-" + std::to_string(::getpid())));
          auto progress = make_progress(g.quiet || g.json ? ProgressStyle::None : ProgressStyle::Auto);
          node_images::add_fetched_headers(recipe, recipe.kernels, store, work.path(), a->in, progress.get()).value_or_throw();
          auto driver = node_images::prepare_driver(recipe, a->in).value_or_throw();
          auto images = node_images::build_driver_images(*driver, store, a->image).value_or_throw();
          if (lock) {
            for (const auto& img : images) record_built(*lock, img.built());
            write_atomic(a->lock, recipes::lock_to_json(*lock)).value_or_throw();
            log_info("updated " + a->lock);
          }
          for (const auto& img : images) {
            if (g.json)
              std::printf("{\"kernel\":\"%s\",\"ref\":\"%s\",\"digest\":\"%s\"}\n", img.kernel.c_str(), img.ref.c_str(), img.digest.c_str());
            else if (!g.quiet)
              std::printf("%s@%s\n", img.ref.c_str(), img.digest.c_str());
          }
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
