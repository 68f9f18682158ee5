// rpm-md primary.xml (mirror/rpm_repo.hpp): read from a package mirror, after
// its checksum matched the signed repomd.xml; the reader must still never
// trust it. Every package that parses must parse again alone from its
// verbatim entry (the closure does that), and the version order must be
// antisymmetric on what the document holds.
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "mirror/rpm_repo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gb::packages;
  gb::PackageSource source;
  source.name = "fuzz";
  source.format = gb::PackageFormat::RpmMd;
  source.url = "http://fuzz.invalid";
  auto index = rpm_md::parse_primary(gbfuzz::text(data, size), source, source.url, "fuzz/primary.xml");
  if (!index || index->empty()) return 0;
  for (const auto& a : *index)
    for (const auto& b : *index)
      if (rpm_md::compare_versions(a.version, b.version) != -rpm_md::compare_versions(b.version, a.version)) std::abort();
  // The closure of the first package, both ways: errors are fine, crashes are not.
  FetchRequest request;
  request.names = {index->front().name};
  request.arch = index->front().arch;
  request.why = "fuzz";
  for (auto closure : {Closure::Full, Closure::SameSource}) {
    request.closure = closure;
    (void)rpm_md::resolve(*index, request, {source});
  }
  return 0;
}
