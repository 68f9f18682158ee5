// The registry client's rules above the transport seam, against a scripted
// fake (no network, no sockets, no sleeping): auth and the token cache,
// Retry-After, Range resume, the endpoint fall-through rule, and which
// redirect hops carry credentials.
#include <catch2/catch.hpp>

#include <atomic>
#include <ctime>
#include <functional>
#include <mutex>
#include <thread>

#include "net/transport.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;

namespace {

// One scripted answer. cut_at: the body stops after that many bytes and the
// connection breaks (NetError::Broken).
struct Reply {
  long status = 200;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::size_t cut_at = std::string::npos;
  net::NetError error = net::NetError::None;
};

struct Seen {
  std::string method;
  std::string url;
  std::vector<std::string> headers;
  std::string header(const std::string& prefix) const {
    for (const auto& h : headers)
      if (h.rfind(prefix, 0) == 0) return h;
    return {};
  }
};

class FakeTransport final : public net::Transport {
public:
  using Script = std::function<Reply(const Seen&)>;
  explicit FakeTransport(Script s) : m_script(std::move(s)) {}

  net::Response perform(const net::Request& req) override {
    Seen s{req.method, req.url, req.headers};
    Reply rep;
    {
      std::lock_guard lock(m_mutex);
      seen.push_back(s);
      rep = m_script(s);
    }
    net::Response r;
    if (rep.error != net::NetError::None) {
      r.error = rep.error;
      r.error_text = "scripted failure";
      return r;
    }
    r.status = rep.status;
    r.headers = rep.headers;
    if (req.method == "HEAD") return r;
    std::string_view body = std::string_view(rep.body).substr(0, rep.cut_at);
    for (std::size_t at = 0; at < body.size(); at += 7)  // small chunks, as a network delivers them
      if (!net::deliver_body(req, r, body.substr(at, 7))) return r;
    if (rep.cut_at != std::string::npos) {
      r.error = net::NetError::Broken;
      r.error_text = "connection cut";
    }
    return r;
  }

