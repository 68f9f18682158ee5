// `gpubundle driver tool-image`: the image a build Job runs (node-images/tool_image.hpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/store.hpp"
#include "node-images/tool_image.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

namespace gb::cli {

namespace {

// The help text, as data like every command's (cli.hpp CommandSpec).
constexpr const char* k_tool_image_summary = "Build the gpubundle image that build Jobs run, into the store";
constexpr const char* k_tool_image_description =
    "Makes one OCI image (linux/amd64) of Debian packages from the recipe's apt packages.sources and this gpubundle "
    "binary (or --binary) at /usr/local/bin/gpubundle, its entrypoint: the libraries the binary needs (from its "
    "DT_NEEDED entries), the compiler each target.kernels entry's headers depend on, make, kmod, gpgv and the shell "
    "tools kbuild runs (node-images/tool-image.packages), and --with extras, each with its Depends closure. Every "
    "package is unpacked without its maintainer scripts into one deterministic layer as merged /usr; the links and "
    "files those scripts would make and the tools need are added. The build fails, naming the library, when the "
    "binary would not find one. Tagged localhost/gpubundle/gpubundle:<version>; the same packages, binary and "
    "SOURCE_DATE_EPOCH give the same digest. With --lock the lock records it as built (component toolImage), so "
    "`bundle create` carries it and `import` pushes it. --list prints the package names it starts from, for a "
    "site's partial Debian mirror. See docs/driver-artifacts.md.";
constexpr const char* k_tool_image_example = "gpubundle driver tool-image precompiled.yaml --lock precompiled.lock.json";

struct ToolImageArgs {
  std::string recipe;
  std::string lock;
  std::vector<std::string> with;
  std::string binary;
  bool list = false;
};

int tool_image(const Globals& g, const ToolImageArgs& a) {
  recipes::Recipe recipe = recipes::load_recipe(a.recipe).value_or_throw();
  std::optional<recipes::Lock> lock;
  if (!a.lock.empty()) lock = recipes::load_lock(a.lock).value_or_throw();
  node_images::ToolImageOptions o;
  if (!a.binary.empty()) o.binary = a.binary;
  o.with = a.with;
  if (a.list) {
    for (const auto& n : node_images::tool_image_names(o).value_or_throw()) std::printf("%s\n", n.c_str());
    return 0;
  }
  // The tag is the carried binary's version: ours, or what --binary says it is.
  o.version = a.binary.empty() ? std::string(GPUBUNDLE_VERSION) : node_images::gpubundle_version_of(o.binary).value_or_throw();
  mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive).value_or_throw();
  ScratchDir work(std::filesystem::temp_directory_path() / ("gpubundle-tool-image-" + std::to_string(::getpid())));
  o.work = work.path();
  auto progress = make_progress(g.quiet || g.json ? ProgressStyle::None : ProgressStyle::Auto);
  o.progress = progress.get();
  const auto start = std::chrono::steady_clock::now();
  auto img = node_images::build_tool_image(recipe, store, o).value_or_throw();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (lock) {
    // One tool image per lock: a new version replaces the old one.
    std::erase_if(lock->images, [&](const recipes::LockImage& i) { return i.built == recipes::BuiltKind::ToolImage && i.source != img.ref; });
    recipes::record_built(*lock, img.built());
    write_atomic(a.lock, recipes::lock_to_json(*lock)).value_or_throw();
    log_info("updated " + a.lock);
  }
  if (g.json) {
    nlohmann::json j = {{"ref", img.ref}, {"digest", img.digest}, {"size", img.size}, {"unpacked", img.unpacked},
                        {"packages", img.packages}, {"seconds", seconds}};
    std::printf("%s\n", j.dump().c_str());
  } else if (!g.quiet) {
    std::printf("%s@%s\n", img.ref.c_str(), img.digest.c_str());
    log_info(std::to_string(img.packages) + " packages, " + human_bytes(img.size) + " compressed (" + human_bytes(img.unpacked) +
             " unpacked), in " + std::to_string(static_cast<int>(seconds + 0.5)) + " s");
  }
  return 0;
}

}  // namespace

void add_tool_image_subcommand(CLI::App& driver, Globals& g) {
  CLI::App* sub = driver.add_subcommand("tool-image", k_tool_image_summary);
  sub->description(std::string(k_tool_image_summary) + "\n\n" + k_tool_image_description);
  sub->footer(std::string("Example:\n  ") + k_tool_image_example);
  auto a = std::make_shared<ToolImageArgs>();
  sub->add_option("recipe", a->recipe, "Recipe file (YAML) with an apt source under packages.sources")->required();
  sub->add_option("--lock", a->lock, "Lock file to update: the image joins it (origin \"built\") so bundles carry it");
  sub->add_option("--with", a->with, "Another Debian package (and its Depends) to put in; repeatable");
  sub->add_option("--binary", a->binary, "The gpubundle executable to carry (default: this one)");
  sub->add_flag("--list", a->list, "Print the package names the image starts from (before their closure and the kernels' compilers) and exit");
  // Claims the run (cli.hpp Globals::nested_action): `driver`'s own action is for its other subcommands.
  sub->callback([&g, a] { g.nested_action = [&g, a] { return tool_image(g, *a); }; });
}

}  // namespace gb::cli
