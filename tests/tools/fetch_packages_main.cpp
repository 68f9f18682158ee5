// Test driver for the package repository client (no gpubundle command needs it
// yet): fetch_packages() for the sources of a recipe, as the build will call it.
//
//   fetch_packages_main RECIPE DEST [--closure full|same-source] [--arch ARCH] [--why TEXT] NAME...
//
// Prints "name version file" for each package fetched, sorted by name. An
// error is one line on stderr and the exit code of its kind (1 failed, 2 input).
#include <cstdio>
#include <exception>
#include <string>

#include "common/error.hpp"
#include "mirror/packages.hpp"
#include "recipes/recipe.hpp"

int main(int argc, char** argv) {
  using namespace gb;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s RECIPE DEST [--closure full|same-source] [--arch ARCH] [--why TEXT] NAME...\n", argv[0]);
    return 2;
  }
  try {
    Recipe recipe = load_recipe(argv[1]).value_or_throw();
    packages::FetchRequest request;
    request.dest = argv[2];
    request.arch = "amd64";
    for (int i = 3; i < argc; ++i) {
      std::string a = argv[i];
      if ((a == "--closure" || a == "--arch" || a == "--why") && i + 1 >= argc) throw Error(ErrorKind::Input, a + " needs a value");
      if (a == "--closure") {
        std::string v = argv[++i];
        if (v != "full" && v != "same-source") throw Error(ErrorKind::Input, "--closure: full or same-source");
        request.closure = v == "full" ? packages::Closure::Full : packages::Closure::SameSource;
      } else if (a == "--arch") {
        request.arch = argv[++i];
      } else if (a == "--why") {
        request.why = argv[++i];
      } else {
        request.names.push_back(a);
      }
    }
    auto fetched = packages::fetch_packages(recipe.packages.sources, request).value_or_throw();
    for (const auto& f : fetched)
      std::printf("%s %s %s\n", f.package.name.c_str(), f.package.version.c_str(), f.file.filename().c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
