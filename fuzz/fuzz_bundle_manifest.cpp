// A volume's signed manifest (gpubundle.json, bundles/bundle.hpp) and its
// detached signature (signing/signature.hpp), checked against a fixed
// keyring as `bundle verify --pubkey` does. The input is the manifest text,
// then optionally the marker line and the signature file text.
#include "bundles/bundle.hpp"
#include "fuzz/bundle_volumes.hpp"
#include "fuzz/fuzz_input.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const gb::Keyring trusted = gb::Keyring::of(gb::PrivateKey::generate(gb::KeyType::Ed25519).value_or_throw().public_key());
  auto in = gbfuzz::text(data, size);
  auto at = in.find(gbfuzz::k_volume_marker);
  auto manifest = in.substr(0, at);
  auto m = gb::parse_volume_manifest(manifest, "fuzz/gpubundle.json");
  if (m) (void)gb::parse_volume_manifest(gb::manifest_to_json(*m), "fuzz/gpubundle.json (written)");
  if (at != std::string_view::npos) {
    auto signature = in.substr(at + gbfuzz::k_volume_marker.size());
    (void)gb::parse_signature(signature);
    (void)gb::verify_detached(trusted, manifest, signature);
  }
  return 0;
}
