// The installer's .manifest (node-images/installer.hpp): which files of an
// NVIDIA .run go where on a node image.
#include "fuzz/fuzz_input.hpp"
#include "node-images/installer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = gb::node_images::parse_manifest(gbfuzz::text(data, size), "fuzz/.manifest");
  if (!m) return 0;
  for (const auto& e : m->entries) (void)gb::node_images::manifest_destination(e, m->version, "usr/lib/x86_64-linux-gnu");
  return 0;
}
