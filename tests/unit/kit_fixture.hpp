#pragma once
// The install kit's test fixtures, shared by test_kit_files.cpp and
// test_kit_runtime.cpp: a tiny chart and a hand-made lock, so those cases
// run without shared/.

#include <string>
#include <vector>

#include "kit/kit.hpp"

namespace gb::kit_test {

// A tiny chart: just the values keys the fixture lock needs.
recipes::Chart fixture_chart();
recipes::LockImage image(std::vector<std::string> components, std::string source, bool digest = true);
// A conventional ubuntu22.04 lock with nvcr.io and registry.k8s.io images.
recipes::Lock fixture_lock();
kit::KitOptions options(const std::string& registry = "registry.site:5000/gpu", kit::Layout layout = kit::Layout::StripHost);
// The kit file at `path` (the case fails when there is none).
const std::string& file(const kit::Kit& k, const std::string& path);
bool contains(const std::string& hay, const std::string& needle);

}  // namespace gb::kit_test
