// gpubundle-node: the `node` commands alone, for GPU nodes and node images
// that have glibc and the NVIDIA driver but none of gpubundle's libraries
// (it links libstdc++, yaml-cpp and libcrypto statically; see
// builder/CMakeLists.txt). Same options and exit codes as `gpubundle node`.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "builder/cli.hpp"
#include "common/error.hpp"

int main(int argc, char** argv) {
  gb::cli::CommandSpec spec = gb::cli::node_command();
  CLI::App app{std::string("gpubundle-node: ") + spec.summary};
  app.footer(std::string(spec.description) + "\n\nExample: " + spec.example);
  gb::cli::Globals g;
  app.add_flag("--json", g.json, "Print a machine-readable result on stdout");
  app.add_flag_callback("--version", [] {
    std::printf("gpubundle-node %s\n", GPUBUNDLE_VERSION);
    throw CLI::Success();
  });
  app.fallthrough();
  std::function<int()> action = spec.define(app, g);
  try {
    app.parse(argc, argv);
    return action();
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : gb::exit_code(gb::ErrorKind::Input);
  } catch (const gb::Error& e) {
    std::fprintf(stderr, "gpubundle-node: error: %s\n", e.what());
    return gb::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubundle-node: error: %s\n", e.what());
    return 1;
  }
}
