#include "common/time.hpp"

#include <charconv>
#include <cstdlib>
#include <ctime>

#include "common/strings.hpp"

namespace gb {

namespace {
// The last second with a four-digit year, as RFC 3339 requires.
constexpr std::int64_t k_max_rfc3339 = 253402300799;
}  // namespace

std::string rfc3339_utc(std::int64_t seconds_since_epoch) {
  std::time_t t = static_cast<std::time_t>(seconds_since_epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string rfc3339_utc_now() { return rfc3339_utc(static_cast<std::int64_t>(std::time(nullptr))); }

Result<std::optional<std::int64_t>> source_date_epoch() {
  const char* v = std::getenv("SOURCE_DATE_EPOCH");
  if (!v || !*v) return std::optional<std::int64_t>{};
  std::string_view text(v);
  std::int64_t t = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), t);
  if (!is_digits(text) || r.ec != std::errc() || r.ptr != text.data() + text.size() || t > k_max_rfc3339)
    return input_error("SOURCE_DATE_EPOCH=" + quote(text, 40) +
                       " is not a time: it must be whole seconds since 1970-01-01 UTC, at most " +
                       std::to_string(k_max_rfc3339) + " (or unset)");
  return std::optional<std::int64_t>{t};
}

}  // namespace gb
