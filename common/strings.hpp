#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gb {

std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_lower(std::string_view s);

// Numeric comparison of dotted versions: "550.54.14" < "550.127.08". A leading
// "v" is ignored; non-numeric parts compare as strings.
int compare_versions(std::string_view a, std::string_view b);

}  // namespace gb
