#include <CLI/CLI.hpp>
#include <cstdio>

#include "builder/cli.hpp"
#include "bundles/closure.hpp"
#include "common/files.hpp"
#include "mirror/store.hpp"
#include "recipes/lock_diff.hpp"

namespace gb::cli {

namespace {

struct DiffArgs {
  std::string old_lock, new_lock, store_dir;
  bool exit_code = false;
};

// Blobs of a lock image as the store holds it: only at the lock's own digest
// (a lock never mirrored has none, so its images stay unknown).
recipes::ImageBlobs store_blobs(const mirror::Store& store) {
  return [&store](const recipes::LockImage& image) -> std::optional<std::map<std::string, std::uint64_t>> {
    if (image.digest.empty()) return std::nullopt;
    auto stored = store.find_image(image.source);
    if (!stored || stored->digest != image.digest) return std::nullopt;
    std::map<std::string, bundles::ClosureBlob> blobs;
    if (!bundles::image_closure(store, image.source, stored->digest, stored->media_type, blobs)) return std::nullopt;
    std::map<std::string, std::uint64_t> sizes;
    for (const auto& [digest, blob] : blobs) sizes[digest] = blob.size;
    return sizes;
  };
}

int run_diff(Globals& g, const DiffArgs& a) {
  recipes::Lock old_lock = recipes::load_lock(a.old_lock).value_or_throw();
  recipes::Lock new_lock = recipes::load_lock(a.new_lock).value_or_throw();
  // The store sizes the images: diff's --store, else the global one (--store,
  // $GPUBUNDLE_STORE), else ./gpubundle-store when there is one.
  std::string store_dir = a.store_dir.empty() ? g.store.string() : a.store_dir;
  bool named = !a.store_dir.empty() || g.store_given;
  std::optional<mirror::Store> store;
  if (std::filesystem::is_regular_file(std::filesystem::path(store_dir) / "index.json"))
    store = mirror::Store::open(store_dir, mirror::StoreAccess::Read).value_or_throw();
  else if (named)
    throw Error(ErrorKind::Input, (a.store_dir.empty() && !g.store_flag ? "$GPUBUNDLE_STORE " : "--store ") + store_dir +
                                      ": not a gpubundle store (no index.json)");
  recipes::LockDiff d = recipes::diff_locks(old_lock, new_lock, store ? store_blobs(*store) : recipes::ImageBlobs{}, store ? "store " + store_dir : "");
  d.old_file = a.old_lock;
  d.new_file = a.new_lock;
  std::string text = g.json ? recipes::lock_diff_json(d, old_lock, new_lock) : recipes::lock_diff_text(d, old_lock, new_lock);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return a.exit_code && d.differs() ? 1 : 0;
}

}  // namespace

CommandSpec diff_command() {
  return {
      "diff",
      "Show what changes between two locks: versions, driver, images, bytes to ship",
      "For review before an upgrade: the operator and chart version, the driver (version, branch, mode, kernel module "
      "type, precompiled), GPUs, OS, kernels and platforms, each component's images, images added, removed or changed "
      "(same repository, new tag or digest), and the bytes a site must receive: the blobs of the new and changed "
      "images that the old lock's images do not already have. Sizes come only from a store that holds the images at "
      "the locks' digests (--store, before or after diff, or $GPUBUNDLE_STORE, or ./gpubundle-store when it is one, after "
      "`gpubundle mirror`); otherwise they are reported as unknown. Prints text in "
      "a stable order, or JSON with --json (schema in recipes/lock_diff.hpp and docs/lock.md). Exits 0 whether or not "
      "the locks differ; with --exit-code, 1 when they differ, as `git diff --exit-code`.",
      "gpubundle diff site-a.lock.json site-a-next.lock.json --store gpubundle-store",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        auto a = std::make_shared<DiffArgs>();
        app.add_option("old", a->old_lock, "The lock the site runs now")->required();
        app.add_option("new", a->new_lock, "The lock to upgrade to")->required();
        app.add_option("--store", a->store_dir, "Size the images from this store (the bytes to ship); default: the global --store when it is a store, else unknown");
        app.add_flag("--exit-code", a->exit_code, "Exit 1 when the locks differ (0 when they do not)");
        return [&g, a] { return run_diff(g, *a); };
      },
  };
}

}  // namespace gb::cli
