#include "net/retry.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "common/strings.hpp"
#include "net/url.hpp"

namespace gb::net {

bool retryable(const Response& r) {
  if (r.remembered) return false;
  switch (r.error) {
    case NetError::None:
      return r.status == 429 || r.status == 408 || (r.status >= 500 && r.status != 501 && r.status != 505);
    case NetError::Connect:
    case NetError::ConnRefused:
    case NetError::ConnectTimeout:
    case NetError::Broken:
    case NetError::Timeout:
      return true;
    default:
      return false;
  }
}

std::optional<int> retry_after_seconds(std::string_view value, std::time_t now) {
  auto v = trim(value);
  if (v.empty()) return std::nullopt;
  if (v.find_first_not_of("0123456789") == std::string_view::npos) {
    if (v.size() > 5) return 86400;  // a day or more: as long as an HTTP date can ask
    int n = 0;
    for (char c : v) n = n * 10 + (c - '0');
    return n;
  }
  // An HTTP date (IMF-fixdate, RFC 9110 5.6.7): the wait is until then.
  std::tm tm{};
  std::string text(v);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  std::time_t at = timegm(&tm);
  if (at == static_cast<std::time_t>(-1)) return std::nullopt;
  return at > now ? static_cast<int>(std::min<std::time_t>(at - now, 86400)) : 0;
}

std::optional<long> retry_delay_ms(int attempt, int backoff_ms, std::optional<int> retry_after_s, int retry_after_max_s,
                                   double jitter) {
  if (retry_after_s) {
    if (*retry_after_s > retry_after_max_s) return std::nullopt;
    return static_cast<long>(*retry_after_s) * 1000;
  }
  double base = backoff_ms * static_cast<double>(1u << std::clamp(attempt, 0, 10));
  base = std::min(base, 10000.0);
  return static_cast<long>(base * std::clamp(jitter, 0.0, 1.0));
}

std::optional<std::chrono::milliseconds> retry_wait(const RetryPolicy& policy, int attempt, const Response& r,
                                                    std::chrono::milliseconds waited, std::time_t now, double jitter) {
  if (attempt >= policy.retries) return std::nullopt;
  std::optional<int> asked;
  if (r.answered() && (r.status == 429 || r.status == 503)) asked = retry_after_seconds(r.header("retry-after"), now);
  auto ms = retry_delay_ms(attempt, policy.backoff_ms, asked, policy.retry_after_max_s, jitter);
  if (!ms) return std::nullopt;
  auto wait = std::chrono::milliseconds(*ms);
  if (waited + wait > std::chrono::seconds(policy.retry_total_s)) return std::nullopt;
  return wait;
}

double jitter() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.5, 1.0)(rng);
}

void sleep_for(const Clock& clock, std::chrono::milliseconds wait) {
  if (clock.sleep) clock.sleep(wait);
  else std::this_thread::sleep_for(wait);
}

std::time_t now(const Clock& clock) { return clock.now ? clock.now() : std::time(nullptr); }

std::optional<std::string> redirect_target(const std::string& url, Response& r) {
  if (!r.redirect()) return std::nullopt;
  std::string loc = r.header("location");
  if (loc.empty()) return std::nullopt;
  std::string next = resolve_url(url, loc);
  if (!starts_with(next, "https://") && !starts_with(next, "http://")) return std::nullopt;
  if (starts_with(url, "https://") && starts_with(next, "http://")) {
    r.error = NetError::Refused;
    r.error_text = "refused a redirect from https to plain http (" + next + ")";
    return std::nullopt;
  }
  return next;
}

void follow(Request& req, const Response& r, std::string next) {
  if (r.status == 303) {
    req.method = "GET";
    req.body_size = 0;
    req.read_body = nullptr;
  }
  req.url = std::move(next);
}

Response send(Transport& t, Request req, const RetryPolicy& policy, const Clock& clock, const SendHooks& hooks) {
  Response r;
  std::chrono::milliseconds waited{0};
  for (int attempt = 0;; ++attempt) {
    Request hop = req;
    for (int n = 0; n <= k_max_redirects; ++n) {
      if (hooks.before) hooks.before();
      r = t.perform(hop);
      auto next = redirect_target(hop.url, r);
      if (!next) break;
      follow(hop, r, std::move(*next));
    }
    if (!retryable(r)) return r;
    auto wait = retry_wait(policy, attempt, r, waited, now(clock), jitter());
    if (!wait) return r;
    if (hooks.on_retry) hooks.on_retry(r);
    waited += *wait;
    sleep_for(clock, *wait);
  }
}

}  // namespace gb::net
