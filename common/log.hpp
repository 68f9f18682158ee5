#pragma once
// Diagnostics go to stderr so that stdout stays clean for --json results.
// Every line is printed through bounded_line() (common/strings.hpp): control
// characters escaped, long values cut, so hostile input cannot flood or forge output.
// Never pass a secret to these functions: use redact_url() on URLs first.

#include <string>
#include <string_view>

namespace gb {

enum class LogLevel { Quiet = 0, Normal = 1, Verbose = 2 };

void set_log_level(LogLevel level);
LogLevel log_level();

void log_info(std::string_view message);     // hidden by --quiet
void log_verbose(std::string_view message);  // shown with --verbose
void log_warn(std::string_view message);     // always shown, "warning: " prefix
void log_error(std::string_view message);    // always shown, "error: " prefix

// Count of warnings printed so far, for summaries.
int warning_count();

// "https://user:pw@host/x?token=..." -> "https://***@host/x?token=***".
std::string redact_url(std::string_view url);

}  // namespace gb
