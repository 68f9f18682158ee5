#pragma once
// Stored images into a registry: `gpubundle store push` and `driver build
// --push`. Each image goes under the name a site registry with that prefix
// and layout gives it (kit::site_reference, as import names them), as
// bundles/placed_images.hpp reads it from the store, through the one push
// (mirror/push.hpp): skip what the registry has, mount across repositories,
// credentials only to their origin. Every blob to upload is hashed from the
// store before the first byte leaves, so a store that rotted pushes nothing.

#include <string>
#include <vector>

#include "common/error.hpp"
#include "kit/kit.hpp"
#include "mirror/push.hpp"
#include "mirror/registry_config.hpp"

namespace gb {
class Progress;
}
namespace gb::mirror {
class Store;
}

namespace gb::bundles {

struct StorePushOptions {
  kit::SiteRegistry registry;
  kit::Layout layout = kit::Layout::StripHost;
  mirror::RegistryConfig config;  // TLS and credentials; plainHttp as for import
  int jobs = 8;
};

struct StorePushed {
  std::string source;  // the stored reference
  std::string pushed;  // where it now is, with its tag
  std::string digest;  // its top manifest there
};

struct StorePushReport {
  std::vector<StorePushed> images;  // in the order asked
  mirror::PushReport push;
};

Result<StorePushReport> push_stored_images(const mirror::Store& store, const std::vector<std::string>& refs, const StorePushOptions& options,
                                           Progress& progress);

}  // namespace gb::bundles
