// apt repository indexes (packages/apt.hpp) as a signed repository serves
// them: the first byte picks the reader. 0: a Packages list read into an
// index (libsolv's pool), then the closure of its first package; 1: a
// Release and its Packages entries; 2: a relation field; 3: two versions
// (split at the first newline) compared both ways.
#include "fuzz/fuzz_input.hpp"
#include "packages/apt.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace apt = gb::packages::apt;
  if (size == 0) return 0;
  auto body = gbfuzz::text(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      gb::recipes::PackageSource src;
      src.name = "fuzz";
      src.url = "http://127.0.0.1/debian";
      apt::Index index("amd64");
      if (!index.add_packages(body, src, "Packages") || index.packages().empty()) return 0;
      gb::packages::FetchRequest req;
      req.names = {index.packages().front().name};
      req.arch = "amd64";
      req.closure = data[0] & 4 ? gb::packages::Closure::SameSource : gb::packages::Closure::Full;
      (void)index.resolve(req, {src});
      break;
    }
    case 1: {
      auto r = apt::parse_release(body, "Release");
      if (!r) return 0;
      (void)apt::check_release(*r, "bookworm", 0, "Release");
      (void)apt::packages_file(*r, "main", "amd64", "Release");
      break;
    }
    case 2:
      (void)apt::parse_relations(body);
      break;
    default: {
      auto nl = body.find('\n');
      if (nl == std::string_view::npos) return 0;
      auto a = body.substr(0, nl), b = body.substr(nl + 1);
      if ((apt::compare_versions(a, b) < 0) != (apt::compare_versions(b, a) > 0)) std::abort();  // antisymmetric
      break;
    }
  }
  return 0;
}
