#include "builder/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
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
      serve_command(),
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
      log_error("... (" + std::to_string(std::count(message.begin() + static_cast<long>(start), message.end(), '\n') + 1) +
                 " more lines)");
      break;
    }
    log_error(message.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

// Edits between two words, a swap of neighbours counting as one ("buidl").
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The nearest of `names` to a mistyped word, "" when none is near: at most
// two edits (one for a word of four letters or fewer), or a unique prefix.
std::string nearest(const std::string& word, const std::vector<std::string>& names) {
  std::string best, prefixed;
  std::size_t best_d = word.size() <= 4 ? 2 : 3, prefixes = 0;
  for (const auto& n : names) {
    if (std::size_t e = edit_distance(word, n); e < best_d) best_d = e, best = n;
    if (word.size() >= 3 && n.rfind(word, 0) == 0) ++prefixes, prefixed = n;
  }
  return !best.empty() ? best : prefixes == 1 ? prefixed : "";
}

// The command the parse reached: `gpubundle bundle verfy` stops at bundle.
const CLI::App* deepest(const CLI::App* app) {
  for (auto subs = app->get_subcommands(); !subs.empty(); subs = app->get_subcommands()) app = subs.front();
  return app;
}

std::string command_path(const CLI::App* app) {
  std::string path;
  for (; app && app->get_parent(); app = app->get_parent()) path = app->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

// A mistyped command or option named with the nearest real one; "" when the
// parse failed for another reason, which CLI11's own message then says.
std::string unknown_argument(const CLI::App& app) {
  auto extras = app.remaining(true);
  if (extras.empty()) return "";
  const CLI::App* at = deepest(&app);
  // An unknown option first: the words after it may be its value.
  auto dashed = std::find_if(extras.begin(), extras.end(), [](const std::string& e) { return e.size() > 1 && e[0] == '-'; });
  std::string word = dashed != extras.end() ? *dashed : extras.front(), where = command_path(at);
  if (word.size() > 1 && word[0] == '-') {
    word = word.substr(0, word.find('='));
    std::vector<std::string> names;
    for (const CLI::App* a = at; a; a = a->get_parent())  // the command's options, then the global ones
      for (const CLI::Option* o : a->get_options()) {
        for (const auto& l : o->get_lnames()) names.push_back("--" + l);
        for (const auto& sn : o->get_snames()) names.push_back("-" + sn);
      }
    std::string near = nearest(word, names);
    return "unknown option '" + word + "'" + (where.empty() ? "" : " for " + where) +
           (near.empty() ? "; run gpubundle " + (where.empty() ? "" : where + " ") + "--help for the options" : "; did you mean " + near + "?");
  }
  auto subs = at->get_subcommands([](const CLI::App*) { return true; });
  if (subs.empty()) return "";  // a command that takes no more words: CLI11 says so
  std::vector<std::string> names;
  for (const CLI::App* sub : subs) names.push_back(sub->get_name());
  std::string near = nearest(word, names), prefix = where.empty() ? "" : where + " ";
  return "unknown command '" + prefix + word + "'" +
         (near.empty() ? "; run gpubundle " + prefix + "--help for the commands" : "; did you mean " + prefix + near + "?");
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
  app.footer(
      "Exit codes: 0 ok, 1 operation failed, 2 bad usage or bad input.\nRun `gpubundle COMMAND --help` for a command's options and an "
      "example; `gpubundle` alone prints this list and exits 2.");
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

  if (argc <= 1) {  // no command: what there is to run
    app.name("gpubundle");  // parse() would have taken it from argv[0]
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (std::string unknown = unknown_argument(app); !unknown.empty()) log_error(unknown);
    else app.exit(e);
    return 2;
  }

  const char* env_store = std::getenv("GPUBUNDLE_STORE");
  g.store_flag = app.count("--store") > 0;
  g.store_given = g.store_flag || (env_store && *env_store);
  set_log_level(g.quiet ? LogLevel::Quiet : g.verbose ? LogLevel::Verbose : LogLevel::Normal);
  try {
    if (g.nested_action) return g.nested_action();
    return action ? action() : 2;
  } catch (const Error& e) {
    print_failure(e.what());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    print_failure(std::string("internal error: ") + e.what());
    return 1;
  }
}

const signing::Keyring* bundle_trust(signing::Keyring& storage, const std::vector<std::string>& pubkeys, const std::string& keyring, bool skip_signature,
                            const std::string& command) {
  if (skip_signature) {
    log_warn("--insecure-skip-signature: the bundle's signature is NOT checked; anyone could have written it");
    return nullptr;
  }
  if (pubkeys.empty() && keyring.empty())
    throw Error(ErrorKind::Input, command + " needs --pubkey or --keyring (the keys you trust), or --insecure-skip-signature; "
                                            "a bundle never vouches for itself");
  if (!keyring.empty()) storage = signing::Keyring::load_dir(keyring).value_or_throw();
  for (const auto& p : pubkeys) storage.add(signing::PublicKey::load(p).value_or_throw());
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
