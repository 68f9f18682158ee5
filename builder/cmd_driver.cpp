#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/cli.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "kit/driver_jobs.hpp"
#include "kit/kit.hpp"
#include "mirror/mirror.hpp"
#include "mirror/store.hpp"
#include "node-images/driver_image.hpp"
#include "node-images/driver_plan.hpp"
#include "node-images/kernel_packages.hpp"
#include "recipes/chart_source.hpp"
#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"
#include "recipes/reference.hpp"

namespace gb::cli {

CLI::Option* add_driver_input_options(CLI::App& app, node_images::DriverInputs& in);  // cmd_node_image.cpp

namespace {

struct BuildArgs {
  std::string recipe;
  node_images::DriverInputs in;
  node_images::DriverImageOptions image;
  std::string lock;
  std::vector<std::string> kernels;  // --kernel
  PushTarget push;
  std::string plan;  // --plan
  int entry = -1;    // --entry
  std::string result;
};

struct PlanArgs {
  std::string input;
  std::string format = "text";
  node_images::DriverPlan plan;
  kit::DriverJobOptions job;
  std::string registry_secret_file;  // --registry-config, as the jobs get it
};

// The driver repository and OS tag the lock's precompiled tags use.
void take_from_lock(const recipes::Lock& lock, BuildArgs& a, bool repo_given, bool os_given) {
  if (!os_given && !lock.os_tag.empty()) a.image.os_tag = lock.os_tag;
  if (repo_given) return;
  for (const auto& img : lock.images)
    if (std::find(img.components.begin(), img.components.end(), "driver") != img.components.end()) {
      a.image.repository = recipes::Reference::parse(img.source).value_or_throw().name();
      return;
    }
}

// --plan FILE --entry N: the entry's arguments, where the command line left them out.
void take_from_plan(BuildArgs& a, bool repo_given, bool os_given) {
  auto text = read_file(a.plan).value_or_throw();
  node_images::DriverPlan plan = node_images::parse_plan(text, a.plan).value_or_throw();
  if (a.entry < 0 || static_cast<std::size_t>(a.entry) >= plan.entries.size())
    throw Error(ErrorKind::Input, a.plan + ": --entry " + std::to_string(a.entry) + " is not an entry (0 to " +
                                      std::to_string(plan.entries.size() - 1) + ")");
  if (!a.kernels.empty()) throw Error(ErrorKind::Input, "--kernel does not go with --plan: the entry names its kernel");
  const node_images::DriverPlanEntry& e = plan.entries[static_cast<std::size_t>(a.entry)];
  auto fill = [](auto& field, const auto& value) {
    if (field.empty()) field = value;
  };
  fill(a.recipe, plan.recipe);
  fill(a.in.installer, plan.installer);
  fill(a.in.sign_key, plan.sign_key);
  fill(a.in.sign_cert, plan.sign_cert);
  fill(a.image.base, plan.base);
  fill(a.push.registry, plan.push);
  fill(a.push.registry_config, plan.registry_config);
  if (a.push.layout == "strip-host") a.push.layout = plan.layout;
  if (!repo_given) a.image.repository = e.repository;
  if (!os_given) a.image.os_tag = e.os_tag;
  a.kernels = {e.kernel};
}

// The result file: "-" is stdout; a file we may write but not replace (a
// device or pipe, or a pod's /dev/termination-log in a folder we cannot
// write) is written in place; any other atomically.
void write_result(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return;
  }
  struct stat st{};
  std::string dir = std::filesystem::path(path).parent_path().string();
  bool in_place = ::stat(path.c_str(), &st) == 0 &&
                  (!S_ISREG(st.st_mode) || (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0 && ::access(path.c_str(), W_OK) == 0));
  if (in_place) {
    FILE* f = std::fopen(path.c_str(), "w");
    bool ok = f && std::fputs(text.c_str(), f) >= 0;
    if (f) ok = std::fclose(f) == 0 && ok;
    if (!ok) throw Error(ErrorKind::Failed, "--result " + path + ": cannot write");
    return;
  }
  write_atomic(path, text).value_or_throw();
}

// The base image, pulled into the store when it is not there (a matrix
// entry starts with an empty store).
void ensure_base(mirror::Store& store, const std::string& base_ref, const std::string& registry_config, Progress& progress) {
  if (starts_with(base_ref, "oci:") || store.find_image(base_ref)) return;
  mirror::RegistryConfig config;
  if (!registry_config.empty()) config = mirror::RegistryConfig::load(registry_config).value_or_throw();
  auto source = mirror::registry_source(config, {});
  log_info("base image " + base_ref + " is not in the store: pulling it");
  auto r = mirror::mirror_one(store, *source, base_ref, "", {"linux/amd64"}, progress);
  if (!r) throw Error(r.error().kind, "base image " + base_ref + ": " + r.error().message);
}

int run_build(const Globals& g, BuildArgs& a, bool repo_given, bool os_given) {
  if (!a.plan.empty()) take_from_plan(a, repo_given, os_given);
  else if (a.entry >= 0) throw Error(ErrorKind::Input, "--entry needs --plan");
  if (a.recipe.empty()) throw Error(ErrorKind::Input, "driver build needs the recipe (or --plan with --entry)");
  if (a.in.installer.empty()) throw Error(ErrorKind::Input, "driver build needs --installer (or --plan with --entry)");
  if (!a.result.empty() && !a.push.given())
    throw Error(ErrorKind::Input, "--result records where --push put the images: give --push REGISTRY[/PREFIX]");
  recipes::Recipe recipe = recipes::load_recipe(a.recipe).value_or_throw();
  std::optional<recipes::Lock> lock;
  if (!a.lock.empty()) {
    lock = recipes::load_lock(a.lock).value_or_throw();
    take_from_lock(*lock, a, repo_given, os_given);
  }
  if (a.image.os_tag.empty()) a.image.os_tag = recipe.os;
  if (!a.kernels.empty()) {
    if (!a.in.kernel_builds.empty() || !a.in.kernel_headers.empty())
      throw Error(ErrorKind::Input, "--kernel fetches the headers from packages.sources; it does not go with "
                                    "--kernel-build or --kernel-headers");
    if (recipe.packages.sources.empty())
      throw Error(ErrorKind::Input, recipe.where("packages.sources") + "--kernel " + a.kernels.front() +
                                        ": the recipe lists no packages.sources to fetch its headers from");
    for (const auto& k : a.kernels)
      if (std::find(recipe.kernels.begin(), recipe.kernels.end(), k) == recipe.kernels.end())
        throw Error(ErrorKind::Input, recipe.where("target.kernels") + "--kernel " + k + " is not in target.kernels (" +
                                          join(recipe.kernels, ", ") + ")");
    recipe.kernels = a.kernels;
  }
  std::vector<node_images::BuiltDriverImage> images;
  {
    // A failed build leaves the store as it was, but for fetched headers (a cache).
    mirror::Store store = mirror::Store::open(g.store, mirror::StoreAccess::Exclusive).value_or_throw();
    ScratchDir work(std::filesystem::temp_directory_path() / ("gpubundle-headers-" + std::to_string(::getpid())));
    auto progress = make_progress(g.quiet || g.json ? ProgressStyle::None : ProgressStyle::Auto);
    node_images::add_fetched_headers(recipe, recipe.kernels, store, work.path(), a.in, progress.get()).value_or_throw();
    auto driver = node_images::prepare_driver(recipe, a.in).value_or_throw();
    ensure_base(store, a.image.base.empty() ? a.image.repository + ":" + driver->installer.manifest.version + "-" + a.image.os_tag : a.image.base,
                a.push.registry_config, *progress);
    images = node_images::build_driver_images(*driver, store, a.image).value_or_throw();
  }
  if (lock) {
    for (const auto& img : images) record_built(*lock, img.built());
    write_atomic(a.lock, recipes::lock_to_json(*lock)).value_or_throw();
    log_info("updated " + a.lock);
  }
  std::vector<Pushed> pushed;
  if (a.push.given()) {
    std::vector<std::string> refs;
    for (const auto& img : images) refs.push_back(img.ref);
    pushed = a.push.push(g, refs);
  }
  std::string results;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto& img = images[i];
    if (i < pushed.size()) {
      if (pushed[i].digest != img.digest)
        throw Error(ErrorKind::Failed, pushed[i].pushed + ": pushed as " + pushed[i].digest + ", built as " + img.digest);
      results += node_images::result_to_json({img.ref, pushed[i].pushed, img.digest, img.kernel, img.platform}) + "\n";
    }
    if (g.json)
      std::printf("{\"kernel\":\"%s\",\"ref\":\"%s\",\"digest\":\"%s\"%s}\n", img.kernel.c_str(), img.ref.c_str(), img.digest.c_str(),
                  i < pushed.size() ? (",\"pushed\":\"" + pushed[i].pushed + "\"").c_str() : "");
    else if (!g.quiet)
      std::printf("%s@%s\n", (i < pushed.size() ? pushed[i].pushed : img.ref).c_str(), img.digest.c_str());
  }
  if (!a.result.empty()) write_result(a.result, results);
  return 0;
}

