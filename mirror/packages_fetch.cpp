// TEMPORARY (helper H3): fetch_packages() for apt sources, composed exactly as
// tests/tools/fetch_packages_main.cpp does, so `gpubundle build` links before
// main has the dispatcher. Drop this file when main defines fetch_packages.
#include "mirror/apt_repo.hpp"
#include "mirror/http_transport.hpp"
#include "mirror/packages.hpp"

namespace gb::packages {

Result<std::vector<Fetched>> fetch_packages(const std::vector<PackageSource>& sources, const FetchRequest& request,
                                            const FetchOptions& options) {
  for (const auto& s : sources)
    if (s.format != PackageFormat::Apt) return input_error("package source " + s.name + ": rpm-md is not wired into fetch_packages yet");
  auto transport = options.transport ? options.transport : http::curl_transport({});
  std::vector<Package> index;
  for (const auto& s : sources) {
    auto one = apt::load_index(*transport, s, request.arch);
    if (!one) return one.error();
    index.insert(index.end(), one->begin(), one->end());
  }
  auto wanted = apt::resolve(index, request, sources);
  if (!wanted) return wanted.error();
  return download(*transport, sources, *wanted, request.dest, request.jobs, options.progress);
}

}  // namespace gb::packages
