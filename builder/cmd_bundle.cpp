#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "builder/cli.hpp"
#include "bundles/bundle.hpp"
#include "bundles/delta.hpp"
#include "bundles/kit_files.hpp"
#include <sys/stat.h>
#include <unistd.h>
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "mirror/chart_fetch.hpp"
#include "mirror/store.hpp"
#include "recipes/chart_source.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

namespace {

signing::Passphrase passphrase(const std::string& env, const std::string& file) {
  if (!env.empty()) return signing::Passphrase::from_env(env).value_or_throw();
  if (!file.empty()) return signing::Passphrase::from_file(file).value_or_throw();
  return {};
}

int create(Globals& g, const std::string& input, const std::string& output, const std::string& key_path, const std::string& split,
           const std::string& since, const std::string& pass_env, const std::string& pass_file, bool no_compress) {
  auto [lock, lock_file] = recipes::lock_for(input).value_or_throw();
  signing::PrivateKey key = signing::PrivateKey::load(key_path, passphrase(pass_env, pass_file)).value_or_throw();
  mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Shared).value_or_throw();
  if (auto chart = store.chart_path(lock.chart.name, lock.chart.version); !std::filesystem::exists(chart))
    throw Error(input_error(lock_file.string() + ": chart " + lock.chart.name + " " + lock.chart.version + " is not in the store (" +
                            chart.string() + "): run `gpubundle mirror " + input + "` first"));
  // The chart the bundle carries, checked against the lock; the kit is made from it.
  mirror::LoadedChart chart = mirror::lock_chart(lock, lock_file, "", mirror::ChartAccess{g.store}).value_or_throw();
  bundles::CreateOptions o;
  o.output = output;
  if (!split.empty()) o.split_bytes = parse_size(split).value_or_throw();
  o.compress = !no_compress;
  if (!since.empty()) {
    o.have_blobs = bundles::blobs_site_has(since, store).value_or_throw();
    o.delta_base = std::filesystem::path(since).filename().string();
  }
  bundles::apply_source_date_epoch(o).value_or_throw();
  // The kit rides along when the lock names the site registry.
  ScratchDir scratch(std::filesystem::path(output).parent_path() / (".gpubundle-kit." + std::to_string(::getpid())));
  std::optional<mirror::LoadedChart> network_chart;
  if (lock.network) network_chart = mirror::lock_network_chart(lock, lock_file, mirror::ChartAccess{g.store}).value_or_throw();
  bundles::add_kit_files(lock, chart.chart, "", scratch.path(), o.extra, network_chart ? &network_chart->chart : nullptr).value_or_throw();
  auto progress = make_progress(g.json ? ProgressStyle::Json : g.quiet ? ProgressStyle::None : ProgressStyle::Auto);
  bundles::CreateReport r = bundles::create_bundle(store, lock, key, o, *progress).value_or_throw();
  if (g.json) {
    nlohmann::json j = {{"bundleId", r.bundle_id},       {"bytes", r.bytes_written}, {"blobs", r.blobs},
                        {"blobsOmitted", r.blobs_omitted}, {"zstdSaved", r.bytes_saved_by_zstd}, {"volumes", nlohmann::json::array()}};
    for (const auto& v : r.volumes) j["volumes"].push_back(v.string());
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    log_info("bundle " + r.bundle_id + ": " + std::to_string(r.blobs) + " blobs, " + human_bytes(r.bytes_written) + " in " +
              std::to_string(r.volumes.size()) + " volume(s)" +
              (r.blobs_omitted ? ", " + std::to_string(r.blobs_omitted) + " blobs left out (the site has them)" : "") +
              ", signed by " + key.id().substr(0, 16));
    for (const auto& v : r.volumes) log_info("  " + v.string());
  }
  return 0;
}

