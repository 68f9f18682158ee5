#include "common/progress.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unistd.h>

#include "common/strings.hpp"

namespace gb {

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

namespace {

// Item names come from locks, bundles and registries: bounded and escaped
// like every log line, so a hostile name cannot flood or rewrite the terminal.
std::string item_line(std::string_view name, std::string_view state) {
  return bounded_line(std::string(state) + " " + std::string(name));
}

using Clock = std::chrono::steady_clock;

class Base : public Progress {
public:
  void advance(std::uint64_t bytes) override {
    std::lock_guard l(m_mutex);
    m_done += bytes;
  }

protected:
  std::mutex m_mutex;
  std::string m_phase;
  std::uint64_t m_total = 0;
  std::uint64_t m_done = 0;
  Clock::time_point m_start = Clock::now();

  double seconds() const { return std::chrono::duration<double>(Clock::now() - m_start).count(); }
  void reset(std::string_view phase, std::uint64_t total) {
    m_phase = phase;
    m_total = total;
    m_done = 0;
    m_start = Clock::now();
  }
};

class TtyProgress final : public Base {
  Clock::time_point m_last_draw{};
  void draw(bool force) {
    auto now = Clock::now();
    if (!force && now - m_last_draw < std::chrono::milliseconds(100)) return;
    m_last_draw = now;
    double s = seconds();
    double rate = s > 0 ? static_cast<double>(m_done) / s : 0;
    std::string line = m_phase + ": " + human_bytes(m_done);
    if (m_total) line += " / " + human_bytes(m_total);
    line += "  " + human_bytes(static_cast<std::uint64_t>(rate)) + "/s";
    if (m_total && rate > 0 && m_done < m_total) {
      line += "  ETA " + std::to_string(static_cast<int>(static_cast<double>(m_total - m_done) / rate)) + "s";
    }
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
  }

public:
  void begin(std::string_view phase, std::uint64_t total) override {
    std::lock_guard l(m_mutex);
    reset(phase, total);
    draw(true);
  }
  void advance(std::uint64_t bytes) override {
    std::lock_guard l(m_mutex);
    m_done += bytes;
    draw(false);
  }
  void item(std::string_view name, std::string_view state) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "\r\033[K  %s\n", item_line(name, state).c_str());
    draw(true);
  }
  void end(std::string_view summary) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "\r\033[K%s\n", bounded_line(m_phase + ": " + std::string(summary)).c_str());
  }
};

class PlainProgress final : public Base {
public:
  void begin(std::string_view phase, std::uint64_t total) override {
    std::lock_guard l(m_mutex);
    reset(phase, total);
    std::fprintf(stderr, "%s: started%s\n", m_phase.c_str(), total ? (" (" + human_bytes(total) + ")").c_str() : "");
  }
  void item(std::string_view name, std::string_view state) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "  %s\n", item_line(name, state).c_str());
  }
  void end(std::string_view summary) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "%s (%.1fs)\n", bounded_line(m_phase + ": " + std::string(summary)).c_str(), seconds());
  }
};

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// JSON-lines events on stderr; stdout carries the final --json result.
class JsonProgress final : public Base {
public:
  void begin(std::string_view phase, std::uint64_t total) override {
    std::lock_guard l(m_mutex);
    reset(phase, total);
    std::fprintf(stderr, "{\"event\":\"begin\",\"phase\":\"%s\",\"totalBytes\":%llu}\n", json_escape(phase).c_str(),
                 static_cast<unsigned long long>(total));
  }
  void item(std::string_view name, std::string_view state) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "{\"event\":\"item\",\"phase\":\"%s\",\"name\":\"%s\",\"state\":\"%s\",\"doneBytes\":%llu}\n",
                 json_escape(m_phase).c_str(), json_escape(name).c_str(), json_escape(state).c_str(),
                 static_cast<unsigned long long>(m_done));
  }
  void end(std::string_view summary) override {
    std::lock_guard l(m_mutex);
    std::fprintf(stderr, "{\"event\":\"end\",\"phase\":\"%s\",\"summary\":\"%s\",\"seconds\":%.3f}\n",
                 json_escape(m_phase).c_str(), json_escape(summary).c_str(), seconds());
  }
};

class NullProgress final : public Progress {
public:
  void begin(std::string_view, std::uint64_t) override {}
  void advance(std::uint64_t) override {}
  void item(std::string_view, std::string_view) override {}
  void end(std::string_view) override {}
};

}  // namespace

std::unique_ptr<Progress> make_progress(ProgressStyle style) {
  if (style == ProgressStyle::Auto) {
    bool ci = std::getenv("CI") != nullptr;
    style = (!ci && ::isatty(STDERR_FILENO)) ? ProgressStyle::Tty : ProgressStyle::Plain;
  }
  switch (style) {
    case ProgressStyle::Tty: return std::make_unique<TtyProgress>();
    case ProgressStyle::Json: return std::make_unique<JsonProgress>();
    case ProgressStyle::None: return std::make_unique<NullProgress>();
    default: return std::make_unique<PlainProgress>();
  }
}

}  // namespace gb
