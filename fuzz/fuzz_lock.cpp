// Lock JSON (recipes/lock.hpp): read by mirror --locked, overrides, and
// embedded in every bundle. A lock that parses must survive a round trip.
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "recipes/lock.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto lock = gb::recipes::parse_lock(std::string(gbfuzz::text(data, size)), "fuzz/lock.json");
  if (!lock) return 0;
  auto again = gb::recipes::parse_lock(gb::recipes::lock_to_json(*lock), "fuzz/lock.json (written)");
  if (!again || gb::recipes::lock_to_json(*again) != gb::recipes::lock_to_json(*lock)) std::abort();
  return 0;
}
