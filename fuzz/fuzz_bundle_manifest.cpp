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
  static const gb::signing::Keyring trusted = gb::signing::Keyring::of(gb::signing::PrivateKey::generate(gb::signing::KeyType::Ed25519).value_or_throw().public_key());
  auto in = gbfuzz::text(data, size);
  auto at = in.find(gbfuzz::k_volume_marker);
  auto manifest = in.substr(0, at);
  auto m = gb::bundles::parse_volume_manifest(manifest, "fuzz/gpubundle.json");
  if (m) (void)gb::bundles::parse_volume_manifest(gb::bundles::manifest_to_json(*m), "fuzz/gpubundle.json (written)");
  if (at != std::string_view::npos) {
    auto signature = in.substr(at + gbfuzz::k_volume_marker.size());
    (void)gb::signing::parse_signature(signature);
    (void)gb::signing::verify_detached(trusted, manifest, signature);
  }
  return 0;
}
