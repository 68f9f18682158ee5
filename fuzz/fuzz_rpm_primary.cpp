// rpm-md primary.xml and repomd.xml (packages/rpm_md.hpp): read from a package mirror, after
// its checksum matched the signed repomd.xml, or on the sender's word with
// `signatures: packages`; libsolv reads it, and what we take from it must
// still be checked. Every package that is read must have the fields a
// download needs in their safe forms, the version order must be
// antisymmetric on what the document holds, and the closures must not crash.
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "packages/rpm_md.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gb::packages;
  gb::recipes::PackageSource source;
  source.name = "fuzz";
  source.format = gb::recipes::PackageFormat::RpmMd;
  source.url = "http://fuzz.invalid";
  // The same bytes as a repomd.xml: what it names must be a safe href with a sha256.
  if (auto md = rpm_md::parse_repomd(gbfuzz::text(data, size), "fuzz/repomd.xml"))
    for (const auto* f : {&md->primary, md->filelists ? &*md->filelists : nullptr})
      if (f && (f->sha256.size() != 64 || f->href.empty() || f->href[0] == '/' || f->href.find("..") != std::string::npos))
        std::abort();
  rpm_md::Index index("x86_64");
  if (!index.add_primary(gbfuzz::text(data, size), source, source.url, "fuzz/primary.xml")) return 0;
  auto pkgs = index.packages();
  if (pkgs.empty()) return 0;
  for (const auto& p : pkgs) {
    if (p.sha256.size() != 64 || p.location.empty() || p.location[0] == '/' || p.location.find("..") != std::string::npos) std::abort();
    for (char c : p.name + p.version + p.arch + p.location)
      if (static_cast<unsigned char>(c) <= 0x20) std::abort();
  }
  for (size_t i = 0; i < pkgs.size() && i < 64; ++i)
    for (size_t j = 0; j < pkgs.size() && j < 64; ++j)
      if (rpm_md::compare_versions(pkgs[i].version, pkgs[j].version) != -rpm_md::compare_versions(pkgs[j].version, pkgs[i].version))
        std::abort();
  // The closure of the first package, both ways: errors are fine, crashes are not.
  FetchRequest request;
  request.names = {pkgs.front().name};
  request.arch = "x86_64";
  request.why = "fuzz";
  for (auto closure : {Closure::Full, Closure::SameSource}) {
    request.closure = closure;
    (void)index.resolve(request, {source});
  }
  return 0;
}
