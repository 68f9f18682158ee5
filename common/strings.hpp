#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace gb {

std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_lower(std::string_view s);

// Fills a template: every "@KEY@" becomes vars[KEY], in one pass, so text a
// value brings in is never searched for tokens; "@..@" spans whose name is
// not in vars are left as they are.
std::string fill_template(std::string_view text, const std::map<std::string, std::string>& vars);

// A size as people type it: "4G", "700M", "512K", "1000000". K/M/G/T are
// powers of two, and "4GB", "4Gi", "4GiB" all mean 4 GiB. Zero is refused.
Result<std::uint64_t> parse_size(std::string_view text);

// Numeric comparison of dotted versions: "550.54.14" < "550.127.08". A leading
// "v" is ignored; non-numeric parts compare as strings.
int compare_versions(std::string_view a, std::string_view b);

// Shape checks written by hand: std::regex recurses once per character and
// overflows the stack on long input. All of them are false for "".
bool is_digits(std::string_view s);  // [0-9]+
// Between min_parts and max_parts digit runs joined by '.': "550.127.08".
bool is_dotted_number(std::string_view s, size_t min_parts, size_t max_parts);
// [a-z0-9]([-a-z0-9.]*[a-z0-9])? : a Kubernetes object name's characters.
bool is_lower_name(std::string_view s);
// [A-Za-z0-9][A-Za-z0-9<extra>]* : a word safe in file names and scripts.
bool is_word(std::string_view s, std::string_view extra);

// Whether JSON text opens more than `levels` objects and arrays inside one
// another, scanned as a lexer would (brackets in strings do not count). Read
// before parsing: nlohmann's DOM recurses in dump() and its destructor, and
// its depth callback rescans the parent after every object, which is
// quadratic in an array of objects. Says nothing of whether TEXT is JSON.
bool json_nests_deeper_than(std::string_view text, int levels);

// An untrusted value for a message: in single quotes, control characters and
// NUL escaped (\n, \x00), cut after max_chars with "... (N bytes)".
std::string quote(std::string_view value, size_t max_chars = 200);
// A whole message line made safe to print: control characters escaped, each
// run without spaces cut after 256 bytes and the line after 4096 bytes.
std::string bounded_line(std::string_view message);

}  // namespace gb
