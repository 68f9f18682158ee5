#pragma once
// Progress reporting is an interface so that the logic that drives it can be
// tested in memory, and so the same run prints an overprinting line on a TTY,
// plain lines in CI logs, and JSON-lines events with --json.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gb {

class Progress {
public:
  virtual ~Progress() = default;
  // A named step begins (e.g. "mirror"); total_bytes may be 0 when unknown.
  virtual void begin(std::string_view phase, std::uint64_t total_bytes) = 0;
  // Bytes that moved since the last call; callers never report negative progress.
  virtual void advance(std::uint64_t bytes) = 0;
  // One item changed state ("nvcr.io/nvidia/driver:... done").
  virtual void item(std::string_view name, std::string_view state) = 0;
  virtual void end(std::string_view summary) = 0;
};

enum class ProgressStyle { Auto, Tty, Plain, Json, None };

// Auto picks Tty when stderr is a terminal and CI is unset, else Plain.
std::unique_ptr<Progress> make_progress(ProgressStyle style);

// Formats 1536 as "1.5 KiB".
std::string human_bytes(std::uint64_t bytes);

}  // namespace gb
