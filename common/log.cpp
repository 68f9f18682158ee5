#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace gb::log {

namespace {
std::atomic<Level> g_level{Level::Normal};
std::atomic<int> g_warnings{0};
std::mutex g_mutex;

void emit(std::string_view prefix, std::string_view message) {
  std::lock_guard lock(g_mutex);
  std::fprintf(stderr, "%.*s%.*s\n", static_cast<int>(prefix.size()), prefix.data(),
               static_cast<int>(message.size()), message.data());
}
}  // namespace

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }

void info(std::string_view message) {
  if (g_level >= Level::Normal) emit("", message);
}
void verbose(std::string_view message) {
  if (g_level >= Level::Verbose) emit("", message);
}
void warn(std::string_view message) {
  ++g_warnings;
  emit("warning: ", message);
}
void error(std::string_view message) { emit("error: ", message); }
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

}  // namespace gb::log