// The plan's file paths as the pods see them (kit/driver_jobs.hpp): inputs
// relative to /inputs, keys and registry config from their Secrets.
void paths_for_pods(node_images::DriverPlan& p) {
  for (const std::string* f : {&p.recipe, &p.installer})
    if (std::filesystem::path(*f).is_absolute())
      throw Error(ErrorKind::Input, *f + ": the jobs read the recipe and installer from the inputs volume; give paths relative to it");
  auto in_dir = [](std::string& f, const char* dir) {
    if (!f.empty()) f = std::string(dir) + "/" + std::filesystem::path(f).filename().string();
  };
  in_dir(p.sign_key, kit::k_job_keys_dir);
  in_dir(p.sign_cert, kit::k_job_keys_dir);
  in_dir(p.registry_config, kit::k_job_registry_dir);
  node_images::set_entry_args(p);
}

int run_plan(const Globals& g, PlanArgs& a) {
  recipes::RecipeOrLock in = recipes::read_recipe_or_lock(a.input).value_or_throw();
  recipes::Lock lock;
  if (in.lock) {
    lock = std::move(*in.lock);
    if (a.plan.recipe.empty()) a.plan.recipe = lock.recipe_file;
  } else {
    lock = recipes::lock_for(a.input).value_or_throw().lock;
    if (a.plan.recipe.empty()) a.plan.recipe = a.input;
  }
  if (a.format != "text" && a.format != "json" && a.format != "k8s-job" && a.format != "argo")
    throw Error(ErrorKind::Input, "--format " + quote(a.format) + ": text, json, k8s-job or argo");
  if (a.plan.push.empty()) throw Error(ErrorKind::Input, "driver plan needs --push REGISTRY[/PREFIX]: the entries push their images there");
  if (g.json && a.format == "text") a.format = "json";
  node_images::DriverPlan plan = node_images::plan_driver_builds(lock, a.plan).value_or_throw();
  if (a.format == "text") {
    for (const auto& e : plan.entries) std::printf("%zu  %s  %s -> %s\n", e.index, e.kernel.c_str(), e.image.c_str(), e.pushed.c_str());
    return 0;
  }
  if (a.format == "json") {
    std::fputs(node_images::plan_to_json(plan).c_str(), stdout);
    return 0;
  }
  if ((plan.sign_key.empty() != plan.sign_cert.empty()))
    throw Error(ErrorKind::Input, "--sign-key and --sign-cert go together");
  if (!plan.sign_key.empty() && a.job.sign_secret.empty())
    throw Error(ErrorKind::Input, "--sign-key: name the Secret that holds the key and certificate with --sign-secret");
  if (!plan.registry_config.empty() && a.job.registry_secret.empty())
    throw Error(ErrorKind::Input, "--registry-config: name the Secret that holds it with --registry-secret");
  paths_for_pods(plan);
  a.job.entries = plan.entries.size();
  a.job.plan_json = node_images::plan_to_json(plan);
  if (a.job.image.empty()) {
    auto site = kit::SiteRegistry::parse(plan.push).value_or_throw();
    auto tool = recipes::Reference::parse(std::string("localhost/gpubundle/gpubundle:") + GPUBUNDLE_VERSION).value_or_throw();
    a.job.image = kit::site_reference(tool, site, kit::parse_layout(plan.layout).value_or_throw()).str();
  }
  for (const std::string* name : {&a.job.name, &a.job.inputs_claim, &a.job.sign_secret, &a.job.registry_secret, &a.job.name_space})
    if (!name->empty() && (!recipes::is_recipe_name(*name) || name->size() > 52))
      throw Error(ErrorKind::Input, quote(*name) + " is not a Kubernetes object name (lower-case letters, digits, '-', '.'; at most 52)");
  if (auto img = recipes::Reference::parse(a.job.image); !img) throw Error(ErrorKind::Input, "--image: " + img.error().message);
  std::fputs((a.format == "k8s-job" ? kit::driver_build_job(a.job) : kit::driver_build_workflow(a.job)).c_str(), stdout);
  return 0;
}

}  // namespace

