// Image references (recipes/reference.hpp): from recipes, locks, bundles and
// --registry. A reference that parses must parse again from its str().
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "recipes/reference.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = gbfuzz::text(data, size);
  (void)gb::recipes::is_valid_tag(in);
  auto ref = gb::recipes::Reference::parse(in);
  if (!ref) return 0;
  auto again = gb::recipes::Reference::parse(ref->str());
  if (!again || !(*again == *ref)) std::abort();
  (void)ref->pinned();
  (void)ref->rehomed("registry.site.internal:5000", "gpu", true).str();
  return 0;
}
