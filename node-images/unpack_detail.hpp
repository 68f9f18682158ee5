#pragma once
// Private header: include it from node-images .cpp files only (it names
// libarchive's handle). The entry loop behind unpack.hpp, for readers opened
// elsewhere (the makeself payload in installer.cpp).

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "node-images/unpack.hpp"

struct archive;

namespace gb::node_images::detail {

// Writes every entry of the open reader `in` under `dest` (created) by the
// rules of unpack.hpp; `source` names the input in errors. Returns the
// number of entries written.
Result<std::uint64_t> unpack_entries(archive* in, const std::filesystem::path& dest, const std::string& source,
                                     const UnpackLimits& limits);

}  // namespace gb::node_images::detail
