#include "bundles/placed_images.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "bundles/bundle_blobs.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"

namespace gb::bundles {

namespace {

// A manifest walked (children before their index): an image manifest's
// config and layers, then the manifest itself with its bytes as carried.
void take_manifest(PlacedImage& p, PlacedImages& out, mirror::oci::Manifest m) {
  if (!m.index()) {
    p.blobs.push_back(m.config.digest);
    for (const auto& l : m.layers) p.blobs.push_back(l.digest);
  }
  p.manifests.push_back(m.digest);
  out.manifests[m.digest] = {m.media_type, std::move(m.bytes)};
}

void finish_image(PlacedImage p, PlacedImages& out) {
  std::sort(p.blobs.begin(), p.blobs.end());
  p.blobs.erase(std::unique(p.blobs.begin(), p.blobs.end()), p.blobs.end());
  out.images.push_back(std::move(p));
}

}  // namespace

Result<PlacedImages> placed_images(const VolumeManifest& m, const BundleBlobs& blobs, const kit::SiteRegistry& site, kit::Layout layout) {
  auto lock = recipes::parse_lock(m.lock_json, "bundle lock");
  if (!lock) return lock.error();
  auto placements = kit::place_images(lock.value(), site, layout);
  if (!placements) return placements.error();
  std::map<std::string, recipes::Reference> dest_of;
  for (const auto& p : placements.value()) dest_of[p.source.str()] = p.destination;

  PlacedImages out;
  for (const auto& img : m.images) {
    auto d = dest_of.find(img.ref);
    if (d == dest_of.end()) return op_error("bundle image " + img.ref + " is not in its lock");
    PlacedImage p{&img, img.ref, d->second, d->second, {}, {}};
    p.repo.tag.clear();
    p.repo.digest.clear();
    p.tagged.digest.clear();
    std::set<std::string> seen;
    // Recursion is bounded: verify refused indexes nested deeper than mirror::oci::k_max_index_depth.
    std::function<Result<void>(const std::string&, const std::string&, int)> walk = [&](const std::string& digest, const std::string& media,
                                                                                        int depth) -> Result<void> {
      if (depth > mirror::oci::k_max_index_depth) return op_error("image " + img.ref + ": index nesting deeper than " + std::to_string(mirror::oci::k_max_index_depth));
      if (!seen.insert(digest).second) return {};
      if (!blobs.find(digest)) return op_error("image " + img.ref + ": manifest " + digest + " is not in the bundle");
      auto bytes = blobs.content(digest);
      if (!bytes) return bytes.error();
      auto parsed = mirror::oci::parse_manifest(bytes.value(), media);
      if (!parsed) return op_error("image " + img.ref + ": " + parsed.error().message);
      if (parsed->index()) {
        for (const auto& c : parsed->manifests) {
          if (std::find(img.blobs.begin(), img.blobs.end(), c.digest) == img.blobs.end()) {
            p.sparse = true;
            continue;
          }
          if (auto r = walk(c.digest, c.media_type, depth + 1); !r) return r;
        }
      }
      take_manifest(p, out, std::move(parsed.value()));
      return {};
    };
    if (auto r = walk(img.digest, img.media_type, 0); !r) return r.error();
    finish_image(std::move(p), out);
  }
  return out;
}

Result<PlacedImages> placed_store_images(const mirror::Store& store, const std::vector<std::string>& refs, const kit::SiteRegistry& site,
                                         kit::Layout layout) {
  std::vector<mirror::StoredImage> chosen;
  if (refs.empty()) {
    auto all = store.images();
    if (!all) return all.error();
    chosen = std::move(all.value());
  }
  for (const auto& r : refs) {
    auto img = store.find_image(r);
    if (!img) return input_error(r + ": not in the store " + store.root().string() + " (see `gpubundle store ls`)");
    chosen.push_back(std::move(*img));
  }
  PlacedImages out;
  for (const auto& img : chosen) {
    auto src = recipes::Reference::parse(img.ref);
    if (!src) return op_error("store index.json: " + src.error().message);
    recipes::Reference dest = kit::site_reference(src.value(), site, layout);
    PlacedImage p{nullptr, img.ref, dest, dest, {}, {}};
    p.repo.tag.clear();
    p.repo.digest.clear();
    p.tagged.digest.clear();
    // Children before their index; an index keeps only the children stored.
    std::function<Result<void>(const std::string&, const std::string&, int)> walk = [&](const std::string& digest, const std::string& media,
                                                                                        int depth) -> Result<void> {
      if (depth > mirror::oci::k_max_index_depth)
        return op_error("store: " + img.ref + ": index nesting deeper than " + std::to_string(mirror::oci::k_max_index_depth));
      auto bytes = store.read_blob(digest);
      if (!bytes) return bytes.error();
      if (signing::sha256_digest(bytes.value()) != digest) return op_error("store: manifest " + digest + " does not hash to its name");
      auto parsed = mirror::oci::parse_manifest(bytes.value(), media);
      if (!parsed) return op_error("store: " + img.ref + ": " + parsed.error().message);
      if (depth == 0 && parsed->index()) {
        // The store keeps upstream's index whole; a registry gets it filtered
        // to the platforms kept, as import pushes it.
        auto site_index = mirror::oci::site_index(parsed.value(), img.platforms);
        if (!site_index) return op_error("store: " + img.ref + ": " + site_index.error().message);
        if (*site_index) parsed = std::move(**site_index);
      }
      if (parsed->index()) {
        for (const auto& c : parsed->manifests)
          if (store.has_blob(c.digest))
            if (auto r = walk(c.digest, c.media_type, depth + 1); !r) return r;
      }
      take_manifest(p, out, std::move(parsed.value()));
      return {};
    };
    if (auto r = walk(img.digest, img.media_type, 0); !r) return r.error();
    finish_image(std::move(p), out);
  }
  return out;
}

}  // namespace gb::bundles
