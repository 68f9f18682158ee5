#pragma once
// Helpers for the store and mirror pipeline tests: a temp folder, synthetic
// images (Docker schema2 and OCI, multi-arch), and an in-memory ImageSource.

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "mirror/mirror.hpp"
#include "signing/digest.hpp"

namespace storetest {

namespace fs = std::filesystem;

class Scratch {
public:
  Scratch() {
    std::string t = (fs::temp_directory_path() / "gb-store-test-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    m_path = t;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  fs::path operator/(const std::string& n) const { return m_path / n; }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

struct Blob {
  std::string bytes;
  std::string digest;
};

inline Blob blob(std::string bytes) { return {bytes, gb::signing::sha256_digest(bytes)}; }

// An in-memory registry: manifests by "repo:tag" and "repo@digest", blobs by digest.
class FakeSource final : public gb::mirror::ImageSource {
public:
  std::map<std::string, std::pair<std::string, std::string>> manifests;  // key -> (media type, bytes)
  std::map<std::string, std::string> blobs;
  std::set<std::string> corrupt;  // digests served with a flipped byte
  std::atomic<int> gets{0}, heads{0}, blob_fetches{0};
  std::atomic<std::uint64_t> downloaded{0};
  std::mutex mu;
  std::multiset<std::string> fetched;

  void add_blob(const Blob& b) { blobs[b.digest] = b.bytes; }
  // Adds an image manifest for `platform` with a config and the given layers; returns its (media type, bytes).
  Blob add_image(const std::string& repo, const std::string& tag, const std::vector<Blob>& layers, const std::string& arch, bool docker) {
    auto cfg = blob(nlohmann::json{{"architecture", arch}, {"os", "linux"}, {"rootfs", {{"type", "layers"}}}}.dump());
    add_blob(cfg);
    std::string mt = docker ? "application/vnd.docker.distribution.manifest.v2+json" : "application/vnd.oci.image.manifest.v1+json";
    std::string cmt = docker ? "application/vnd.docker.container.image.v1+json" : "application/vnd.oci.image.config.v1+json";
    std::string lmt = docker ? "application/vnd.docker.image.rootfs.diff.tar.gzip" : "application/vnd.oci.image.layer.v1.tar+gzip";
    nlohmann::json m = {{"schemaVersion", 2}, {"mediaType", mt}, {"config", {{"mediaType", cmt}, {"digest", cfg.digest}, {"size", cfg.bytes.size()}}}};
    m["layers"] = nlohmann::json::array();
    for (const auto& l : layers) {
      add_blob(l);
      m["layers"].push_back({{"mediaType", lmt}, {"digest", l.digest}, {"size", l.bytes.size()}});
    }
    auto mb = blob(m.dump(3));  // odd indent: bytes must survive verbatim
    manifests[repo + "@" + mb.digest] = {mt, mb.bytes};
    if (!tag.empty()) manifests[repo + ":" + tag] = {mt, mb.bytes};
    return mb;
  }
  Blob add_index(const std::string& repo, const std::string& tag, const std::vector<std::pair<std::string, Blob>>& children, bool docker) {
    std::string mt = docker ? "application/vnd.docker.distribution.manifest.list.v2+json" : "application/vnd.oci.image.index.v1+json";
    std::string cmt = docker ? "application/vnd.docker.distribution.manifest.v2+json" : "application/vnd.oci.image.manifest.v1+json";
    nlohmann::json idx = {{"schemaVersion", 2}, {"mediaType", mt}, {"manifests", nlohmann::json::array()}};
    for (const auto& [arch, c] : children)
      idx["manifests"].push_back({{"mediaType", cmt}, {"digest", c.digest}, {"size", c.bytes.size()}, {"platform", {{"os", "linux"}, {"architecture", arch}}}});
    auto ib = blob(idx.dump(1));
    manifests[repo + ":" + tag] = {mt, ib.bytes};
    manifests[repo + "@" + ib.digest] = {mt, ib.bytes};
    return ib;
  }

  static std::string key(const gb::recipes::Reference& r) { return r.name() + (r.digest.empty() ? ":" + r.tag : "@" + r.digest); }

  gb::Result<gb::mirror::oci::Manifest> get_manifest(const gb::recipes::Reference& ref) override {
    ++gets;
    auto it = manifests.find(key(ref));
    if (it == manifests.end()) return gb::op_error(ref.str() + ": MANIFEST_UNKNOWN");
    return gb::mirror::oci::parse_manifest(it->second.second, it->second.first);
  }
  gb::Result<std::optional<std::string>> head_manifest(const gb::recipes::Reference& ref) override {
    ++heads;
    auto it = manifests.find(key(ref));
    if (it == manifests.end()) return std::optional<std::string>{};
    return std::optional<std::string>(gb::signing::sha256_digest(it->second.second));
  }
  gb::Result<void> fetch_blobs(std::vector<gb::mirror::BlobRequest> reqs, const std::function<void(std::uint64_t)>& on_bytes) override {
    std::string errors;
    for (auto& r : reqs) {
      ++blob_fetches;
      {
        std::lock_guard l(mu);
        fetched.insert(r.digest);
      }
      auto it = blobs.find(r.digest);
      if (it == blobs.end()) {
        errors += r.digest + ": BLOB_UNKNOWN\n";
        continue;
      }
      std::string data = it->second;
      if (corrupt.count(r.digest)) data[0] ^= 0x01;
      auto sink = r.open_sink();
      if (!sink) {
        errors += r.digest + ": no sink\n";
        continue;
      }
      // Deliberately no digest check here: the store must catch corruption itself.
      if (auto w = sink->write(data); !w) {
        errors += w.error().message + "\n";
        continue;
      }
      downloaded += data.size();
      if (on_bytes) on_bytes(data.size());
      if (auto d = r.on_done(*sink); !d) errors += d.error().message + "\n";
    }
    if (!errors.empty()) return gb::op_error(errors);
    return {};
  }
  gb::Result<std::string> get_url(const std::string& url) override {
    auto it = blobs.find(url);
    if (it == blobs.end()) return gb::op_error(url + ": 404");
    return it->second;
  }
  std::uint64_t bytes_downloaded() const override { return downloaded; }
};

}  // namespace storetest