CommandSpec driver_command() {
  return {
      "driver",
      "Build precompiled driver images (one per kernel), alone or as a matrix of jobs",
      "`driver build` builds the NVIDIA kernel modules from the installer for every kernel of the recipe, signs "
      "them for Secure Boot with --sign-key/--sign-cert, and writes one image per kernel into the store: the "
      "conventional driver image of the lock (or --base, pulled when the store lacks it) plus one deterministic "
      "layer with the modules and depmod output, userspace, firmware in /opt/lib/firmware and gpubundle's "
      "nvidia-driver entrypoint. Tags are <branch>-<kernel>-<osTag>, as the operator with usePrecompiled=true looks "
      "them up. With --lock, the lock records them as built here, with their digests. With --push, the images go "
      "to a registry under the names the operator composes and --result writes one result line each. `driver "
      "plan` writes the build matrix of a lock, one entry per kernel, as text, JSON for a CI matrix, a Kubernetes "
      "Indexed Job or an Argo Workflow; `gpubundle build --driver-results` assembles the bundle (docs/scale.md).",
      "gpubundle driver build precompiled.yaml --installer NVIDIA-Linux-x86_64-580.95.05.run --kernel-build "
      "/lib/modules/6.1.0-57-amd64/build --lock precompiled.lock.json",
      [](CLI::App& app, Globals& g) -> std::function<int()> {
        app.require_subcommand(1);
        // Each subcommand claims the run (cli.hpp Globals::nested_action), as `driver tool-image` does.
        CLI::App* build = app.add_subcommand("build", "Build and store the precompiled driver images");
        auto a = std::make_shared<BuildArgs>();
        build->add_option("recipe", a->recipe, "Recipe file (YAML); from the plan with --plan");
        add_driver_input_options(*build, a->in);
        build->add_option("--base", a->image.base, "Base image: a reference (pulled into the store when absent), or oci:DIR:TAG");
        auto* repo = build->add_option("--repository", a->image.repository, "Driver repository (default: from --lock, else nvcr.io/nvidia/driver)");
        auto* os = build->add_option("--os-tag", a->image.os_tag, "OS tag of the image tags (default: from --lock, else target.os)");
        build->add_option("--kernel", a->kernels,
                          "Build for this target.kernels entry only, its headers fetched from packages.sources; repeatable");
        build->add_option("--lock", a->lock, "Lock file to update: the images become origin \"built\" with their digests");
        a->push.declare(*build, "--push", "Push the images to this registry host[:port][/prefix] (as `store push`)");
        build->add_option("--plan", a->plan, "Build one entry of this plan (`driver plan --format json`)");
        build->add_option("--entry", a->entry, "The plan entry to build (0-based)");
        build->add_option("--result", a->result, "Write a result line per pushed image here (\"-\": stdout) for build --driver-results");

        CLI::App* plan = app.add_subcommand("plan", "Write the build matrix: one entry per kernel");
        auto p = std::make_shared<PlanArgs>();
        plan->callback([&g, p] { g.nested_action = [&g, p] { return run_plan(g, *p); }; });
        plan->add_option("input", p->input, "Recipe (its lock must exist) or lock")->required();
        plan->add_option("--format", p->format, "text (default), json (for CI matrices), k8s-job (Indexed Job) or argo (Workflow)");
        plan->add_option("--push", p->plan.push, "Registry host[:port][/prefix] the entries push to")->required();
        plan->add_option("--layout", p->plan.layout, "strip-host (default) or keep-host");
        plan->add_option("--recipe", p->plan.recipe, "The recipe as the jobs see it (default: as given, or the lock's recipe file)");
        plan->add_option("--installer", p->plan.installer, "The installer as the jobs see it (default: NVIDIA-Linux-x86_64-<version>.run)");
        plan->add_option("--base", p->plan.base, "Base image of the driver images (default: the lock's conventional driver image)");
        plan->add_option("--sign-key", p->plan.sign_key, "Module signing key as the jobs see it");
        plan->add_option("--sign-cert", p->plan.sign_cert, "Module signing certificate as the jobs see it");
        plan->add_option("--registry-config", p->plan.registry_config, "Registry config as the jobs see it (base image, push)");
        plan->add_option("--image", p->job.image, "The gpubundle image the pods run (default: <push>/gpubundle/gpubundle:<version>)");
        plan->add_option("--name", p->job.name, "Job or Workflow name (default gpubundle-drivers)");
        plan->add_option("--namespace", p->job.name_space, "Namespace of the documents");
        plan->add_option("--parallelism", p->job.parallelism, "Entries at once (default: all)");
        plan->add_option("--inputs-claim", p->job.inputs_claim, "PersistentVolumeClaim with the recipe, installer and keyrings (default gpubundle-inputs)");
        plan->add_option("--sign-secret", p->job.sign_secret, "Secret with the --sign-key and --sign-cert files");
        plan->add_option("--registry-secret", p->job.registry_secret, "Secret with the --registry-config file and what it names");
        plan->add_option("--cpu", p->job.cpu, "CPU request per pod (default 2)");
        plan->add_option("--memory", p->job.memory, "Memory request per pod (default 4Gi)");
        plan->footer("Example:\n  gpubundle driver plan precompiled.lock.json --installer NVIDIA-Linux-x86_64-580.95.05.run --push registry.site.internal:5000/drivers --format json");
        add_tool_image_subcommand(app, g);
        build->callback([&g, a, repo, os] {
          g.nested_action = [&g, a, given_repo = repo->count() > 0, given_os = os->count() > 0] {
            return run_build(g, *a, given_repo, given_os);
          };
        });
        return {};
      },
  };
}

}  // namespace gb::cli
