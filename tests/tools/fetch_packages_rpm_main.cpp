// Test driver for the rpm-md client (tests/integration/packages_rpm.sh): a
// recipe's rpm-md sources, one kernel's packages (kernel_package_names) or
// names given with --name, fetched and verified as fetch_packages() does, and
// optionally the site repository written from them.
//
//   fetch_packages_rpm RECIPE --dest DIR (--kernel KVER | --name NAME...) [--closure full|same-source]
//                      [--arch x86_64] [--site-repo DIR --site-key KEYFILE [--repo-file FILE]]
//                      [--check-rpm-signatures yes]   (each rpm's own signature, against the source's keyring)
//                      [--resolve-only yes]   (index and closure only, printed "NAME VERSION ARCH LOCATION"; bench/rpm_index.sh)
//
// Prints "NAME VERSION ARCH FILE" per package, sorted. Errors: one line on
// stderr, exit 2 for bad input, 1 for a failed operation.
//
//   fetch_packages_rpm --verify-rpm KEYRING FILE NAME VERSION ARCH
// checks one rpm's own signature and header (verify_package_signature).
//
//   fetch_packages_rpm --vercmp < PAIRS
// prints compare_versions(A, B) (-1, 0, 1) for each line "A B" of stdin, to
// hold against rpm's own (python3-rpm's labelCompare).
#include <algorithm>
#include <iostream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "net/transport.hpp"
#include "packages/packages.hpp"
#include "packages/rpm_md.hpp"
#include "recipes/recipe.hpp"
#include "signing/openpgp.hpp"
#include "packages/names.hpp"

using namespace gb;
using namespace gb::recipes;
using namespace gb::signing;

namespace {

int usage() {
  std::cerr << "usage: fetch_packages_rpm RECIPE --dest DIR (--kernel KVER | --name NAME...) [--closure full|same-source] "
               "[--arch ARCH] [--site-repo DIR --site-key KEYFILE [--repo-file FILE]]\n";
  return 2;
}

void run(int argc, char** argv) {
  std::string recipe_file, kernel, arch = "x86_64", closure = "full", check_rpms, resolve_only;
  std::filesystem::path dest, site_repo, site_key, repo_file;
  std::vector<std::string> names;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string opt = argv[i], val = argv[i + 1];
    if (opt == "--kernel") kernel = val;
    else if (opt == "--name") names.push_back(val);
    else if (opt == "--dest") dest = val;
    else if (opt == "--arch") arch = val;
    else if (opt == "--closure") closure = val;
    else if (opt == "--site-repo") site_repo = val;
    else if (opt == "--site-key") site_key = val;
    else if (opt == "--repo-file") repo_file = val;
    else if (opt == "--check-rpm-signatures") check_rpms = val;
    else if (opt == "--resolve-only") resolve_only = val;
    else throw Error(ErrorKind::Input, "unknown option " + opt);
  }
  Recipe recipe = load_recipe(argv[1]).value_or_throw();
  std::vector<PackageSource> sources;
  for (const auto& s : recipe.packages.sources)
    if (s.format == PackageFormat::RpmMd) sources.push_back(s);

  packages::FetchRequest req;
  req.names = names;
  if (!kernel.empty()) {
    auto more = packages::kernel_package_names(recipe.packages, recipe.os, kernel);
    req.names.insert(req.names.end(), more.begin(), more.end());
    req.why = "kernel " + kernel;
  } else {
    req.why = "packages";
  }
  req.arch = arch;
  req.closure = closure == "same-source" ? packages::Closure::SameSource : packages::Closure::Full;
  req.dest = dest;

  if (resolve_only == "yes") {
    auto transport = net::curl_transport({});
    packages::rpm_md::Index index(arch);
    for (const auto& s : sources) packages::rpm_md::load_index(*transport, s, index).value_or_throw();
    for (const auto& p : index.resolve(req, sources).value_or_throw())
      std::cout << p.name << " " << p.version << " " << p.arch << " " << p.location << "\n";
    return;
  }
  auto files = packages::fetch_packages(sources, req).value_or_throw();
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.package.name < b.package.name; });
  if (check_rpms == "yes")
    for (const auto& f : files)
      for (const auto& s : sources)
        if (s.name == f.package.origin) packages::rpm_md::verify_package_signature(s.keyring, f).value_or_throw();
  for (const auto& f : files)
    std::cout << f.package.name << " " << f.package.version << " " << f.package.arch << " " << f.file.string() << "\n";

  if (!site_repo.empty()) {
    auto key = std::filesystem::exists(site_key) ? openpgp::SigningKey::load(site_key).value_or_throw()
                                                 : openpgp::SigningKey::generate(site_key, "gpubundle test site <site@example.invalid>").value_or_throw();
    std::filesystem::remove_all(site_repo);  // each run writes it afresh
    packages::write_site_repo(PackageFormat::RpmMd, files, {req.arch}, key, site_repo).value_or_throw();
    if (!repo_file.empty()) {
      auto dir = std::filesystem::absolute(site_repo).string();
      write_atomic(repo_file, packages::rpm_md::repo_file("gpubundle", "file://" + dir, "file://" + dir + "/RPM-GPG-KEY-gpubundle"))
          .value_or_throw();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--vercmp") {
    std::string a, b;
    while (std::cin >> a >> b) {
      int c = packages::rpm_md::compare_versions(a, b);
      std::cout << (c < 0 ? -1 : c > 0 ? 1 : 0) << "\n";
    }
    return 0;
  }
  if (argc == 7 && std::string(argv[1]) == "--verify-rpm") {
    packages::Fetched f;
    f.file = argv[3];
    f.package.name = argv[4];
    f.package.version = argv[5];
    f.package.arch = argv[6];
    auto ok = packages::rpm_md::verify_package_signature(argv[2], f);
    if (ok) return 0;
    std::cerr << "error: " << ok.error().message << "\n";
    return exit_code(ok.error().kind);
  }
  if (argc < 2 || argc % 2 != 0) return usage();
  try {
    run(argc, argv);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return exit_code(e.kind());
  }
  return 0;
}