int verify(Globals& g, const std::vector<std::string>& files, const std::vector<std::string>& pubkeys, const std::string& keyring,
           bool skip_signature) {
  signing::Keyring keys;
  const signing::Keyring* trusted = bundle_trust(keys, pubkeys, keyring, skip_signature, "bundle verify");
  std::vector<std::filesystem::path> paths(files.begin(), files.end());
  bundles::require_volume_files(paths).value_or_throw();
  bundles::VerifyOptions o;
  o.trusted = trusted;
  bundles::VerifyReport r = bundles::verify_bundle(paths, o);
  if (g.json) {
    nlohmann::json j = {{"ok", r.problems.empty()}, {"bundleId", r.bundle_id}, {"signer", r.signer},
                        {"entries", r.entries},      {"bytes", r.bytes},        {"problems", r.problems}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  for (const auto& p : r.problems) log_error(p);
  if (!r.problems.empty()) return 1;
  log_info("bundle " + r.bundle_id + ": OK, " + std::to_string(r.entries) + " entries, " + human_bytes(r.bytes) +
            (skip_signature ? "" : ", signed by " + r.signer.substr(0, 16)));
  return 0;
}

int inspect(Globals& g, const std::string& file) {
  std::string signer;
  bundles::VolumeManifest m = bundles::read_volume_manifest(file, &signer).value_or_throw();
  recipes::Lock lock = recipes::parse_lock(m.lock_json, file + ":lock").value_or_throw();
  std::map<std::string, std::uint64_t> size_of;
  for (const auto& f : m.files)
    if (!f.blob.empty()) size_of[f.blob] += f.size;
  if (g.json) {
    nlohmann::json j = {{"bundleId", m.bundle_id}, {"created", m.created}, {"signer", signer}, {"volume", m.volume},
                        {"volumes", m.volumes},    {"delta", m.delta},     {"images", nlohmann::json::array()}};
    for (const auto& img : m.images) {
      std::uint64_t s = 0;
      for (const auto& b : img.blobs) s += size_of[b];
      j["images"].push_back({{"ref", img.ref}, {"digest", img.digest}, {"platforms", img.platforms}, {"bytes", s}});
      if (!img.upstream_digest.empty()) j["images"].back()["upstreamDigest"] = img.upstream_digest;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::uint64_t total = 0;
  for (const auto& f : m.files) total += f.size;
  std::printf("bundle %s  (volume %d of %d%s)\n", m.bundle_id.c_str(), m.volume, m.volumes, m.delta ? ", delta" : "");
  // created comes only from SOURCE_DATE_EPOCH, so that builds stay
  // reproducible; without it, the file's own time is the best there is.
  std::string created = m.created;
  if (created.empty()) {
    created = "not recorded (SOURCE_DATE_EPOCH was unset at build)";
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0) created += "; the file was written " + rfc3339_utc(st.st_mtime);
  }
  std::printf("created   %s\n", created.c_str());
  std::printf("signer    key %s (not checked here: run bundle verify)\n", signer.c_str());
  std::printf("tool      %s\n", m.tool.c_str());
  std::printf("recipe    %s: GPU Operator %s, %s driver %s, %s, GPUs %s\n", lock.recipe_name.c_str(), lock.operator_version.c_str(),
              lock.driver.mode.c_str(), lock.driver.version.empty() ? lock.driver.branch.c_str() : lock.driver.version.c_str(),
              lock.os_tag.c_str(), [&] {
                std::string s;
                for (const auto& x : lock.gpus) s += (s.empty() ? "" : ",") + x;
                return s;
              }().c_str());
  std::printf("payload   %zu files, %s\n\n", m.files.size(), human_bytes(total).c_str());
  for (const auto& img : m.images) {
    std::uint64_t s = 0;
    for (const auto& b : img.blobs) s += size_of[b];
    // A filtered index (docs/bundle-format.md) says which platforms it keeps.
    std::string filtered = img.upstream_digest.empty() ? "" : "  (" + join(img.platforms, ", ") + " of a multi-arch index)";
    std::printf("  %10s  %s%s\n", human_bytes(s).c_str(), img.ref.c_str(), filtered.c_str());
  }
  return 0;
}

}  // namespace

CommandSpec bundle_command() {
  return {
      "bundle",
      "Write, verify and inspect signed bundles",
      "`bundle create` writes the mirrored closure of a lock (images, chart, install kit) from the store into one signed "
      "bundle: a plain tar whose signed manifest comes first, so a reader checks the signature and then each blob as it "
      "streams by. The install kit is made for the lock's destination registry (the recipe's destination; "
      "`registry: http://HOST` for a plain-HTTP site), when it has one; `import` writes a kit for the registry it pushes to. "
      "--split cuts it into volumes while writing; --since leaves out what the site already has. "
      "`bundle verify` checks signature, every file, the image closure and unsafe entries; `bundle inspect` summarises.",
      "gpubundle bundle create site-a.lock.json -o site-a.bundle --key release.key && "
      "gpubundle bundle verify site-a.bundle --pubkey release.pub",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        auto chosen = std::make_shared<std::function<int()>>();
        struct CreateArgs {
          std::string input, output, key, split, since, pass_env, pass_file;
          bool no_compress = false;
        };
        auto c = std::make_shared<CreateArgs>();
        auto* cr = app.add_subcommand("create", "Write a bundle from the store");
        cr->add_option("input", c->input, "Lock file, or a recipe: its lock <recipe folder>/<metadata.name>.lock.json, as `gpubundle mirror` writes it")->required();
        cr->add_option("-o,--output", c->output, "Bundle file (volumes get .001, .002, ... with --split)")->required();
        cr->add_option("--key", c->key, "Private signing key (PEM)")->required();
        cr->add_option("--split", c->split, "Largest volume size, e.g. 4G, 700M");
        cr->add_option("--since", c->since, "Inventory, lock or bundle the site already has: ship only what is missing");
        cr->add_option("--passphrase-env", c->pass_env, "Environment variable holding the key's passphrase");
        cr->add_option("--passphrase-file", c->pass_file, "File holding the key's passphrase");
        cr->add_flag("--no-compress", c->no_compress, "Store every blob as is (no zstd for JSON and uncompressed layers)");
        cr->footer("Example:\n  gpubundle bundle create site-a.lock.json -o /media/usb/site-a.bundle --key release.key --split 4G");
        cr->callback([&g, c, chosen] {
          *chosen = [&g, c] {
            return create(g, c->input, c->output, c->key, c->split, c->since, c->pass_env, c->pass_file, c->no_compress);
          };
        });

        struct VerifyArgs {
          std::vector<std::string> files, pubkeys;
          std::string keyring;
          bool skip = false;
        };
        auto v = std::make_shared<VerifyArgs>();
        auto* vr = app.add_subcommand("verify", "Verify a bundle offline");
        vr->add_option("files", v->files, "Bundle file or volumes, in any order")->required();
        vr->add_option("--pubkey", v->pubkeys, "Trusted public key (repeatable)");
        vr->add_option("--keyring", v->keyring, "Folder of trusted *.pub keys");
        vr->add_flag("--insecure-skip-signature", v->skip, "Do not check the signature (loudly warned)");
        vr->footer("Example:\n  gpubundle bundle verify site-a.bundle.001 site-a.bundle.002 --pubkey release.pub");
        vr->callback([&g, v, chosen] { *chosen = [&g, v] { return verify(g, v->files, v->pubkeys, v->keyring, v->skip); }; });

        auto file = std::make_shared<std::string>();
        auto* in = app.add_subcommand("inspect", "Summarise a bundle: target, images, sizes, signer, creation time");
        in->add_option("file", *file, "Bundle file or any one volume")->required();
        in->footer("Example:\n  gpubundle bundle inspect site-a.bundle");
        in->callback([&g, file, chosen] { *chosen = [&g, file] { return inspect(g, *file); }; });

        return [chosen] { return (*chosen)(); };
      },
  };
}

}  // namespace gb::cli
