#include "recipes/yaml_input.hpp"

#include <map>
#include <set>
#include <vector>

#include "common/strings.hpp"

namespace gb::recipes {

namespace {

// The first duplicate key in any mapping of the tree, as an error message.
// Iterative, and each collection is visited once: an alias points at a node
// already seen, so a "billion laughs" document costs no more than its text.
std::string find_duplicate_key(const YAML::Node& root, const std::string& label) {
  std::vector<YAML::Node> todo{root};
  std::set<int> seen;  // collections by their position in the text
  while (!todo.empty()) {
    YAML::Node node = todo.back();
    todo.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (!seen.insert(node.Mark().pos).second) continue;
    if (node.IsSequence()) {
      for (const auto& item : node) todo.push_back(item);
      continue;
    }
    std::map<std::string, int> keys;  // key -> line
    for (const auto& kv : node) {
      const YAML::Node& key = kv.first;
      if (key.IsScalar()) {
        int line = key.Mark().line + 1;
        auto [it, fresh] = keys.emplace(key.Scalar(), line);
        if (!fresh)
          return label + ":" + std::to_string(line) + ": duplicate key " + quote(key.Scalar()) + " (first at line " +
                 std::to_string(it->second) + ")";
      } else {
        todo.push_back(key);
      }
      todo.push_back(kv.second);
    }
  }
  return "";
}

}  // namespace

YAML::Node load_yaml_last_wins(const std::string& text) {
  YAML::Node root = YAML::Load(text);
  std::vector<YAML::Node> todo{root};
  std::set<int> seen;  // as above: aliases are visited once
  while (!todo.empty()) {
    YAML::Node node = todo.back();
    todo.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (!seen.insert(node.Mark().pos).second) continue;
    if (node.IsMap()) {
      std::set<std::string> keys;
      bool twice = false;
      for (const auto& kv : node)
        if (kv.first.IsScalar() && !keys.insert(kv.first.Scalar()).second) twice = true;
      if (twice) {
        // Rebuilt in order; assigning a scalar key again replaces its value.
        YAML::Node last(YAML::NodeType::Map);
        for (const auto& kv : node) {
          if (kv.first.IsScalar()) last[kv.first.Scalar()] = kv.second;
          else last[kv.first] = kv.second;
        }
        node = last;  // rebinds the node in place, so its parent sees it
      }
      for (const auto& kv : node) {
        todo.push_back(kv.first);
        todo.push_back(kv.second);
      }
    } else {
      for (const auto& item : node) todo.push_back(item);
    }
  }
  return root;
}

Result<YAML::Node> load_yaml_input(const std::string& text, const std::string& label) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return input_error(label + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) +
                       ": YAML syntax error: " + e.msg);
  }
  if (auto dup = find_duplicate_key(root, label); !dup.empty()) return input_error(dup);
  return root;
}

}  // namespace gb::recipes
