// fetch_packages(): one entry point over both repository formats.
#include <algorithm>

#include "common/strings.hpp"
#include "packages/apt.hpp"
#include "net/transport.hpp"
#include "packages/packages.hpp"
#include "packages/rpm_md.hpp"

namespace gb::packages {

Result<std::vector<Fetched>> fetch_packages(const std::vector<recipes::PackageSource>& sources, const FetchRequest& request,
                                            const FetchOptions& options) {
  if (sources.empty()) return input_error(request.why + ": no package source to fetch " + join(request.names, ", ") + " from");
  const recipes::PackageFormat format = sources.front().format;
  for (const auto& s : sources)
    if (s.format != format)
      return input_error("package sources '" + sources.front().name + "' and '" + s.name + "' are of different types (" +
                         to_string(format) + ", " + to_string(s.format) + "); one request reads one type");
  auto transport = options.transport ? options.transport : net::curl_transport({});
  Result<std::vector<Package>> wanted = std::vector<Package>();
  if (format == recipes::PackageFormat::Apt) {
    apt::Index index(request.arch);
    for (const auto& s : sources)
      if (auto r = apt::load_index(*transport, s, index); !r) return r.error();
    wanted = index.resolve(request, sources);
  } else {
    rpm_md::Index index(request.arch);
    for (const auto& s : sources)
      if (auto r = rpm_md::load_index(*transport, s, index); !r) return r.error();
    wanted = index.resolve(request, sources);
    if (!wanted && index.needs_filelists()) {
      if (auto r = rpm_md::load_filelists(*transport, index); !r) return r.error();
      wanted = index.resolve(request, sources);
    }
  }
  if (!wanted) return wanted.error();
  return fetch_resolved(*transport, sources, std::move(*wanted), request, options);
}

Result<std::vector<Fetched>> fetch_resolved(net::Transport& transport, const std::vector<recipes::PackageSource>& sources,
                                            std::vector<Package> wanted, const FetchRequest& request, const FetchOptions& options) {
  // From the cache what it has; the rest fetched into request.dest.
  std::vector<Fetched> cached;
  std::vector<Package> missing;
  for (auto& p : wanted) {
    auto kept = options.cache ? options.cache->find(p.sha256, p.size) : std::nullopt;
    if (kept) cached.push_back({std::move(p), std::move(*kept)});
    else missing.push_back(std::move(p));
  }
  auto files = download(transport, sources, missing, request.dest, request.jobs, options.progress);
  if (!files) return files.error();
  const std::size_t fetched = files->size();
  files->insert(files->end(), std::make_move_iterator(cached.begin()), std::make_move_iterator(cached.end()));
  // Sources trusted per package: every file's own signature, cached ones too
  // (another source may have brought those bytes). A fetched file that fails
  // is removed, not kept.
  for (std::size_t i = 0; i < files->size(); ++i) {
    const Fetched& f = (*files)[i];
    for (const auto& s : sources)
      if (s.name == f.package.origin && s.package_signatures)
        if (auto ok = rpm_md::verify_package_signature(s.keyring, f); !ok) {
          std::error_code ec;
          if (i < fetched) std::filesystem::remove(f.file, ec);
          return ok.error();
        }
  }
  if (options.cache)
    for (std::size_t i = 0; i < fetched; ++i) {
      Fetched& f = (*files)[i];
      auto kept = options.cache->keep(f.file, f.package.sha256, f.package.size);
      if (!kept) return kept.error();
      std::error_code ec;
      if (*kept != f.file) std::filesystem::remove(f.file, ec);
      f.file = std::move(*kept);
    }
  std::sort(files->begin(), files->end(), [](const Fetched& a, const Fetched& b) {
    return std::tie(a.package.name, a.package.arch) < std::tie(b.package.name, b.package.arch);
  });
  return files;
}

}  // namespace gb::packages
