// Test driver for the apt repository client.
//
//   fetch_packages_main RECIPE DEST [OPTIONS] NAME...
//       the recipe's apt sources read (apt::load_index), the closure resolved
//       (apt::Index::resolve) and every file downloaded and checked
//       (packages::download): the steps fetch_packages() takes for apt.
//       Prints "name version file" for each package, sorted by name.
//   fetch_packages_main resolve [OPTIONS] PACKAGES_FILE... -- NAME...
//       the closure of each NAME in local Packages files (plain text): a
//       "# NAME" line, then "name=version" lines, to set beside what apt
//       itself would install.
//   OPTIONS: --closure full|same-source, --arch ARCH (amd64), --why TEXT
//   fetch_packages_main --vercmp < PAIRS
//       for each "A B" line, -1, 0 or 1 as apt::compare_versions orders them
//
// An error is one line on stderr and the exit code of its kind (1 failed, 2 input).
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/files.hpp"
#include "packages/apt.hpp"
#include "packages/packages.hpp"
#include "recipes/recipe.hpp"

namespace {

using namespace gb;
using namespace gb::recipes;

struct Args {
  packages::FetchRequest request;
  std::vector<std::string> files;  // resolve: Packages files
};

// Options and names from argv[first...]; in resolve mode, files until "--".
Args parse(int argc, char** argv, int first, bool files_first) {
  Args a;
  a.request.arch = "amd64";
  bool names = !files_first;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if ((s == "--closure" || s == "--arch" || s == "--why") && i + 1 >= argc) throw Error(ErrorKind::Input, s + " needs a value");
    if (s == "--closure") {
      std::string v = argv[++i];
      if (v != "full" && v != "same-source") throw Error(ErrorKind::Input, "--closure: full or same-source");
      a.request.closure = v == "full" ? packages::Closure::Full : packages::Closure::SameSource;
    } else if (s == "--arch") {
      a.request.arch = argv[++i];
    } else if (s == "--why") {
      a.request.why = argv[++i];
    } else if (s == "--" && !names) {
      names = true;
    } else {
      (names ? a.request.names : a.files).push_back(s);
    }
  }
  return a;
}

int fetch(int argc, char** argv) {
  Recipe recipe = load_recipe(argv[1]).value_or_throw();
  Args a = parse(argc, argv, 3, false);
  a.request.dest = argv[2];
  auto fetched = packages::fetch_packages(recipe.packages.sources, a.request).value_or_throw();
  for (const auto& f : fetched)
    std::printf("%s %s %s\n", f.package.name.c_str(), f.package.version.c_str(), f.file.filename().c_str());
  return 0;
}

int resolve(int argc, char** argv) {
  Args a = parse(argc, argv, 2, true);
  PackageSource local;
  local.name = "local";
  local.url = "file://";
  packages::apt::Index index(a.request.arch);
  for (const auto& f : a.files) index.add_packages(read_file(f).value_or_throw(), local, f).value_or_throw();
  // One closure per name, each under a "# NAME" line: the index is read once.
  for (const auto& name : std::vector<std::string>(a.request.names)) {
    a.request.names = {name};
    std::printf("# %s\n", name.c_str());
    for (const auto& p : index.resolve(a.request, {local}).value_or_throw())
      std::printf("%s=%s\n", p.name.c_str(), p.version.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--vercmp") {
    std::string a, b;
    while (std::cin >> a >> b) {
      int c = packages::apt::compare_versions(a, b);
      std::cout << (c < 0 ? -1 : c > 0 ? 1 : 0) << "\n";
    }
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s RECIPE DEST [--closure full|same-source] [--arch ARCH] [--why TEXT] NAME...\n"
                 "       %s resolve [OPTIONS] PACKAGES_FILE... -- NAME...\n",
                 argv[0], argv[0]);
    return 2;
  }
  try {
    return std::string(argv[1]) == "resolve" ? resolve(argc, argv) : fetch(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
