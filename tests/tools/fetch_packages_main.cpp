// Test driver for the apt repository client: the recipe's apt sources read
// (apt::load_index), the closure resolved (apt::resolve) and every file
// downloaded and checked (packages::download), the steps fetch_packages()
// takes for apt sources.
//
//   fetch_packages_main RECIPE DEST [--closure full|same-source] [--arch ARCH] [--why TEXT] NAME...
//
// Prints "name version file" for each package fetched, sorted by name. An
// error is one line on stderr and the exit code of its kind (1 failed, 2 input).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "mirror/apt_repo.hpp"
#include "mirror/http_transport.hpp"
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
    const auto& sources = recipe.packages.sources;
    auto transport = http::curl_transport({});
    std::vector<packages::Package> index;
    for (const auto& s : sources) {
      auto one = packages::apt::load_index(*transport, s, request.arch).value_or_throw();
      index.insert(index.end(), one.begin(), one.end());
    }
    auto wanted = packages::apt::resolve(index, request, sources).value_or_throw();
    auto fetched = packages::download(*transport, sources, wanted, request.dest, request.jobs, nullptr).value_or_throw();
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
