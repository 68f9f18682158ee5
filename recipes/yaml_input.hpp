#pragma once
// YAML that gpubundle reads as input: the recipe, the registry config and the
// embedded catalog. yaml-cpp keeps both entries of a key written twice in one
// mapping; node["key"] sees the first and a loop over the mapping sees both,
// so two readers of one file could disagree on what it says. Input YAML
// refuses duplicate keys instead. Chart values are upstream data that Helm
// reads leniently (the last entry wins), so charts do not load through here.

#include <string>
#include <yaml-cpp/yaml.h>

#include "common/error.hpp"

namespace gb::recipes {

// The document in `text`. Errors are one line naming `label` and the line:
// "recipe.yaml:7: duplicate key 'os' (first at line 5)".
Result<YAML::Node> load_yaml_input(const std::string& text, const std::string& label);

// Upstream YAML read as Helm reads it (chart values): a key written twice in
// one mapping keeps its last entry, so node["key"] agrees with what Helm
// renders. Throws YAML::Exception on a syntax error, like YAML::Load.
YAML::Node load_yaml_last_wins(const std::string& text);

}  // namespace gb::recipes
