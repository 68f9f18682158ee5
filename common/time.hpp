#pragma once
// Time stamps as gpubundle writes them, and the reproducible-builds clock.

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.hpp"

namespace gb {

// RFC 3339 in UTC, to the second: "2026-12-01T13:00:02Z".
std::string rfc3339_utc(std::int64_t seconds_since_epoch);
std::string rfc3339_utc_now();

// $SOURCE_DATE_EPOCH (reproducible-builds.org): nothing when unset or empty,
// else whole seconds since 1970 up to 9999-12-31T23:59:59Z; any other value
// is an input error naming the variable.
Result<std::optional<std::int64_t>> source_date_epoch();

}  // namespace gb
