// A request to serve's pull API (serve/registry_api.hpp), from a client we do
// not trust: method, path, query and headers, over a small fixed catalog.
// Input: line 1 the method, line 2 the path ("?k=v&..." splits off the
// query), then "name: value" header lines.
#include <cstring>
#include <map>

#include "fuzz/fuzz_input.hpp"
#include "serve/registry_api.hpp"

namespace {

const std::string k_blob = "0123456789abcdef0123456789abcdef";
const std::string k_blob_digest = "sha256:7e9e3b6a3b1bd0c8e8c1b4b0f5a1e6e3f6fa8a7d0e5a1d2e4c7b9f0a1b2c3d4e";
const std::string k_manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"})";
const std::string k_manifest_digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

class Bodies final : public gb::serve::BlobBodies {
public:
  gb::Result<std::optional<gb::serve::BlobBody>> open(std::string_view digest) override {
    if (digest != k_blob_digest) return std::optional<gb::serve::BlobBody>();
    gb::serve::BlobBody b;
    b.size = k_blob.size();
    b.read = [](std::uint64_t at, char* buf, std::size_t len) -> gb::Result<std::size_t> {
      if (at >= k_blob.size()) return std::size_t{0};
      std::size_t n = std::min<std::size_t>(len, k_blob.size() - at);
      std::memcpy(buf, k_blob.data() + at, n);
      return n;
    };
    return std::optional<gb::serve::BlobBody>(std::move(b));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static gb::serve::Catalog catalog = [] {
    gb::serve::Catalog c;
    auto& r = c.repositories["gpu/nvidia/driver"];
    r.tags = {{"550", k_manifest_digest}, {"latest", k_manifest_digest}};
    r.digests = {k_manifest_digest, k_blob_digest};
    c.repositories["gpu/other"].digests = {k_blob_digest};
    c.manifests[k_manifest_digest] = {"application/vnd.oci.image.manifest.v1+json", k_manifest};
    return c;
  }();
  static Bodies bodies;
  static gb::serve::RegistryApi api(catalog, bodies, nullptr);

  auto in = gbfuzz::text(data, size);
  gb::serve::HttpRequest r;
  std::size_t line = 0;
  while (!in.empty()) {
    auto nl = in.find('\n');
    std::string_view l = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (line == 0) {
      r.method = l;
    } else if (line == 1) {
      auto q = l.find('?');
      r.path = l.substr(0, q);
      if (q != std::string_view::npos) {
        std::string_view query = l.substr(q + 1);
        while (!query.empty()) {
          auto amp = query.find('&');
          std::string_view kv = query.substr(0, amp);
          auto eq = kv.find('=');
          r.query.emplace(std::string(kv.substr(0, eq)), eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1)));
          query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        }
      }
    } else if (auto colon = l.find(':'); colon != std::string_view::npos) {
      std::string name(l.substr(0, colon));
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers.emplace(name, std::string(l.substr(colon + 1)));
    }
    ++line;
  }
  auto resp = api.handle(r);
  // Drain a body as the server would, checking it stays within its size.
  if (resp.reader) {
    char buf[7];
    std::uint64_t at = 0;
    while (at < resp.size) {
      long n = resp.reader(at, buf, sizeof buf);
      if (n <= 0) break;
      if (static_cast<std::uint64_t>(n) > sizeof buf || at + static_cast<std::uint64_t>(n) > resp.size) __builtin_trap();
      at += static_cast<std::uint64_t>(n);
    }
  }
  return 0;
}
