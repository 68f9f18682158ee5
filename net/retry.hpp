#pragma once
// The one retry and redirect policy of every HTTP client here (the registry
// session, the package fetcher): which failures a retry may cure, how long
// to wait, where a redirect may go. Plain logic over Response, driven in unit
// tests by a scripted Transport (tests/unit/test_net.cpp).

#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "net/transport.hpp"

namespace gb::net {

struct RetryPolicy {
  int retries = 4;             // per request, after the first attempt
  int backoff_ms = 250;        // the first wait; doubles per retry (with jitter), capped at 10 s
  int retry_after_max_s = 60;  // a 429/503 asking to come back later than this fails at once
  int retry_total_s = 120;     // at most this long spent waiting between the retries of one request
};

// A failure a retry may cure: no connection yet, a stall, a broken exchange;
// 408, 429, and 5xx but 501 and 505 (the server will never do it). Failures
// of the host itself (its name, its TLS) and any other status are final, as
// is a response remembered from an earlier failure of its host.
bool retryable(const Response& r);

// Seconds from a Retry-After header: delta-seconds, or an HTTP date (the
// seconds from `now` until then, 0 when past), at most 86400; nullopt when
// unreadable.
std::optional<int> retry_after_seconds(std::string_view value, std::time_t now = std::time(nullptr));

// How long to wait before retry number `attempt` (0-based): the server's
// Retry-After when it gave one, else backoff_ms doubled per attempt, capped at
// 10 s, times jitter (0.5..1). nullopt = do not retry: the server asks for
// more than retry_after_max_s (waiting that long for one request helps nobody).
std::optional<long> retry_delay_ms(int attempt, int backoff_ms, std::optional<int> retry_after_s, int retry_after_max_s,
                                   double jitter);

// The wait before retry number `attempt` after `r`, `waited` having been
// spent on this request's earlier retries; nullopt = give up: the retries are
// spent, the server asks for too long (Retry-After, read on 429 and 503), or
// the total would pass retry_total_s.
std::optional<std::chrono::milliseconds> retry_wait(const RetryPolicy& policy, int attempt, const Response& r,
                                                    std::chrono::milliseconds waited, std::time_t now, double jitter);

// A jitter factor in [0.5, 1), per thread.
double jitter();

// Sleeps on the clock's sleep, or the real one.
void sleep_for(const Clock& clock, std::chrono::milliseconds wait);
std::time_t now(const Clock& clock);

constexpr int k_max_redirects = 10;

// Where a redirect sends its request next: the Location resolved against
// `url`. nullopt when `r` is no redirect, or names no http(s) target; a
// redirect from https to http is refused (r.error = Refused, r says why).
std::optional<std::string> redirect_target(const std::string& url, Response& r);

// Follows one redirect in `req`: the new URL, and a 303 turns it into a GET
// without a body.
void follow(Request& req, const Response& r, std::string next);

// One request under the policy, for clients with no rule per hop (the
// package fetcher): redirects followed, retryable failures retried. `before`
// runs before every exchange (a streamed body starts over); `on_retry` is told
// of each retry before its wait.
struct SendHooks {
  std::function<void()> before;
  std::function<void(const Response&)> on_retry;
};
Response send(Transport& t, Request req, const RetryPolicy& policy, const Clock& clock = {}, const SendHooks& hooks = {});

}  // namespace gb::net
