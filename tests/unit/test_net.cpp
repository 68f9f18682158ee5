// net/retry.hpp: the one retry and redirect policy, and the package fetcher
// on it, against a scripted transport (no sockets, no sleeping); the
// transports' handle pool (net/handle_pool.hpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <thread>

#include "net/handle_pool.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"
#include "packages/packages.hpp"

using namespace gb;
using namespace gb::recipes;
using namespace std::chrono_literals;

namespace {

net::Response answer(long status, std::map<std::string, std::string> headers = {}, std::string body = {}) {
  net::Response r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

net::Response failure(net::NetError e) {
  net::Response r;
  r.error = e;
  r.error_text = "scripted";
  return r;
}

// Answers from `script` in order (the last one repeats); records each request.
class Scripted final : public net::Transport {
public:
  explicit Scripted(std::vector<net::Response> script) : m_script(std::move(script)) {}
  net::Response perform(const net::Request& req) override {
    seen.push_back(req);
    net::Response r = m_script[std::min(seen.size(), m_script.size()) - 1];
    std::string body = std::exchange(r.body, {});
    if (r.answered() && !body.empty()) net::deliver_body(req, r, body);
    return r;
  }
  std::vector<net::Request> seen;

private:
  std::vector<net::Response> m_script;
};

struct FakeClock {
  std::vector<std::chrono::milliseconds> slept;
  net::Clock clock() {
    net::Clock c;
    c.now = [] { return std::time_t(1'800'000'000); };
    c.sleep = [this](std::chrono::milliseconds d) { slept.push_back(d); };
    return c;
  }
};

}  // namespace

TEST_CASE("net: which failures a retry may cure") {
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L, 599L}) CHECK(net::retryable(answer(s)));
  // 501 and 505: the server will never do it; 4xx are answers.
  for (long s : {200L, 301L, 400L, 401L, 403L, 404L, 416L, 501L, 505L}) CHECK_FALSE(net::retryable(answer(s)));
  for (auto e : {net::NetError::Connect, net::NetError::ConnRefused, net::NetError::ConnectTimeout, net::NetError::Broken,
                 net::NetError::Timeout})
    CHECK(net::retryable(failure(e)));
  for (auto e : {net::NetError::Resolve, net::NetError::TlsVerify, net::NetError::TlsHandshake, net::NetError::PlainHttp,
                 net::NetError::TooLarge, net::NetError::Aborted, net::NetError::Refused})
    CHECK_FALSE(net::retryable(failure(e)));
  auto remembered = failure(net::NetError::Connect);
  remembered.remembered = true;
  CHECK_FALSE(net::retryable(remembered));
}

TEST_CASE("net: the wait before a retry") {
  net::RetryPolicy p;
  p.retries = 3;
  p.backoff_ms = 100;
  p.retry_after_max_s = 60;
  p.retry_total_s = 120;
  const std::time_t now = 1'800'000'000;
  // Backoff doubles, times the jitter.
  CHECK(net::retry_wait(p, 0, answer(500), 0ms, now, 1.0) == 100ms);
  CHECK(net::retry_wait(p, 2, answer(500), 0ms, now, 0.5) == 200ms);
  CHECK_FALSE(net::retry_wait(p, 3, answer(500), 0ms, now, 1.0));  // retries spent
  // Retry-After counts on 429 and 503, in seconds or as a date; not on 500.
  CHECK(net::retry_wait(p, 0, answer(429, {{"retry-after", "7"}}), 0ms, now, 1.0) == 7000ms);
  CHECK(net::retry_wait(p, 0, answer(503, {{"retry-after", "Fri, 15 Jan 2027 08:00:10 GMT"}}), 0ms, now, 1.0) == 10000ms);
  CHECK(net::retry_wait(p, 0, answer(500, {{"retry-after", "7"}}), 0ms, now, 1.0) == 100ms);
  // Longer than retry_after_max_s: give up at once, not sleep a minute per request.
  CHECK_FALSE(net::retry_wait(p, 0, answer(429, {{"retry-after", "61"}}), 0ms, now, 1.0));
  // The total across one request's retries.
  CHECK_FALSE(net::retry_wait(p, 0, answer(429, {{"retry-after", "30"}}), 100s, now, 1.0));
}

TEST_CASE("net: where a redirect may go") {
  auto r = answer(302, {{"location", "/v2/b?x=1"}});
  CHECK(net::redirect_target("https://h:5/v2/a", r) == "https://h:5/v2/b?x=1");
  r = answer(307, {{"location", "https://cdn.example/blob"}});
  CHECK(net::redirect_target("http://h/v2/a", r) == "https://cdn.example/blob");  // up to https: fine
  r = answer(301, {{"location", "http://h/v2/a"}});
  CHECK_FALSE(net::redirect_target("https://h/v2/a", r));  // down to plain http: refused
  CHECK(r.error == net::NetError::Refused);
  CHECK(r.error_text.find("https to plain http") != std::string::npos);
  r = answer(302, {{"location", "ftp://h/x"}});
  CHECK_FALSE(net::redirect_target("https://h/v2/a", r));
  CHECK(r.error == net::NetError::None);
  r = answer(302);
  CHECK_FALSE(net::redirect_target("https://h/v2/a", r));  // no Location
  r = answer(200, {{"location", "/elsewhere"}});
  CHECK_FALSE(net::redirect_target("https://h/v2/a", r));  // no redirect
}

TEST_CASE("net: send retries what the policy cures, follows redirects, and restarts streamed bodies") {
  FakeClock fc;
  net::RetryPolicy p;
  p.retries = 4;
  p.backoff_ms = 10;

  SECTION("408 and 503 are retried; the answer after them is returned") {
    Scripted t({answer(408), answer(503, {{"retry-after", "2"}}), answer(200, {}, "ok")});
    int before = 0, retried = 0;
    net::SendHooks hooks;
    hooks.before = [&] { ++before; };
    hooks.on_retry = [&](const net::Response&) { ++retried; };
    net::Request req;
    req.url = "https://h/x";
    auto r = net::send(t, req, p, fc.clock(), hooks);
    CHECK(r.status == 200);
    CHECK(r.body == "ok");
    CHECK(t.seen.size() == 3);
    CHECK(before == 3);
    CHECK(retried == 2);
    REQUIRE(fc.slept.size() == 2);
    CHECK(fc.slept[1] == 2000ms);  // the server's Retry-After
  }
  SECTION("501 is final: one request") {
    Scripted t({answer(501), answer(200)});
    net::Request req;
    req.url = "https://h/x";
    CHECK(net::send(t, req, p, fc.clock()).status == 501);
    CHECK(t.seen.size() == 1);
    CHECK(fc.slept.empty());
  }
  SECTION("the retries run out") {
    Scripted t({failure(net::NetError::Broken)});
    net::Request req;
    req.url = "https://h/x";
    CHECK(net::send(t, req, p, fc.clock()).error == net::NetError::Broken);
    CHECK(t.seen.size() == 5);
  }
  SECTION("a 303 turns a POST into a GET without a body; https -> http stops the chain") {
    Scripted t({answer(303, {{"location", "/done"}}), answer(302, {{"location", "http://h/plain"}})});
    net::Request req;
    req.method = "POST";
    req.url = "https://h/form";
    req.body_size = 3;
    req.read_body = [](std::uint64_t, char*, std::size_t) -> Result<std::size_t> { return std::size_t(0); };
    auto r = net::send(t, req, p, fc.clock());
    REQUIRE(t.seen.size() == 2);
    CHECK(t.seen[1].method == "GET");
    CHECK(t.seen[1].url == "https://h/done");
    CHECK(t.seen[1].body_size == 0);
    CHECK_FALSE(t.seen[1].read_body);
    CHECK(r.error == net::NetError::Refused);
  }
  SECTION("a redirect loop ends after k_max_redirects hops") {
    Scripted t({answer(302, {{"location", "/again"}})});
    net::Request req;
    req.url = "https://h/again";
    auto r = net::send(t, req, p, fc.clock());
    CHECK(r.status == 302);
    CHECK(t.seen.size() == net::k_max_redirects + 1);
  }
}

TEST_CASE("net: the package fetcher is on the same policy") {
  PackageSource src;
  src.name = "ubuntu";
  src.url = "https://archive.example/ubuntu";
  // A 408 was final for the fetcher before it shared the registry's policy.
  Scripted t({answer(408), answer(200, {}, "Origin: Ubuntu\n")});
  auto doc = packages::get_document(t, src, "https://archive.example/ubuntu/dists/jammy/InRelease", 1 << 20);
  REQUIRE(doc.ok());
  CHECK(*doc == "Origin: Ubuntu\n");
  CHECK(t.seen.size() == 2);
  CHECK(t.seen[0].tls != nullptr);  // the source's TLS settings travel with each request

  Scripted gone({answer(410)});
  auto missing = packages::get_optional_document(gone, src, "https://archive.example/ubuntu/dists/jammy/InRelease", 1 << 20);
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  CHECK(gone.seen.size() == 1);
}

TEST_CASE("net: the handle pool gives each origin back its own handles") {
  net::HandlePool<int> pool(3);
  CHECK_FALSE(pool.take("https://registry:443"));
  pool.give("https://registry:443", 1);
  CHECK_FALSE(pool.take("https://storage:443"));  // never another origin's handle
  pool.give("https://registry:443", 2);
  CHECK(pool.take("https://registry:443") == 2);  // the one given back last
  CHECK(pool.take("https://registry:443") == 1);
  CHECK_FALSE(pool.take("https://registry:443"));
  // Past max_idle, the handle idle longest is dropped (its connection closed).
  pool.give("https://registry:443", 1);
  pool.give("https://storage:443", 2);
  pool.give("https://registry:443", 3);
  pool.give("https://storage:443", 4);
  CHECK(pool.idle() == 3);
  CHECK(pool.take("https://registry:443") == 3);
  CHECK_FALSE(pool.take("https://registry:443"));
  CHECK(pool.take("https://storage:443") == 4);
  CHECK(pool.take("https://storage:443") == 2);
}

namespace {

// A transport whose handles each hold one connection, to the origin it last
// talked to (libcurl's easy handle, simplified): a handle taken for another
// origin would connect again. A registry redirects every blob to storage.
class Pooled final : public net::Transport {
public:
  struct Handle {
    std::string connected;  // origin of its open connection
  };
  net::Response perform(const net::Request& req) override {
    auto o = net::url_origin(req.url);
    const std::string origin = o->scheme + "://" + o->host + ":" + std::to_string(o->port);
    int now = ++counts(origin).in_flight;  // before take: a handle of this origin is busy or idle
    for (int peak = counts(origin).peak; now > peak && !counts(origin).peak.compare_exchange_weak(peak, now);) {
    }
    Handle h = m_pool.take(origin).value_or(Handle{});
    if (h.connected != origin) {
      ++counts(origin).connections;
      h.connected = origin;
    }
    std::this_thread::yield();
    net::Response r;
    if (o->host == "registry.test") {
      r.status = 307;
      r.headers["location"] = "https://storage.test/b/" + req.url.substr(req.url.rfind('/') + 1);
    } else {
      r.status = 200;
      net::deliver_body(req, r, "blob");
    }
    m_pool.give(origin, std::move(h));
    --counts(origin).in_flight;
    ++requests;
    return r;
  }
  struct Counts {
    std::atomic<int> in_flight{0}, peak{0}, connections{0};
  };
  Counts& counts(const std::string& origin) { return origin == "https://registry.test:443" ? registry : storage; }
  Counts registry, storage;
  std::atomic<int> requests{0};

private:
  net::HandlePool<Handle> m_pool;
};

}  // namespace

TEST_CASE("net: parallel transfers through redirects open a connection per transfer at once, not per request") {
  Pooled t;
  constexpr int threads = 8, blobs = 40;
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&t, w] {
      for (int i = 0; i < blobs; ++i) {
        net::Request req;
        req.url = "https://registry.test/v2/r/blobs/sha256:" + std::to_string(w * blobs + i);
        CHECK(net::send(t, req, net::RetryPolicy{}).body == "blob");
      }
    });
  for (auto& w : workers) w.join();
  CHECK(t.requests == 2 * threads * blobs);
  for (auto* c : {&t.registry, &t.storage}) {
    CHECK(c->peak <= threads);
    CHECK(c->connections <= c->peak);  // a new connection only when every handle of its origin is busy
  }
}
