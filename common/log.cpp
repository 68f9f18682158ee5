#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "common/strings.hpp"

namespace gb {

namespace {
std::atomic<LogLevel> g_log_level{LogLevel::Normal};
std::atomic<int> g_warnings{0};
std::mutex g_log_mutex;

// Messages quote untrusted values (names from recipes, bundles, registries):
// each printed line is bounded and free of control characters. Info and
// verbose text may span lines on purpose; a warning or error is one line.
void emit_log(std::string_view prefix, std::string_view message, bool one_line) {
  std::string text(prefix);
  size_t start = 0;
  while (true) {
    size_t end = one_line ? std::string_view::npos : message.find('\n', start);
    text += bounded_line(message.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    text += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::lock_guard lock(g_log_mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
}
}  // namespace

void set_log_level(LogLevel level) { g_log_level = level; }
LogLevel log_level() { return g_log_level; }

void log_info(std::string_view message) {
  if (g_log_level >= LogLevel::Normal) emit_log("", message, false);
}
void log_verbose(std::string_view message) {
  if (g_log_level >= LogLevel::Verbose) emit_log("", message, false);
}
void log_warn(std::string_view message) {
  ++g_warnings;
  emit_log("warning: ", message, true);
}
void log_error(std::string_view message) { emit_log("error: ", message, true); }
int warning_count() { return g_warnings; }

std::string redact_url(std::string_view url) {
  std::string out(url);
  auto scheme = out.find("://");
  auto start = scheme == std::string::npos ? 0 : scheme + 3;
  auto at = out.find('@', start);
  auto slash = out.find('/', start);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) out.replace(start, at - start, "***");
  for (std::string key : {"token=", "password=", "access_token=", "refresh_token="}) {
    size_t pos = 0;
    while ((pos = out.find(key, pos)) != std::string::npos) {
      pos += key.size();
      size_t end = out.find('&', pos);
      out.replace(pos, (end == std::string::npos ? out.size() : end) - pos, "***");
    }
  }
  return out;
}

}  // namespace gb
