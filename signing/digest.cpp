#include "signing/digest.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <openssl/evp.h>
#include <stdexcept>
#include <vector>

namespace gb::signing {

struct Sha256::Impl {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx{EVP_MD_CTX_new()};
};

Sha256::Sha256() : m_impl(std::make_unique<Impl>()) {
  if (!m_impl->ctx || EVP_DigestInit_ex(m_impl->ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error(ErrorKind::Failed, "OpenSSL: cannot initialise sha256");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view data) { update(data.data(), data.size()); }
void Sha256::update(const void* data, std::size_t size) { EVP_DigestUpdate(m_impl->ctx.get(), data, size); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(m_impl->ctx.get(), md, &len);
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string sha256_digest(std::string_view data) { return "sha256:" + sha256_hex(data); }

Result<std::string> sha256_file_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return input_error(path.string() + ": cannot read");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return op_error(path.string() + ": read failed");
  return h.hex();
}

std::string digest_hex(std::string_view digest) {
  auto colon = digest.find(':');
  return std::string(colon == std::string_view::npos ? digest : digest.substr(colon + 1));
}

bool is_sha256_hex(std::string_view h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_sha256_digest(std::string_view d) { return d.size() == 71 && d.substr(0, 7) == "sha256:" && is_sha256_hex(d.substr(7)); }

}  // namespace gb::signing
