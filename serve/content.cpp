#include "serve/content.hpp"

#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "bundles/placed_images.hpp"
#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"

namespace gb::serve {

namespace {

// Where some blobs are: one bundle, or the store. Each hashes a blob on its
// first read and hands out bytes only once they matched.
class Shelf {
public:
  virtual ~Shelf() = default;
  virtual Result<BlobBody> body(const std::string& digest) = 0;
};

BlobBody body_of(const bundles::BundleBlob& b) {
  BlobBody out;
  if (b.encoding.empty() && b.segments.size() == 1) {
    out.size = b.segments[0].size;
    out.file = b.segments[0].volume.string();
    out.offset = b.segments[0].offset;
    return out;
  }
  // Parts across volumes, or zstd decoded as it is read: each response gets its own source.
  auto src = bundles::BundleBlobs::content_source(b, nullptr);
  if (!src) {
    out.read = [f = src.error()](std::uint64_t, char*, std::size_t) -> Result<std::size_t> { return f; };
    return out;
  }
  std::shared_ptr<mirror::BlobSource> s = std::move(src.value());
  out.size = s->size();
  out.read = [s](std::uint64_t at, char* buf, std::size_t len) { return s->read(at, buf, len); };
  return out;
}

class BundleShelf final : public Shelf {
public:
  BundleShelf(bundles::VerifyReport report, bundles::BundleBlobs blobs) : m_report(std::move(report)), m_blobs(std::move(blobs)) {}
  const bundles::VerifyReport& report() const { return m_report; }
  // Before serving starts (no lock): the blobs hashed so far, manifests among them.
  const bundles::BundleBlobs& blobs() const { return m_blobs; }

  Result<BlobBody> body(const std::string& digest) override {
    if (auto known = lookup(digest)) return *known;
    std::lock_guard hashing(m_hash_mu);  // one first read hashes; the others wait for it
    if (auto known = lookup(digest)) return *known;
    std::size_t before = m_report.problems.size();
    bundles::hash_blobs(m_report, {digest});
    if (m_report.problems.size() != before) {
      std::vector<std::string> lines(m_report.problems.begin() + static_cast<std::ptrdiff_t>(before), m_report.problems.end());
      Failure f = op_error("bundle " + m_report.bundle_id + ": " + join(lines, "; "));
      log_warn("serve: " + f.message);
      std::unique_lock lock(m_mu);
      m_failed.emplace(digest, f);
      return f;
    }
    auto blobs = bundles::BundleBlobs::from(m_report);
    if (!blobs) return blobs.error();
    std::unique_lock lock(m_mu);
    m_blobs = std::move(blobs.value());
    const bundles::BundleBlob* b = m_blobs.find(digest);
    if (!b) return op_error("bundle " + m_report.bundle_id + ": blob " + digest + " was hashed but is not readable");
    return body_of(*b);
  }

private:
  std::optional<Result<BlobBody>> lookup(const std::string& digest) {
    std::shared_lock lock(m_mu);
    if (auto f = m_failed.find(digest); f != m_failed.end()) return Result<BlobBody>(f->second);
    if (const bundles::BundleBlob* b = m_blobs.find(digest)) return Result<BlobBody>(body_of(*b));
    return std::nullopt;
  }

  std::mutex m_hash_mu;  // guards m_report
  bundles::VerifyReport m_report;
  std::shared_mutex m_mu;  // guards m_blobs and m_failed
  bundles::BundleBlobs m_blobs;
  std::map<std::string, Failure> m_failed;
};

class StoreShelf final : public Shelf {
public:
  explicit StoreShelf(mirror::Store store) : m_store(std::move(store)) {}
  mirror::Store& store() { return m_store; }

  Result<BlobBody> body(const std::string& digest) override {
    BlobBody out;
    out.file = m_store.blob_path(digest).string();
    std::error_code ec;
    out.size = std::filesystem::file_size(out.file, ec);
    if (ec) return op_error("store: blob " + digest + " is gone: " + ec.message());
    {
      std::lock_guard lock(m_mu);
      if (m_good.count(digest)) return out;
    }
    // Hashed outside the lock: first reads of different blobs go on in parallel.
    auto hex = signing::sha256_file_hex(out.file);
    if (!hex || "sha256:" + hex.value() != digest) {
      log_warn("serve: store blob " + digest + " does not hash to its name (store fsck --repair removes it)");
      return op_error("store: blob " + digest + " does not hash to its name");
    }
    std::lock_guard lock(m_mu);
    m_good.insert(digest);
    return out;
  }

private:
  mirror::Store m_store;
  std::mutex m_mu;
  std::set<std::string> m_good;
};

}  // namespace

struct Content::Impl {
  Catalog catalog;
  std::vector<std::unique_ptr<Shelf>> shelves;
  std::map<std::string, Shelf*, std::less<>> owner;  // blob digest -> where its bytes are
  std::size_t images = 0;

