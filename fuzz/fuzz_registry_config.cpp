// --registry-config YAML (mirror/registry_config.hpp). The loader reads a
// path, so the input goes through a scratch file.
#include "fuzz/fuzz_input.hpp"
#include "mirror/registry_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = gbfuzz::scratch_file("registries.yaml", gbfuzz::text(data, size));
  auto cfg = gb::mirror::RegistryConfig::load(file);
  if (!cfg) return 0;
  for (const auto& [host, hc] : cfg->hosts) {
    (void)cfg->endpoints(host);
    (void)cfg->push_endpoint(host);
  }
  (void)cfg->endpoints("docker.io");
  return 0;
}
