#include "builder/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "signing/keys.hpp"

namespace gb::cli {

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> all = {
      resolve_command(),
      build_command(),
      bundle_command(),
      import_command(),
      inventory_command(),
      diff_command(),
      mirror_command(),
      store_command(),
      overrides_command(),
      report_command(),
      keys_command(),
      node_image_command(),
      node_command(),
      driver_command(),
      completion_command(),
  };
  return all;
}

namespace {

std::filesystem::path default_store() {
  if (const char* env = std::getenv("GPUBUNDLE_STORE"); env && *env) return env;
  return "gpubundle-store";
}

// Lists each command on one line (its summary), as git and kubectl do; the
// paragraph stays in `gpubundle CMD --help`.
class OneLineCommands : public CLI::Formatter {
public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& d = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), d.substr(0, d.find('\n')), column_width_);
    return out.str();
  }
};

void print_failure(const std::string& message) {
  // A failure may carry several problems, one per line; a value with newlines
  // in it must not flood the terminal.
  constexpr int k_max_lines = 20;
  size_t start = 0;
  for (int printed = 0; start <= message.size(); ++printed) {
    size_t end = message.find('\n', start);
    if (printed == k_max_lines) {
      log::error("... (" + std::to_string(std::count(message.begin() + static_cast<long>(start), message.end(), '\n') + 1) +
                 " more lines)");
      break;
    }
    log::error(message.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

}  // namespace

int store_lock_wait_seconds() {
  if (const char* env = std::getenv("GPUBUNDLE_LOCK_WAIT_S"); env && *env) return std::atoi(env);
  return 10;
}

void add_platforms_option(CLI::App& app, bool& all) {
  app.add_option_function<std::string>(
         "--platforms",
         [&all](const std::string& v) {
           if (v != "all")
             throw CLI::ValidationError("--platforms", "'" + v.substr(0, 80) +
                                                           "': only 'all' is taken here; list platforms in the recipe's target.platforms");
           all = true;
         },
         "all: every platform (and attestation) of each index, so the site keeps upstream digests; default: the lock's platforms")
      ->type_name("all");
}

int run(int argc, char** argv) {
  CLI::App app{"gpubundle: make the NVIDIA GPU Operator installable on air-gapped Kubernetes sites"};
  app.footer("Exit codes: 0 ok, 1 operation failed, 2 bad usage or bad input.\nRun `gpubundle COMMAND --help` for a command's options and an example.");
  app.require_subcommand(1);
  app.formatter(std::make_shared<OneLineCommands>());  // before the subcommands, which inherit it
  app.fallthrough();  // global flags work after the subcommand too
  Globals g;
  g.store = default_store();
  app.add_option("--store", g.store, "Content store folder (default $GPUBUNDLE_STORE, else ./gpubundle-store)");
  app.add_flag("--json", g.json, "Print a machine-readable result on stdout");
  app.add_flag("-q,--quiet", g.quiet, "Print only warnings and errors");
  app.add_flag("-v,--verbose", g.verbose, "Print more detail");
  app.set_version_flag("--version", std::string("gpubundle ") + GPUBUNDLE_VERSION);

  std::function<int()> action;
  for (const auto& spec : commands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    sub->description(std::string(spec.summary) + "\n\n" + spec.description);
    sub->footer(std::string("Example:\n  ") + spec.example);
    auto act = spec.define(*sub, g);
    sub->callback([&action, act] { action = act; });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  log::set_level(g.quiet ? log::Level::Quiet : g.verbose ? log::Level::Verbose : log::Level::Normal);
  try {
    return action ? action() : 2;
  } catch (const Error& e) {
    print_failure(e.what());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    print_failure(std::string("internal error: ") + e.what());
    return 1;
  }
}

const Keyring* bundle_trust(Keyring& storage, const std::vector<std::string>& pubkeys, const std::string& keyring, bool skip_signature,
                            const std::string& command) {
  if (skip_signature) {
    log::warn("--insecure-skip-signature: the bundle's signature is NOT checked; anyone could have written it");
    return nullptr;
  }
  if (pubkeys.empty() && keyring.empty())
    throw Error(ErrorKind::Input, command + " needs --pubkey or --keyring (the keys you trust), or --insecure-skip-signature; "
                                            "a bundle never vouches for itself");
  if (!keyring.empty()) storage = Keyring::load_dir(keyring).value_or_throw();
  for (const auto& p : pubkeys) storage.add(PublicKey::load(p).value_or_throw());
  return &storage;
}

void PackageRepoSite::declare(CLI::App& app) {
  auto* u = app.add_option("--package-repo-url", url,
                           "Where the site serves the package repository of a conventional recipe with packages.sources "
                           "(http(s)://HOST[:PORT]/PATH/); the kit then has no Deployment for it");
  app.add_option("--package-repo-ca", ca_file, "CA certificate (PEM) of an https --package-repo-url, for driver.certConfig")->needs(u);
}

std::string PackageRepoSite::ca_pem() const {
  if (ca_file.empty()) return "";
  auto pem = read_file(ca_file, 1 << 20).value_or_throw();
  if (pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    throw Error(ErrorKind::Input, "--package-repo-ca " + ca_file + ": not a PEM certificate");
  return pem;
}

}  // namespace gb::cli