  std::vector<Seen> seen;
  std::size_t count(const std::string& url_part) const {
    std::size_t n = 0;
    for (const auto& s : seen) n += s.url.find(url_part) != std::string::npos;
    return n;
  }

private:
  Script m_script;
  std::mutex m_mutex;
};

const std::string k_manifest =
    R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":)"
    R"("application/vnd.oci.image.config.v1+json","digest":"sha256:)" + std::string(64, 'b') + R"(","size":2},"layers":[]})";
const std::string k_blob = [] {
  std::string b;
  for (int i = 0; i < 100; ++i) b.push_back(static_cast<char>('A' + i % 26));
  return b;
}();

Reply manifest_reply() {
  Reply r;
  r.body = k_manifest;
  r.headers = {{"content-type", "application/vnd.oci.image.manifest.v1+json"}, {"docker-content-digest", sha256_digest(k_manifest)}};
  return r;
}
Reply status(long code, std::map<std::string, std::string> headers = {}) {
  Reply r;
  r.status = code;
  r.headers = std::move(headers);
  return r;
}
Reply blob_from(std::size_t offset) {
  Reply r;
  r.status = offset ? 206 : 200;
  r.body = k_blob.substr(offset);
  return r;
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A client on the fake; waits are recorded, never slept.
struct Rig {
  std::shared_ptr<FakeTransport> fake;
  std::vector<long> waits_ms;
  std::time_t now = 1'700'000'000;
  RegistryClient client;

  Rig(FakeTransport::Script script, RegistryConfig config = {}, ClientOptions options = {})
      : fake(std::make_shared<FakeTransport>(std::move(script))),
        client(std::move(config), options, fake,
               net::Clock{[this] { return now; }, [this](std::chrono::milliseconds d) { waits_ms.push_back(static_cast<long>(d.count())); }}) {}
};

Reference image(const std::string& s) { return Reference::parse(s).value_or_throw(); }

RegistryConfig with_mirror() {
  RegistryConfig c;
  c.hosts["reg.test"].mirrors = {"https://mirror.test"};
  return c;
}

}  // namespace

TEST_CASE("transport: a 401 challenge fetches a token and the request is retried with it", "[transport]") {
  Rig rig([](const Seen& s) {
    if (has(s.url, "https://auth.test/token")) {
      Reply t;
      t.body = R"({"token":"T1","expires_in":300})";
      return t;
    }
    if (s.header("Authorization:") != "Authorization: Bearer T1")
      return status(401, {{"www-authenticate", R"(Bearer realm="https://auth.test/token",service="reg.test")"}});
    return manifest_reply();
  });
  auto m = rig.client.get_manifest(image("reg.test/lib/app:v1"));
  REQUIRE(m.ok());
  CHECK(m->digest == sha256_digest(k_manifest));
  REQUIRE(rig.fake->seen.size() == 3);
  CHECK(rig.fake->seen[0].header("Authorization:").empty());
  CHECK(has(rig.fake->seen[1].url, "service=reg.test"));
  CHECK(has(rig.fake->seen[1].url, "scope=repository%3Alib%2Fapp%3Apull"));
  CHECK(rig.fake->seen[2].header("Authorization:") == "Authorization: Bearer T1");
  // The token is cached: the next call goes straight through with it.
  REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
  CHECK(rig.fake->seen.size() == 4);
  CHECK(rig.fake->count("auth.test") == 1);
}

TEST_CASE("transport: parallel first requests to a host meet its challenge once and share one token", "[transport]") {
  std::atomic<int> blocked{0}, started{0};
  Rig rig(
      [&](const Seen& s) {
        if (has(s.url, "https://auth.test/token")) {
          Reply t;
          t.body = R"({"token":"T1","expires_in":300})";
          return t;
        }
        if (s.header("Authorization:") != "Authorization: Bearer T1") {
          // The first one is answered once every worker has started its blob
          // (at most 2 s): the others would reach here too without the gate.
          auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
          while (blocked == 0 && started < 8 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
          ++blocked;
          return status(401, {{"www-authenticate", R"(Bearer realm="https://auth.test/token",service="reg.test")"}});
        }
        return blob_from(0);
      },
      {}, [] {
        ClientOptions o;
        o.max_parallel = o.max_per_host = 8;
        return o;
      }());
  std::vector<BlobRequest> requests;
  for (int i = 0; i < 16; ++i) {
    BlobRequest r;
    r.repo = image("reg.test/lib/app:v1");
    r.digest = sha256_digest(k_blob);
    r.size = k_blob.size();
    r.open_sink = [&started] {
      ++started;
      return std::unique_ptr<BlobSink>(std::make_unique<MemorySink>());
    };
    requests.push_back(std::move(r));
  }
  REQUIRE(rig.client.fetch_blobs(std::move(requests)).ok());
  CHECK(blocked == 1);  // 8 threads, one challenge
  CHECK(rig.fake->count("auth.test") == 1);
  CHECK(rig.fake->seen.size() == 1 + 1 + 16);
}

TEST_CASE("transport: a token that expires mid-run is replaced by a new one", "[transport]") {
  int issued = 0;
  std::string valid;  // the one token the registry takes now
  Rig rig([&](const Seen& s) {
    if (has(s.url, "https://auth.test/token")) {
      valid = "T" + std::to_string(++issued);
      Reply t;
      t.body = R"({"token":")" + valid + R"(","expires_in":300})";
      return t;
    }
    if (s.header("Authorization:") != "Authorization: Bearer " + valid)
      return status(401, {{"www-authenticate", R"(Bearer realm="https://auth.test/token",service="reg.test")"}});
    return manifest_reply();
  });
  REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
  CHECK(issued == 1);
  valid = "revoked";  // the registry no longer takes T1, long before its expires_in
  auto again = rig.client.get_manifest(image("reg.test/lib/app:v1"));
  REQUIRE(again.ok());
  CHECK(issued == 2);
  CHECK(rig.fake->seen.back().header("Authorization:") == "Authorization: Bearer T2");
}

TEST_CASE("transport: Retry-After as seconds and as an HTTP date sets the wait", "[transport]") {
  std::string retry_after;
  int calls = 0;
  auto script = [&](const Seen&) {
    if (++calls == 1) return status(429, {{"retry-after", retry_after}});
    return manifest_reply();
  };
  SECTION("seconds") {
    Rig rig(script);
    retry_after = "3";
    REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
    CHECK(rig.waits_ms == std::vector<long>{3000});
  }
  SECTION("an HTTP date, read against the client's clock") {
    Rig rig(script);
    std::time_t at = rig.now + 7;
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", std::gmtime(&at));
    retry_after = buf;
    REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
    CHECK(rig.waits_ms == std::vector<long>{7000});
  }
  SECTION("longer than gpubundle waits: fails at once, saying so") {
    Rig rig(script);
    retry_after = "100000";
    auto m = rig.client.get_manifest(image("reg.test/lib/app:v1"));
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Failed);
    CHECK(has(m.error().message, "reg.test/lib/app:v1: too many requests (429)"));
    CHECK(has(m.error().message, "retry after 86400 s"));
    CHECK(rig.waits_ms.empty());
    CHECK(calls == 1);
  }
}

TEST_CASE("transport: a cut-off blob resumes with Range where it broke", "[transport]") {
  std::vector<std::string> ranges;
  Rig rig([&](const Seen& s) {
    ranges.push_back(s.header("Range:"));
    if (ranges.size() == 1) {
      Reply r = blob_from(0);
      r.cut_at = 40;
      return r;
    }
    return s.header("Range:") == "Range: bytes=40-" ? blob_from(40) : blob_from(0);
  });
  MemorySink sink;
  std::uint64_t reported = 0;
  auto r = rig.client.fetch_blob(image("reg.test/lib/app"), sha256_digest(k_blob), k_blob.size(), sink,
                                 [&](std::uint64_t n) { reported += n; });
  REQUIRE(r.ok());
  CHECK(sink.data == k_blob);
  CHECK(ranges == std::vector<std::string>{"", "Range: bytes=40-"});
  CHECK(sink.truncations == 1);  // the fresh start only (BlobSink::resume), none on resuming
  CHECK(reported == k_blob.size());  // the progress never counts a byte twice
  CHECK(rig.client.stats().retries == 1);
}

TEST_CASE("transport: a server that ignores Range restarts the blob cleanly", "[transport]") {
  int calls = 0;
  Rig rig([&](const Seen&) {
    Reply r = blob_from(0);  // 200 with the whole body, Range or not
    if (++calls == 1) r.cut_at = 40;
    return r;
  });
  MemorySink sink;
  auto r = rig.client.fetch_blob(image("reg.test/lib/app"), sha256_digest(k_blob), k_blob.size(), sink);
  REQUIRE(r.ok());
  CHECK(sink.data == k_blob);  // not the first 40 bytes twice
  CHECK(sink.truncations == 2);  // the fresh start, then the restart on the 200
  CHECK(calls == 2);  // the 200 restarted at once, no third try after a mismatch
  CHECK(rig.fake->seen[1].header("Range:") == "Range: bytes=40-");
}

TEST_CASE("transport: one fall-through rule for manifests, blobs and tag lists", "[transport]") {
  // The mirror refuses everything (401, no credentials for it), as a
  // misconfigured pull-through cache does; the registry itself has it all.
  auto script = [](const Seen& s) {
    if (has(s.url, "https://mirror.test/")) return status(401, {{"www-authenticate", R"(Basic realm="mirror")"}});
    if (has(s.url, "/manifests/")) return manifest_reply();
    if (has(s.url, "/tags/list")) {
      Reply t;
      t.body = R"({"name":"lib/app","tags":["v1","v2"]})";
      return t;
    }
    return blob_from(0);
  };
  SECTION("manifests") {
    Rig rig(script, with_mirror());
    REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
    auto head = rig.client.head_manifest(image("reg.test/lib/app:v1"));
    REQUIRE(head.ok());
    CHECK(head->value_or("") == sha256_digest(k_manifest));
  }
  SECTION("blobs") {
    Rig rig(script, with_mirror());
    MemorySink sink;
    REQUIRE(rig.client.fetch_blob(image("reg.test/lib/app"), sha256_digest(k_blob), k_blob.size(), sink).ok());
    CHECK(sink.data == k_blob);
    CHECK(rig.fake->count("https://reg.test/v2/lib/app/blobs/") == 1);
  }
  SECTION("tag lists") {
    Rig rig(script, with_mirror());
    auto tags = rig.client.list_tags(image("reg.test/lib/app"));
    REQUIRE(tags.ok());
    CHECK(*tags == std::vector<std::string>{"v1", "v2"});
  }
}

TEST_CASE("transport: bytes that fail verification on a mirror stop the walk", "[transport]") {
  auto script = [](const Seen& s) {
    if (has(s.url, "https://mirror.test/")) {
      Reply r = has(s.url, "/manifests/") ? manifest_reply() : blob_from(0);
      r.body[r.body.size() - 3] ^= 1;  // one flipped bit
      r.headers.erase("docker-content-digest");
      return r;
    }
    return has(s.url, "/manifests/") ? manifest_reply() : blob_from(0);
  };
  ClientOptions o;
  o.retry.retries = 1;
  SECTION("a manifest by digest") {
    Rig rig(script, with_mirror(), o);
    auto m = rig.client.get_manifest(image("reg.test/lib/app@" + sha256_digest(k_manifest)));
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().kind == ErrorKind::Failed);
    CHECK(has(m.error().message, "not the requested digest"));
    CHECK(rig.fake->count("https://reg.test/") == 0);
  }
  SECTION("a blob") {
    Rig rig(script, with_mirror(), o);
    MemorySink sink;
    auto r = rig.client.fetch_blob(image("reg.test/lib/app"), sha256_digest(k_blob), k_blob.size(), sink);
    REQUIRE_FALSE(r.ok());
    CHECK(has(r.error().message, "corrupt download"));
    CHECK(rig.fake->count("https://reg.test/") == 0);
  }
}

TEST_CASE("transport: a 404 everywhere is 'not found' for HEAD and one clear line for GET", "[transport]") {
  Rig rig([](const Seen&) { return status(404); }, with_mirror());
  auto head = rig.client.head_manifest(image("reg.test/lib/app:v1"));
  REQUIRE(head.ok());
  CHECK_FALSE(head->has_value());
  auto m = rig.client.get_manifest(image("reg.test/lib/app:v1"));
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().kind == ErrorKind::Failed);
  CHECK(m.error().message == "reg.test/lib/app:v1: manifest unknown (404)");
  CHECK(rig.fake->count("https://mirror.test/") == 2);
  CHECK(rig.fake->count("https://reg.test/") == 2);
}

TEST_CASE("transport: redirects carry Authorization to the same origin only", "[transport]") {
  for (std::string target : {"https://storage.test/b?sig=1", "/same-origin-copy", "https://reg.test:443/same-origin-copy",
                             "http://reg.test/same-origin-copy"}) {
    CAPTURE(target);
    Rig rig([&](const Seen& s) {
      if (has(s.url, "https://auth.test/token")) {
        Reply t;
        t.body = R"({"token":"SECRET","expires_in":300})";
        return t;
      }
      if (has(s.url, "https://storage.test/") || has(s.url, "/same-origin-copy")) return blob_from(0);
      if (s.header("Authorization:").empty())
        return status(401, {{"www-authenticate", R"(Bearer realm="https://auth.test/token",service="reg.test")"}});
      return status(307, {{"location", target}});
    });
    MemorySink sink;
    auto r = rig.client.fetch_blob(image("reg.test/lib/app"), sha256_digest(k_blob), k_blob.size(), sink);
    const Seen& last = rig.fake->seen.back();
    if (target.rfind("http://", 0) == 0) {
      // https -> http is refused, never sent.
      REQUIRE_FALSE(r.ok());
      CHECK(has(r.error().message, "refused a redirect from https to plain http"));
      CHECK(rig.fake->count("http://reg.test") == 0);
      continue;
    }
    REQUIRE(r.ok());
    CHECK(sink.data == k_blob);
    bool same_origin = target.rfind("https://storage.test", 0) != 0;
    CHECK(has(last.url, same_origin ? "https://reg.test" : "https://storage.test/b?sig=1"));
    CHECK(last.header("Authorization:") == (same_origin ? "Authorization: Bearer SECRET" : ""));
  }
}

TEST_CASE("transport: a TLS handshake refused by a plain HTTP server is told apart by asking it in plain HTTP", "[transport]") {
  auto handshake_failed = [] {
    net::Response r;
    r.error = net::NetError::TlsHandshake;
    r.error_text = "OpenSSL: wrong version number";
    return r;
  };
  net::Request req;
  req.url = "https://user:pw@reg.test:5000/v2/lib/app/manifests/v1?x=1";

  SECTION("an HTTP answer on the same port: PlainHttp, and the probe carries no path, query or userinfo") {
    FakeTransport plain([](const Seen&) { return status(200); });
    net::Response r = handshake_failed();
    net::classify_tls_failure(plain, req, r);
    CHECK(r.error == net::NetError::PlainHttp);
    REQUIRE(plain.seen.size() == 1);
    CHECK(plain.seen[0].method == "GET");
    CHECK(plain.seen[0].url == "http://reg.test:5000/v2/");
  }
  SECTION("a 401 or 404 is an HTTP answer too") {
    FakeTransport plain([](const Seen&) { return status(404); });
    net::Response r = handshake_failed();
    net::classify_tls_failure(plain, req, r);
    CHECK(r.error == net::NetError::PlainHttp);
  }
  SECTION("no HTTP answer either: the handshake failure stays") {
    FakeTransport silent([](const Seen&) {
      Reply rep;
      rep.error = net::NetError::Broken;
      return rep;
    });
    net::Response r = handshake_failed();
    net::classify_tls_failure(silent, req, r);
    CHECK(r.error == net::NetError::TlsHandshake);
  }
  SECTION("only a TLS handshake failure of an https URL is probed") {
    FakeTransport plain([](const Seen&) { return status(200); });
    net::Response refused;
    refused.error = net::NetError::ConnRefused;
    net::classify_tls_failure(plain, req, refused);
    net::Request over_http;
    over_http.url = "http://reg.test:5000/v2/";
    net::Response r = handshake_failed();
    net::classify_tls_failure(plain, over_http, r);
    CHECK(plain.seen.empty());
    CHECK(refused.error == net::NetError::ConnRefused);
    CHECK(r.error == net::NetError::TlsHandshake);
  }
}

TEST_CASE("transport: a host that cannot be talked to is one line with the fix, asked once", "[transport]") {
  auto failing = [](net::NetError e) {
    return [e](const Seen& s) {
      if (s.url.rfind("https://site.test", 0) != 0) return status(404);
      Reply rep;
      rep.error = e;
      return rep;
    };
  };
  struct Case {
    net::NetError error;
    const char* words;
    std::size_t first_call_requests;  // retried or not
  };
  ClientOptions options;
  options.retry.retries = 2;
  for (const Case& c : {Case{net::NetError::PlainHttp, "site.test answered plain HTTP to a TLS hello: use http://site.test", 1},
                        Case{net::NetError::ConnRefused, "site.test refused the connection (nothing listens on that port)", 3},
                        Case{net::NetError::ConnectTimeout, "site.test did not answer before the connect timeout", 3},
                        Case{net::NetError::Resolve, "unknown host site.test (it does not resolve)", 1},
                        Case{net::NetError::TlsVerify, "caFile for site.test in --registry-config", 1}}) {
    CAPTURE(c.words);
    Rig rig(failing(c.error), {}, options);
    std::vector<std::string> lines;
    for (const char* name : {"site.test/a:1", "site.test/b:1", "site.test/c:1"}) {
      auto head = rig.client.head_manifest(image(name));
      REQUIRE_FALSE(head.ok());
      CHECK(head.error().kind == ErrorKind::Failed);
      CHECK(has(head.error().message, c.words));
      lines.push_back(head.error().message);
      if (lines.size() == 1) CHECK(rig.fake->seen.size() == c.first_call_requests);
    }
    CHECK(rig.fake->seen.size() == c.first_call_requests);  // the other images asked nothing
    auto hosts = rig.client.host_problems();
    REQUIRE(hosts.size() == 1);
    CHECK(has(hosts[0], c.words));
    lines.push_back("other.test/x:1: manifest unknown (404)");
    auto told = rig.client.by_host(lines);
    REQUIRE(told.size() == 2);
    CHECK(told[0] == hosts[0]);
    CHECK(told[1] == "other.test/x:1: manifest unknown (404)");
  }
}

TEST_CASE("transport: a dead mirror is asked once, and only its own line when the host answers", "[transport]") {
  RegistryConfig config = with_mirror();
  Rig rig(
      [](const Seen& s) {
        if (s.url.rfind("https://mirror.test", 0) == 0) {
          Reply rep;
          rep.error = net::NetError::PlainHttp;
          return rep;
        }
        return manifest_reply();
      },
      config);
  for (int i = 0; i < 3; ++i) REQUIRE(rig.client.get_manifest(image("reg.test/lib/app:v1")).ok());
  CHECK(rig.fake->count("https://mirror.test/") == 1);
  CHECK(rig.fake->count("https://reg.test/") == 3);
  auto hosts = rig.client.host_problems();
  REQUIRE(hosts.size() == 1);
  CHECK(has(hosts[0], "mirror.test answered plain HTTP"));
  // No failure line mentions it: by_host still leads with it, so a failed run says why the mirror was skipped.
  CHECK(rig.client.by_host({"x"}) == std::vector<std::string>{hosts[0], "x"});
}
