#pragma once
// Internal to gb_signing: tiny RAII wrappers over OpenSSL objects and access to
// the EVP_PKEY behind PrivateKey/PublicKey. Never include this outside signing/;
// public headers keep OpenSSL types out.

#include <memory>
#include <optional>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <string>
#include <string_view>

#include "signing/keys.hpp"

namespace gb::signing::detail {

struct FreeBio {
  void operator()(BIO* b) const { BIO_free_all(b); }
};
struct FreePkey {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct FreeMdCtx {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct FreeX509 {
  void operator()(X509* x) const { X509_free(x); }
};

using Bio = std::unique_ptr<BIO, FreeBio>;
using Pkey = std::unique_ptr<EVP_PKEY, FreePkey>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, FreeMdCtx>;
using X509Ptr = std::unique_ptr<X509, FreeX509>;

// A read-only memory BIO over `data` (which must outlive it).
Bio mem_reader(std::string_view data);
Bio mem_writer();
std::string bio_contents(BIO* bio);

// The most specific reason OpenSSL left in its error queue (and clears it),
// e.g. "bad decrypt"; "" when the queue is empty.
std::string last_error();

// Classifies an EVP_PKEY; nullopt for types gpubundle does not handle.
std::optional<KeyType> key_type_of(const EVP_PKEY* key);

// sha256 hex of the DER SubjectPublicKeyInfo: the key id.
std::string key_id_of(EVP_PKEY* key);

// Borrowed pointers; the key objects keep ownership.
EVP_PKEY* native(const PrivateKey& key);
EVP_PKEY* native(const PublicKey& key);

}  // namespace gb::signing::detail
