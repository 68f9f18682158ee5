#pragma once
// The bundle target's input: one or more volume files, joined by a marker
// line. A volume is a tar, so the marker only ever follows its end blocks.
#include <string>
#include <string_view>
#include <vector>

namespace gbfuzz {

inline constexpr std::string_view k_volume_marker = "\n--gpubundle-fuzz-next-volume--\n";

inline std::vector<std::string_view> split_volumes(std::string_view in) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = in.find(k_volume_marker);
    out.push_back(in.substr(0, at));
    if (at == std::string_view::npos) return out;
    in.remove_prefix(at + k_volume_marker.size());
  }
}

}  // namespace gbfuzz
