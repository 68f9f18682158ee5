// OCI/Docker manifests and indexes (mirror/oci.hpp), as a registry or a
// bundle serves them. The first byte picks the served content type.
#include <array>

#include "fuzz/fuzz_input.hpp"
#include "mirror/oci.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr std::array<std::string_view, 5> types = {gb::mirror::oci::k_oci_manifest, gb::mirror::oci::k_oci_index,
                                                            gb::mirror::oci::k_docker_manifest, gb::mirror::oci::k_docker_list, ""};
  if (size == 0) return 0;
  auto body = gbfuzz::text(data + 1, size - 1);
  auto m = gb::mirror::oci::parse_manifest(std::string(body), types[data[0] % types.size()]);
  if (!m) return 0;
  for (const auto& d : m->manifests) (void)d.platform.matches("linux/arm64");
  return 0;
}
