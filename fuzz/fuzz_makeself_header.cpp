// The makeself header of an NVIDIA .run (node-images/installer.hpp): upstream
// and NVIDIA-fork flavours, offsets and sizes from text we never execute.
#include "fuzz/fuzz_input.hpp"
#include "node-images/installer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = gbfuzz::text(data, size);
  (void)gb::node_images::parse_makeself_header(in, size, "fuzz.run");
  // The reader gets only the first bytes of a large .run: offsets and sizes
  // past them must be checked against the file size, not the buffer.
  (void)gb::node_images::parse_makeself_header(in, size + (std::uint64_t{1} << 32), "fuzz.run (prefix)");
  return 0;
}
