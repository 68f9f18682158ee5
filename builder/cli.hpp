#pragma once
// The command line. Each subcommand lives in its own cmd_<name>.cpp with its
// help text kept as data (a CommandSpec); cli.cpp wires them into CLI11 and
// holds the single catch that maps errors to exit codes:
//   0 ok, 1 operation failed, 2 bad usage or bad input.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}
namespace gb::signing {
class Keyring;
}

namespace gb::cli {

struct Globals {
  std::filesystem::path store;
  bool store_flag = false;   // --store on the command line
  bool store_given = false;  // --store or $GPUBUNDLE_STORE, not the default ./gpubundle-store
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  // Set while parsing by a nested subcommand that lives in a file of its own
  // (`driver tool-image`): run instead of its parent command's action.
  std::function<int()> nested_action;
};

struct CommandSpec {
  const char* name;
  const char* summary;
  const char* description;  // a few sentences for --help
  const char* example;      // shown in --help and docs/cli.md
  // Declares the subcommand's options; returns the action run after parsing.
  std::function<std::function<int()>(CLI::App&, Globals&)> define;
};

const std::vector<CommandSpec>& commands();

// Defined in each cmd_*.cpp.
CommandSpec resolve_command();
CommandSpec build_command();
CommandSpec bundle_command();
CommandSpec import_command();
CommandSpec inventory_command();
CommandSpec diff_command();
CommandSpec mirror_command();
CommandSpec store_command();
CommandSpec overrides_command();
CommandSpec report_command();
CommandSpec keys_command();
CommandSpec node_image_command();
CommandSpec node_command();
CommandSpec driver_command();
CommandSpec serve_command();
CommandSpec completion_command();

// `driver tool-image` (cmd_driver_tool_image.cpp), added by driver_command()
// to its `driver` app; it claims the run through g.nested_action.
void add_tool_image_subcommand(CLI::App& driver, Globals& g);

int run(int argc, char** argv);

// Seconds to wait for another process's lock on the store: GPUBUNDLE_LOCK_WAIT_S, default 10.
int store_lock_wait_seconds();

// --platforms all (mirror, build): carry every child of every index, so the
// site keeps upstream digests; any other word is a usage error.
void add_platforms_option(CLI::App& app, bool& all);

// The keys a bundle reader trusts (--pubkey files plus a --keyring folder),
// loaded into `storage`; nullptr with --insecure-skip-signature (warned).
// Neither given is a usage error naming `command`.
const signing::Keyring* bundle_trust(signing::Keyring& storage, const std::vector<std::string>& pubkeys, const std::string& keyring, bool skip_signature,
                            const std::string& command);

// --package-repo-url and --package-repo-ca (overrides, import): the site
// serves the package repository from a server of its own (docs/package-repos.md).
struct PackageRepoSite {
  std::string url, ca_file;
  void declare(CLI::App& app);
  // The CA's PEM, "" without --package-repo-ca.
  std::string ca_pem() const;
};

// --push/--to REGISTRY[/PREFIX] with --layout and --registry-config (store
// push, driver build --push): stored images into a registry under the names a
// site registry with that prefix gets (bundles/store_push.hpp).
struct Pushed {
  std::string source, pushed, digest;
};
struct PushTarget {
  std::string registry, layout = "strip-host", registry_config;
  CLI::Option* declare(CLI::App& app, const std::string& flag, const std::string& help);
  bool given() const { return !registry.empty(); }
  std::vector<Pushed> push(const Globals& g, const std::vector<std::string>& refs) const;
};

}  // namespace gb::cli
