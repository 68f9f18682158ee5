#pragma once
// The images of a verified bundle as a registry holds them: where each lands
// at the site (kit::place_images), its manifests with their bytes as carried
// (children first, the top one last) and the configs and layers they name.
// Import pushes these; serve answers with them. The images of a content
// store, the same way: `store push` and `driver build --push` push those,
// and `serve --store` answers with them.

#include <map>
#include <string>
#include <vector>

#include "bundles/bundle.hpp"
#include "common/error.hpp"
#include "kit/kit.hpp"

namespace gb::mirror {
class Store;
}

namespace gb::bundles {

class BundleBlobs;

struct PlacedImage {
  const BundleImage* image = nullptr;  // nullptr for a stored image
  std::string source;                  // the full source reference
  recipes::Reference repo;    // at the site, no tag or digest
  recipes::Reference tagged;  // at the site, with its tag when it has one, no digest
  std::vector<std::string> manifests;  // children first, top last
  std::vector<std::string> blobs;      // configs and layers, sorted, once each
  bool sparse = false;  // an index naming children the bundle lacks (bundles before filtered indexes)
};

struct PlacedManifest {
  std::string media_type;
  std::string bytes;
};

struct PlacedImages {
  std::vector<PlacedImage> images;  // in the manifest's order
  std::map<std::string, PlacedManifest> manifests;  // by digest
};

// `manifest` and `blobs` from one verify_bundle() without problems; the
// result points into `manifest`.
Result<PlacedImages> placed_images(const VolumeManifest& manifest, const BundleBlobs& blobs, const kit::SiteRegistry& site,
                               kit::Layout layout);

// The stored images named in `refs` (all of index.json when empty), each as
// a registry with `site`'s prefix and layout holds it: an index filtered to
// the platforms the store kept (mirror/oci.hpp site_index, as import pushes
// it), the children and blobs the store has. Every manifest is hashed as it
// is read; a ref the store lacks is an input error naming it.
Result<PlacedImages> placed_store_images(const mirror::Store& store, const std::vector<std::string>& refs, const kit::SiteRegistry& site,
                                         kit::Layout layout);

}  // namespace gb::bundles