  // One image under its site name; a tag served twice keeps its first digest.
  void add(const std::string& repo, const std::string& tag, const std::vector<std::string>& manifests,
           const std::vector<std::string>& blobs, const std::string& from) {
    Repository& r = catalog.repositories[repo];
    r.digests.insert(manifests.begin(), manifests.end());
    r.digests.insert(blobs.begin(), blobs.end());
    ++images;
    if (tag.empty()) return;
    auto [it, fresh] = r.tags.emplace(tag, manifests.back());
    if (!fresh && it->second != manifests.back())
      log_warn("serve: " + repo + ":" + tag + " is " + it->second + " in an earlier bundle given and " + manifests.back() + " in " +
                from + "; the first is served");
  }
};

Content::Content(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Content::~Content() = default;
const Catalog& Content::catalog() const { return m_impl->catalog; }
std::size_t Content::images() const { return m_impl->images; }

Result<std::optional<BlobBody>> Content::open(std::string_view digest) {
  auto it = m_impl->owner.find(digest);
  if (it == m_impl->owner.end()) return std::optional<BlobBody>();
  auto body = it->second->body(std::string(digest));
  if (!body) return body.error();
  return std::optional<BlobBody>(std::move(body.value()));
}

Result<std::unique_ptr<Content>> Content::from_bundles(const std::vector<std::filesystem::path>& volumes, const ContentOptions& o) {
  if (auto r = bundles::require_volume_files(volumes); !r) return r.error();
  // Group the volumes by bundle, in the order first given.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::filesystem::path>> groups;
  for (const auto& v : volumes) {
    auto m = bundles::read_volume_manifest(v);
    if (!m) return m.error();
    if (!groups.count(m->bundle_id)) order.push_back(m->bundle_id);
    groups[m->bundle_id].push_back(v);
  }
  auto impl = std::make_unique<Impl>();
  kit::SiteRegistry site{"serve", o.prefix, false};
  std::vector<const bundles::VolumeManifest*> manifests;
  for (const auto& id : order) {
    bundles::VerifyOptions vo;
    vo.trusted = o.trusted;
    vo.defer_blobs = !o.verify_all;
    bundles::VerifyReport report = bundles::verify_bundle(groups[id], vo);
    if (!report.problems.empty()) return op_error(join(report.problems, "\n") + "\nserve refused: bundle " + id + " did not verify");
    const bundles::VolumeManifest& m = report.manifest;
    if (report.volumes_seen.size() != static_cast<std::size_t>(m.volumes))
      return input_error("bundle " + id + ": " + std::to_string(report.volumes_seen.size()) + " of its " + std::to_string(m.volumes) +
                         " volumes given; serve needs every volume");
    auto blobs = bundles::BundleBlobs::from(report);
    if (!blobs) return blobs.error();
    auto shelf = std::make_unique<BundleShelf>(std::move(report), std::move(blobs.value()));
    const bundles::VerifyReport& kept = shelf->report();
    for (const auto& f : kept.manifest.files)
      if (!f.blob.empty()) impl->owner.emplace(f.blob, shelf.get());
    manifests.push_back(&kept.manifest);
    impl->shelves.push_back(std::move(shelf));
  }
  for (std::size_t i = 0; i < manifests.size(); ++i) {
    const bundles::VolumeManifest& m = *manifests[i];
    std::vector<std::string> missing;
    for (const auto& d : m.omitted)
      if (!impl->owner.count(d)) missing.push_back(d);
    if (!missing.empty())
      return input_error("bundle " + m.bundle_id + " is a delta over " + quote(m.delta_base) + ": " + std::to_string(missing.size()) +
                         " blob(s) it omits (" + missing.front() + "...) are in no bundle given; give its base bundle too");
    // Manifests are read through the shelf's own BundleBlobs: the closure check hashed them.
    auto images = bundles::placed_images(m, static_cast<const BundleShelf&>(*impl->shelves[i]).blobs(), site, o.layout);
    if (!images) return images.error();
    for (auto& [digest, sm] : images->manifests) impl->catalog.manifests[digest] = {sm.media_type, std::move(sm.bytes)};
    for (const auto& img : images->images)
      impl->add(img.repo.repository, img.tagged.tag, img.manifests, img.blobs, "bundle " + m.bundle_id);
  }
  return std::unique_ptr<Content>(new Content(std::move(impl)));
}

Result<std::unique_ptr<Content>> Content::from_store(const std::filesystem::path& root, const ContentOptions& o) {
  auto store = mirror::Store::open(root, mirror::StoreAccess::Shared);
  if (!store) return store.error();
  auto impl = std::make_unique<Impl>();
  auto shelf = std::make_unique<StoreShelf>(std::move(store.value()));
  mirror::Store& s = shelf->store();
  kit::SiteRegistry site{"serve", o.prefix, false};
  auto placed = bundles::placed_store_images(s, {}, site, o.layout);
  if (!placed) return placed.error();
  for (auto& [digest, sm] : placed->manifests) impl->catalog.manifests[digest] = {sm.media_type, std::move(sm.bytes)};
  for (const auto& img : placed->images) {
    for (const auto& b : img.blobs) impl->owner.emplace(b, shelf.get());
    impl->add(img.repo.repository, img.tagged.tag, img.manifests, img.blobs, "the store");
  }
  impl->shelves.push_back(std::move(shelf));
  if (o.verify_all)
    for (const auto& [digest, owner] : impl->owner)
      if (auto b = owner->body(digest); !b) return b.error();
  return std::unique_ptr<Content>(new Content(std::move(impl)));
}

}  // namespace gb::serve
