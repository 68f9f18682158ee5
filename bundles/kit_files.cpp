#include "bundles/kit_files.hpp"

#include "kit/kit.hpp"

namespace gb::bundles {

Result<void> add_kit_files(const recipes::Lock& lock, const recipes::Chart& chart, const std::string& bundle_id,
                           const std::filesystem::path& scratch, ExtraFiles& extra, const recipes::Chart* network_chart) {
  if (lock.destination_registry.empty()) return {};
  kit::KitOptions o;
  auto site = kit::SiteRegistry::parse(lock.destination_registry +
                                       (lock.destination_prefix.empty() ? "" : "/" + lock.destination_prefix));
  if (!site) return site.error();
  o.registry = site.value();
  o.registry.plain_http = lock.destination_plain_http;
  o.bundle_id = bundle_id;
  o.network_chart = network_chart;
  auto k = kit::make_kit(lock, chart, o);
  if (!k) return k.error();
  if (auto r = kit::write_kit(k.value(), scratch); !r) return r;
  for (const auto& f : k->files) extra["kit/" + f.path] = scratch / f.path;
  return {};
}

}  // namespace gb::bundles
