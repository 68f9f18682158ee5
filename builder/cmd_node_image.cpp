#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "builder/cli.hpp"
#include "common/log.hpp"
#include "common/files.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/store.hpp"
#include "node-images/bake.hpp"
#include "node-images/overlay_artifact.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

// Options shared by `node-image bake` and `driver build`.
CLI::Option* add_driver_input_options(CLI::App& app, node_images::DriverInputs& in) {
  auto* installer = app.add_option("--installer", in.installer, "NVIDIA-Linux-<arch>-<ver>.run or a folder extracted from it (never executed)");
  app.add_option("--kernel-build", in.kernel_builds, "Kernel build tree (/lib/modules/<kver>/build); repeat per kernel");
  app.add_option("--kernel-headers", in.kernel_headers, "Header packages (.deb) to unpack into a sandbox instead");
  app.add_option("--sign-key", in.sign_key, "Private key (PEM) for Secure Boot module signing; never stored");
  app.add_option("--sign-cert", in.sign_cert, "Certificate (PEM or DER) matching --sign-key");
  app.add_option("-j,--jobs", in.jobs, "Parallel make jobs (default: number of CPUs)");
  app.add_option("--kernel-module-type", in.module_type, "open or proprietary; default from the recipe");
  app.add_flag("--keep-sandbox", in.keep_sandbox, "Keep the build sandbox (logs, objects) after success");
  return installer;
}

namespace {

struct BakeArgs {
  std::string recipe;
  node_images::DriverInputs in;
  node_images::BakeOptions opts;
  std::string repository = node_images::k_node_overlay_repository;
  std::string os_tag;
  std::string lock;
  bool no_store = false;
};

struct ExportArgs {
  std::string ref;
  std::string output;
  std::vector<std::string> bundle;
  std::vector<std::string> pubkeys;
  std::string keyring;
  bool skip_signature = false;
};

int bake(Globals& g, BakeArgs& a) {
  recipes::Recipe recipe = recipes::load_recipe(a.recipe).value_or_throw();
  std::optional<recipes::Lock> lock;
  if (!a.lock.empty()) lock = recipes::load_lock(a.lock).value_or_throw();
  if (a.no_store && lock) throw Error(ErrorKind::Input, "--lock records the stored overlay; it cannot go with --no-store");
  std::string os_tag = !a.os_tag.empty() ? a.os_tag : lock && !lock->os_tag.empty() ? lock->os_tag : recipe.os;
  const bool known_version = !recipe.driver_version.empty() && !starts_with(recipe.driver_version, "sha256:");
  node_images::check_bake_options(a.opts, known_version ? recipe.driver_version : "").value_or_throw();
  auto driver = node_images::prepare_driver(recipe, a.in).value_or_throw();
  auto result = node_images::bake_node_overlay(recipe, *driver, a.opts).value_or_throw();
  std::optional<node_images::StoredOverlay> stored;
  if (!a.no_store) {
    std::string ref = a.repository + ":" + node_images::overlay_tag(driver->installer.manifest.version, os_tag);
    recipes::Reference::parse(ref).value_or_throw();
    mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive).value_or_throw();
    stored = node_images::store_overlay(store, a.opts.output, ref).value_or_throw();
    if (lock) {
      recipes::record_built(*lock, stored->built());
      write_atomic(a.lock, recipes::lock_to_json(*lock)).value_or_throw();
      log_info("updated " + a.lock);
    }
  }
  if (g.json) {
    nlohmann::json j = {{"overlay", result.overlay.string()}, {"sha256", result.overlay_sha256}, {"entries", result.files},
                        {"packages", result.packages}};
    if (stored) j["artifact"] = {{"ref", stored->ref}, {"digest", stored->digest}, {"size", stored->size}};
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!g.quiet) {
    std::printf("%s: %zu entries, sha256 %s\n", result.overlay.c_str(), result.files, result.overlay_sha256.c_str());
    if (stored) std::printf("stored as %s@%s (%s)\n", stored->ref.c_str(), stored->digest.c_str(), human_bytes(stored->size).c_str());
    std::printf("next: %s/install.sh --root IMAGE_ROOT\n", a.opts.output.c_str());
  }
  return 0;
}

