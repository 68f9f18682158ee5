// What a registry says besides bodies (mirror/registry_text.hpp):
// WWW-Authenticate challenges, Link pages, Location targets, Retry-After and
// error bodies. Every one of them comes from a server we do not trust.
#include "fuzz/fuzz_input.hpp"
#include "mirror/registry_text.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = gbfuzz::text(data, size);
  for (const auto& c : gb::mirror::detail::parse_www_authenticate(in)) {
    (void)c.param("realm");
    (void)c.param("service");
    (void)c.param("scope");
  }
  if (auto next = gb::mirror::detail::next_link(in)) (void)gb::net::url_host(gb::net::resolve_url("https://reg.example:5000/v2/a/tags/list", *next));
  (void)gb::net::resolve_url("https://reg.example:5000/v2/a/blobs/uploads/", in);
  (void)gb::net::url_host(in);
  (void)gb::net::retry_after_seconds(in, 1'700'000'000);
  (void)gb::mirror::detail::parse_registry_error(in);
  return 0;
}
