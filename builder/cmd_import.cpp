#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>

#include "builder/cli.hpp"
#include "bundles/import.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

namespace {

// "site-a.bundle.002" -> "site-a-install-kit" beside it.
std::filesystem::path default_kit_dir(const std::filesystem::path& bundle) {
  std::string name = bundle.filename().string();
  name = std::regex_replace(name, std::regex("\\.[0-9]{3}$"), "");
  name = std::regex_replace(name, std::regex("\\.(bundle|tar)$"), "");
  return bundle.parent_path() / (name + "-install-kit");
}

struct ImportArgs {
  std::vector<std::string> bundles, pubkeys;
  std::string registry, serve, keyring, registry_config, layout = "strip-host", out;
  int jobs = 8;
  bool skip_signature = false;
  bool no_kit = false;
  bool check_blobs = false;
  PackageRepoSite repo_site;
};

int run_import(Globals& g, const ImportArgs& a) {
  bundles::ImportOptions o;
  if (a.registry.empty() == a.serve.empty()) throw Error(ErrorKind::Input, "import needs --registry or --serve (one of them)");
  o.serve = !a.serve.empty();
  o.site = kit::SiteRegistry::parse(o.serve ? a.serve : a.registry).value_or_throw();
  o.layout = kit::parse_layout(a.layout).value_or_throw();
  o.jobs = std::max(1, a.jobs);
  o.check_blobs = a.check_blobs;
  o.package_repo_url = a.repo_site.url;
  o.package_repo_ca = a.repo_site.ca_pem();
  if (!a.registry_config.empty()) o.config = mirror::RegistryConfig::load(a.registry_config).value_or_throw();
  signing::Keyring keys;
  o.trusted = bundle_trust(keys, a.pubkeys, a.keyring, a.skip_signature, "import");
  std::vector<std::filesystem::path> volumes(a.bundles.begin(), a.bundles.end());
  if (!a.no_kit) o.kit_dir = a.out.empty() ? default_kit_dir(volumes.front()) : std::filesystem::path(a.out);
  auto progress = make_progress(g.json ? ProgressStyle::Json : g.quiet ? ProgressStyle::None : ProgressStyle::Auto);
  bundles::ImportReport r = bundles::import_bundle(volumes, o, *progress).value_or_throw();
  if (g.json) {
    nlohmann::json j = {{"bundleId", r.bundle_id},           {"images", r.destinations},
                        {"blobsPushed", r.blobs_pushed},     {"blobsMounted", r.blobs_mounted},
                        {"blobsPresent", r.blobs_present},   {"manifestsPushed", r.manifests_pushed},
                        {"manifestsPresent", r.manifests_present}, {"bytesPushed", r.bytes_pushed},
                        {"bytesHashed", r.bytes_hashed},
                        {"kit", o.kit_dir.string()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (o.serve) {
    log_info("verified bundle " + r.bundle_id + " (" + std::to_string(r.images) + " images, every blob hashed); nothing pushed: " +
             o.site.str() + " serves it with `gpubundle serve` (docs/serve.md)");
    if (!o.kit_dir.empty())
      log_info("install kit: " + o.kit_dir.string() + " (serve/gpubundle-serve.service runs serve on that host)");
    return 0;
  }
  log_info("imported bundle " + r.bundle_id + " into " + o.site.str() + ": " + std::to_string(r.images) + " images, " +
            std::to_string(r.blobs_pushed) + " blobs pushed (" + human_bytes(r.bytes_pushed) + "), " +
            std::to_string(r.blobs_mounted) + " mounted, " + std::to_string(r.blobs_present) + " already there, " +
            std::to_string(r.manifests_pushed) + " manifests pushed");
  if (!o.kit_dir.empty()) {
    log_info("install kit: " + o.kit_dir.string());
    log_info("next: review " + (o.kit_dir / "values.yaml").string() + ", copy the containerd or CRI-O mirror config to the nodes, then run " +
              (o.kit_dir / "install.sh").string() + " --dry-run and " + (o.kit_dir / "install.sh").string());
  }
  return 0;
}

}  // namespace

CommandSpec import_command() {
  return {
      "import",
      "Verify a bundle and push it into the site registry, and write the install kit",
      "Verifies the bundle offline against the keys you trust (signature, every entry's header, the image manifests), "
      "then hashes every blob the registry lacks and pushes it straight from the bundle file (nothing is pushed if any "
      "check fails; a blob the registry already has is not read), mounts blobs across repositories, and pushes manifests with "
      "their exact digests and tags. Images land at <registry>/<prefix>/<source path without its host> (--layout "
      "keep-host keeps the host). Importing the same bundle again pushes nothing. Then writes the install kit for that "
      "registry next to the bundle (or to -o DIR). Registry quirks (Harbor projects, Quay nesting, Zot media types): docs/site-registries.md.",
      "gpubundle import site-a.bundle --registry registry.site.internal:5000/gpu --pubkey release.pub",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<ImportArgs>();
        app.add_option("bundles", a->bundles, "Bundle file or all its volumes")->required();
        auto* reg = app.add_option("--registry", a->registry, "Site registry HOST[:PORT][/PREFIX]; http://HOST... for plain HTTP");
        app.add_option("--serve", a->serve,
                       "No site registry: `gpubundle serve` will serve this bundle at HOST[:PORT][/PREFIX] (http://... for plain HTTP). "
                       "Verifies every blob, pushes nothing, and writes the kit for that host with serve's systemd unit")
            ->excludes(reg);
        app.add_option("--pubkey", a->pubkeys, "Trusted public key (repeatable)");
        app.add_option("--keyring", a->keyring, "Folder of trusted *.pub keys");
        app.add_option("--registry-config", a->registry_config, "Per-host TLS and credentials (docs/registries.md); the site host's plainHttp or caFile shapes the kit's node config too");
        app.add_option("--layout", a->layout, "strip-host (default) or keep-host");
        app.add_option("-j,--jobs", a->jobs, "Parallel blob uploads (default 8)");
        app.add_option("-o,--output", a->out, "Install kit folder (default: beside the bundle)");
        app.add_flag("--no-kit", a->no_kit, "Do not write the install kit");
        a->repo_site.declare(app);
        app.add_flag("--check-blobs", a->check_blobs, "Ask about every blob, even of images the site has whole (repairs a registry that lost blobs)");
        app.add_flag("--insecure-skip-signature", a->skip_signature, "Import without checking the signature (loudly warned)");
        return [&g, a] { return run_import(g, *a); };
      },
  };
}

}  // namespace gb::cli
