// What a registry says besides bodies (mirror/http_util.hpp):
// WWW-Authenticate challenges, Link pages, Location targets, Retry-After and
// error bodies. Every one of them comes from a server we do not trust.
#include "fuzz/fuzz_input.hpp"
#include "mirror/http_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = gbfuzz::text(data, size);
  for (const auto& c : gb::http::parse_www_authenticate(in)) {
    (void)c.param("realm");
    (void)c.param("service");
    (void)c.param("scope");
  }
  if (auto next = gb::http::next_link(in)) (void)gb::http::url_host(gb::http::resolve_url("https://reg.example:5000/v2/a/tags/list", *next));
  (void)gb::http::resolve_url("https://reg.example:5000/v2/a/blobs/uploads/", in);
  (void)gb::http::url_host(in);
  (void)gb::http::retry_after_seconds(in, 1'700'000'000);
  (void)gb::http::parse_registry_error(in);
  return 0;
}
