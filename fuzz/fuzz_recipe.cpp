// Recipe YAML (recipes/recipe.hpp): what `resolve` and `build` read first.
#include "fuzz/fuzz_input.hpp"
#include "recipes/recipe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = gb::recipes::parse_recipe(std::string(gbfuzz::text(data, size)), "fuzz/recipe.yaml");
  if (r) (void)r->where("driver.version");
  return 0;
}
