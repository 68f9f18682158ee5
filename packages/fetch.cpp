// fetch_packages(): one entry point over both repository formats.
#include <algorithm>

#include "common/strings.hpp"
#include "packages/apt.hpp"
#include "net/transport.hpp"
#include "packages/packages.hpp"
#include "packages/rpm_md.hpp"

namespace gb::packages {

Result<std::vector<Fetched>> fetch_packages(const std::vector<PackageSource>& sources, const FetchRequest& request,
                                            const FetchOptions& options) {
  if (sources.empty()) return input_error(request.why + ": no package source to fetch " + join(request.names, ", ") + " from");
  const PackageFormat format = sources.front().format;
  for (const auto& s : sources)
    if (s.format != format)
      return input_error("package sources '" + sources.front().name + "' and '" + s.name + "' are of different types (" +
                         to_string(format) + ", " + to_string(s.format) + "); one request reads one type");
  auto transport = options.transport ? options.transport : net::curl_transport({});
  Result<std::vector<Package>> wanted = std::vector<Package>();
  if (format == PackageFormat::Apt) {
    std::vector<Package> index;
    for (const auto& s : sources) {
      auto one = apt::load_index(*transport, s, request.arch);
      if (!one) return one.error();
      index.insert(index.end(), std::make_move_iterator(one->begin()), std::make_move_iterator(one->end()));
    }
    wanted = apt::resolve(index, request, sources);
  } else {
    rpm_md::Index index(request.arch);
    for (const auto& s : sources)
      if (auto r = rpm_md::load_index(*transport, s, index); !r) return r.error();
    wanted = index.resolve(request, sources);
  }
  if (!wanted) return wanted.error();
  auto files = download(*transport, sources, *wanted, request.dest, request.jobs, options.progress);
  if (!files) return files.error();
  // Sources trusted per package: a file whose own signature fails is removed, not kept.
  for (const auto& f : *files)
    for (const auto& s : sources)
      if (s.name == f.package.origin && s.package_signatures)
        if (auto ok = rpm_md::verify_package_signature(s.keyring, f); !ok) {
          std::error_code ec;
          std::filesystem::remove(f.file, ec);
          return ok.error();
        }
  std::sort(files->begin(), files->end(), [](const Fetched& a, const Fetched& b) {
    return std::tie(a.package.name, a.package.arch) < std::tie(b.package.name, b.package.arch);
  });
  return files;
}

}  // namespace gb::packages
