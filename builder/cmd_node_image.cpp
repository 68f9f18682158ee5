#include <CLI/CLI.hpp>

#include "builder/cli.hpp"
#include "common/log.hpp"
#include "node-images/bake.hpp"
#include "recipes/recipe.hpp"

namespace gb::cli {

// Options shared by `node-image bake` and `driver build`.
void add_driver_input_options(CLI::App& app, DriverInputs& in) {
  app.add_option("--installer", in.installer, "NVIDIA-Linux-<arch>-<ver>.run or a folder extracted from it (never executed)")
      ->required();
  app.add_option("--kernel-build", in.kernel_builds, "Kernel build tree (/lib/modules/<kver>/build); repeat per kernel");
  app.add_option("--kernel-headers", in.kernel_headers, "Header packages (.deb) to unpack into a sandbox instead");
  app.add_option("--sign-key", in.sign_key, "Private key (PEM) for Secure Boot module signing; never stored");
  app.add_option("--sign-cert", in.sign_cert, "Certificate (PEM or DER) matching --sign-key");
  app.add_option("-j,--jobs", in.jobs, "Parallel make jobs (default: number of CPUs)");
  app.add_option("--kernel-module-type", in.module_type, "open or proprietary; default from the recipe");
  app.add_flag("--keep-sandbox", in.keep_sandbox, "Keep the build sandbox (logs, objects) after success");
}

CommandSpec node_image_command() {
  return {
      "node-image",
      "Bake a root filesystem overlay with the NVIDIA driver for node images",
      "`node-image bake` builds the kernel modules from the NVIDIA installer for every kernel of the recipe "
      "(signed for Secure Boot with --sign-key/--sign-cert) and writes a deterministic overlay.tar with modules, "
      "userspace, firmware, modprobe/modules-load/ld.so configuration and an enabled nvidia-persistenced unit, "
      "plus install.sh (run by the image pipeline with --root DIR), manifest.json (every file with its sha256) "
      "and a Helm values fragment with driver.enabled=false.",
      "gpubundle node-image bake site.yaml --installer NVIDIA-Linux-x86_64-580.95.05.run "
      "--kernel-build /lib/modules/6.1.0-57-amd64/build --sign-key mok.key --sign-cert mok.crt -o overlay/",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        CLI::App* bake = app.add_subcommand("bake", "Build the overlay, install.sh, manifest.json and values fragment");
        auto recipe_path = std::make_shared<std::string>();
        auto in = std::make_shared<DriverInputs>();
        auto opts = std::make_shared<BakeOptions>();
        bake->add_option("recipe", *recipe_path, "Recipe file (YAML)")->required();
        add_driver_input_options(*bake, *in);
        bake->add_option("-o,--output", opts->output, "Output folder")->required();
        bake->add_option("--toolkit-packages", opts->toolkit_packages, "Folder of nvidia-container-toolkit packages to ship");
        bake->add_flag("--fabric-manager", opts->fabric_manager, "Also enable the fabric manager (NVSwitch systems)");
        return [&g, recipe_path, in, opts]() -> int {
          Recipe recipe = load_recipe(*recipe_path).value_or_throw();
          auto driver = prepare_driver(recipe, *in).value_or_throw();
          auto result = bake_node_overlay(recipe, *driver, *opts).value_or_throw();
          if (!g.quiet)
            std::printf("%s: %zu entries, sha256 %s\nnext: %s/install.sh --root IMAGE_ROOT\n", result.overlay.c_str(), result.files,
                        result.overlay_sha256.c_str(), opts->output.c_str());
          return 0;
        };
      },
  };
}

}  // namespace gb::cli