int export_overlay(Globals& g, const ExportArgs& a) {
  node_images::ExportedOverlay out;
  if (!a.bundle.empty()) {
    signing::Keyring keys;
    const signing::Keyring* trusted = bundle_trust(keys, a.pubkeys, a.keyring, a.skip_signature, "node-image export --bundle");
    std::vector<std::filesystem::path> volumes(a.bundle.begin(), a.bundle.end());
    out = node_images::export_overlay_from_bundle(volumes, trusted, a.ref, a.output).value_or_throw();
  } else {
    mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Shared).value_or_throw();
    out = node_images::export_overlay_from_store(store, a.ref, a.output).value_or_throw();
  }
  if (g.json) {
    std::printf("%s\n", nlohmann::json({{"ref", out.ref}, {"digest", out.digest}, {"files", out.files}}).dump(2).c_str());
  } else if (!g.quiet) {
    std::printf("%s@%s -> %s: %s\nnext: %s/install.sh --root IMAGE_ROOT\n", out.ref.c_str(), out.digest.c_str(), a.output.c_str(),
                join(out.files, ", ").c_str(), a.output.c_str());
  }
  return 0;
}

constexpr const char* node_image_example =
    "gpubundle node-image bake site.yaml --installer NVIDIA-Linux-x86_64-580.95.05.run "
    "--kernel-build /lib/modules/6.1.0-57-amd64/build --sign-key mok.key --sign-cert mok.crt -o overlay/ --lock site.lock.json";

}  // namespace

CommandSpec node_image_command() {
  return {
      "node-image",
      "Bake a root filesystem overlay with the NVIDIA driver for node images",
      "`node-image bake` builds the kernel modules from the NVIDIA installer for every kernel of the recipe "
      "(signed for Secure Boot with --sign-key/--sign-cert) and writes a deterministic overlay.tar with modules, "
      "userspace, firmware, modprobe/modules-load/ld.so configuration and an enabled nvidia-persistenced unit, "
      "plus install.sh (run by the image pipeline with --root DIR), manifest.json (every file with its sha256), "
      "a Helm values fragment with driver.enabled=false, and packages/ (--toolkit-packages, "
      "--fabric-manager-packages). The folder is also stored in the store as an OCI artifact "
      "(localhost/gpubundle/node-overlay:<version>-<osTag>); with --lock it joins the lock, so `bundle create` "
      "carries it and `import` pushes it. `node-image export` writes the files back out, from the store or "
      "straight from a verified bundle on the air-gapped side.",
      node_image_example,
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        CLI::App* bake_cmd = app.add_subcommand("bake", "Build the overlay, install.sh, manifest.json and values fragment");
        auto b = std::make_shared<BakeArgs>();
        bake_cmd->add_option("recipe", b->recipe, "Recipe file (YAML)")->required();
        add_driver_input_options(*bake_cmd, b->in)->required();
        bake_cmd->add_option("-o,--output", b->opts.output, "Output folder")->required();
        bake_cmd->add_option("--toolkit-packages", b->opts.toolkit_packages, "Folder of nvidia-container-toolkit packages (.deb/.rpm) to ship");
        bake_cmd->add_flag("--fabric-manager", b->opts.fabric_manager, "Also enable the fabric manager (NVSwitch systems)");
        bake_cmd->add_option("--fabric-manager-packages", b->opts.fabric_manager_packages,
                             "Folder of nvidia-fabricmanager packages of the same driver version (implies --fabric-manager)");
        bake_cmd->add_option("--repository", b->repository, "Repository of the stored artifact")->capture_default_str();
        bake_cmd->add_option("--os-tag", b->os_tag, "OS tag of the artifact's tag (default: from --lock, else target.os)");
        bake_cmd->add_option("--lock", b->lock, "Lock file to update: the overlay joins it (origin \"built\") so bundles carry it");
        bake_cmd->add_flag("--no-store", b->no_store, "Write the folder only; do not store the artifact");
        bake_cmd->footer(std::string("Example:\n  ") + node_image_example);

        CLI::App* exp = app.add_subcommand("export", "Write a stored or bundled overlay back out as files");
        auto e = std::make_shared<ExportArgs>();
        exp->add_option("ref", e->ref, "Artifact reference (default: the only node overlay there is)");
        exp->add_option("-o,--output", e->output, "Output folder")->required();
        exp->add_option("--bundle", e->bundle, "Read from these bundle volumes (verified first) instead of the store");
        exp->add_option("--pubkey", e->pubkeys, "Trusted public key (repeatable), with --bundle");
        exp->add_option("--keyring", e->keyring, "Folder of trusted *.pub keys, with --bundle");
        exp->add_flag("--insecure-skip-signature", e->skip_signature, "Do not check the bundle's signature (loudly warned)");
        exp->footer("Example:\n  gpubundle node-image export -o node-overlay/");

        return [&g, b, e, bake_cmd]() -> int {
          if (bake_cmd->parsed()) return bake(g, *b);
          return export_overlay(g, *e);
        };
      },
  };
}

}  // namespace gb::cli
