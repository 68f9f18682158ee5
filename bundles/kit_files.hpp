#pragma once
// The install kit as bundle payload: when the lock has a destination, the kit
// for that registry is written to a scratch folder and carried under kit/.
// The chart is the lock's, from lock_chart() (mirror/chart_fetch.hpp).

#include <filesystem>

#include "bundles/bundle.hpp"
#include "common/error.hpp"
#include "recipes/chart.hpp"
#include "recipes/lock.hpp"

namespace gb::bundles {

// Adds "kit/<file>" entries to `extra` (nothing when the lock has no
// destination). Files are written below `scratch`, which the caller removes.
// `network_chart`: the network-operator chart, for a lock with a network section.
Result<void> add_kit_files(const recipes::Lock& lock, const recipes::Chart& chart, const std::string& bundle_id,
                           const std::filesystem::path& scratch, ExtraFiles& extra, const recipes::Chart* network_chart = nullptr);

}  // namespace gb::bundles
