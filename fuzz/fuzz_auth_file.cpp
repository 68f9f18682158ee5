// Docker/Podman auth files (mirror/registry_config.hpp): JSON from the user's
// home, read for every registry host.
#include "fuzz/fuzz_input.hpp"
#include "mirror/registry_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto json = gbfuzz::text(data, size);
  for (const char* host : {"nvcr.io", "docker.io", "127.0.0.1:5000"})
    (void)gb::mirror::credential_from_auth_file(json, host, "fuzz/auth.json");
  return 0;
}
