#pragma once
// SHA-256 digests in the OCI form "sha256:<64 hex>". OpenSSL stays behind this
// header: callers never see an EVP type.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace gb::signing {

class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;

  void update(std::string_view data);
  void update(const void* data, std::size_t size);
  // Lower-case hex of the digest; the object is spent afterwards.
  std::string hex();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

std::string sha256_hex(std::string_view data);
// "sha256:<hex>"
std::string sha256_digest(std::string_view data);
Result<std::string> sha256_file_hex(const std::filesystem::path& path);

// True for "sha256:" followed by 64 lower-case hex digits; is_sha256_hex: the digits alone.
bool is_sha256_digest(std::string_view digest);
bool is_sha256_hex(std::string_view hex);
// What follows the algorithm: "sha256:<hex>" gives "<hex>" (no ':' gives it all).
std::string digest_hex(std::string_view digest);

}  // namespace gb::signing
