// Live tests: the registry client against real docker-registry instances
// started by tests/tools/registry.py on 127.0.0.1 (plain, TLS, htpasswd,
// token) and seeded by tests/tools/seed.py. Skipped when docker-registry is
// not installed. Its own binary (registry_live_tests, CTest registry-live):
// unit_tests stays in memory; the same rules against a scripted fake are in
// tests/unit/test_registry_client.cpp.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include "fixtures.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::mirror;
using namespace gb::recipes;
using namespace gb::signing;
using gbtest::spit;
using gbtest::TempDir;
using nlohmann::json;

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) FAIL("command failed (" << rc << "): " << cmd << "\n" << out);
  return out;
}

bool have_registry() { return std::system("command -v docker-registry >/dev/null 2>&1") == 0; }

#define GB_REQUIRE_REGISTRY()                                                 \
  do {                                                                        \
    if (!have_registry()) {                                                   \
      WARN("skipped: docker-registry is not installed (apt install docker-registry)"); \
      return;                                                                 \
    }                                                                         \
  } while (0)

const std::string k_tools = std::string(GB_SOURCE_DIR) + "/tests/tools/";

// Registries under one folder, all stopped when the object dies (even when a check fails).
class Registries {
public:
  ~Registries() { std::system(("/usr/bin/python3 " + k_tools + "registry.py stop --dir " + m_dir.path().string() + " >/dev/null 2>&1").c_str()); }
  json start(const std::string& name, const std::string& flags = "") {
    auto out = run("/usr/bin/python3 " + k_tools + "registry.py start --dir " + m_dir.path().string() + " --name " + name +
                   " " + flags);
    return json::parse(out);
  }
  json seed(const json& reg, const std::string& flags = "--set small") {
    std::string cmd = "/usr/bin/python3 " + k_tools + "seed.py --registry " + reg["host"].get<std::string>() + " " + flags;
    if (reg["ca"].is_string()) cmd += " --ca " + reg["ca"].get<std::string>();
    else cmd += " --plain-http";
    if (reg["username"].is_string())
      cmd += " --user " + reg["username"].get<std::string>() + " --password " + reg["password"].get<std::string>();
    return json::parse(run(cmd));
  }
  std::string tool(const std::string& args) { return run("/usr/bin/python3 " + k_tools + args); }
  const TempDir& dir() const { return m_dir; }

private:
  TempDir m_dir;
};

class StringSource : public BlobSource {
public:
  explicit StringSource(std::string d) : data(std::move(d)) {}
  std::uint64_t size() const override { return data.size(); }
  Result<std::size_t> read(std::uint64_t offset, char* buf, std::size_t len) override {
    if (offset >= data.size()) return std::size_t{0};
    std::size_t n = std::min<std::size_t>(len, data.size() - offset);
    std::memcpy(buf, data.data() + offset, n);
    return n;
  }
  std::string data;
};

std::string pseudo_random(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  unsigned x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

Reference parse_ref(const std::string& s) { return Reference::parse(s).value(); }

RegistryConfig config_for(const json& reg, const TempDir& dir, const std::string& extra = "") {
  std::string host = reg["host"].get<std::string>();
  std::string yaml = "hosts:\n  \"" + host + "\":\n";
  if (reg["ca"].is_string()) yaml += "    caFile: " + reg["ca"].get<std::string>() + "\n";
  else yaml += "    plainHttp: true\n";
  yaml += extra;
  auto file = dir / ("registries-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml");
  spit(file, yaml);
  auto cfg = RegistryConfig::load(file);
  REQUIRE(cfg.ok());
  return cfg.value();
}

ClientOptions fast_options() {
  ClientOptions o;
  o.retry.backoff_ms = 20;
  o.stall_timeout_s = 5;
  return o;
}

// Pulls every seeded image: index -> manifests -> config and layers, all verified.
std::uint64_t pull_all(RegistryClient& client, const json& images) {
  std::vector<BlobRequest> blobs;
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (auto& img : images) {
    auto r = parse_ref(img["ref"].get<std::string>());
    auto m = client.get_manifest(r);
    REQUIRE(m.ok());
    CHECK(m->digest == img["digest"].get<std::string>());
    CHECK(m->media_type == img["mediaType"].get<std::string>());
    auto head = client.head_manifest(r);
    REQUIRE(head.ok());
    CHECK(head.value() == m->digest);
    std::vector<oci::Manifest> manifests;
    if (m->index()) {
      for (auto& d : m->manifests) {
        Reference child = r;
        child.tag.clear();
        child.digest = d.digest;
        auto cm = client.get_manifest(child);
        REQUIRE(cm.ok());
        CHECK(cm->bytes.size() == d.size);
        manifests.push_back(std::move(cm.value()));
      }
    } else {
      manifests.push_back(std::move(m.value()));
    }
    for (auto& im : manifests) {
      std::vector<oci::Descriptor> ds = im.layers;
      ds.push_back(im.config);
      for (auto& d : ds) {
        if (!seen.insert(d.digest).second) continue;
        total += d.size;
        BlobRequest br;
        br.repo = r;
        br.digest = d.digest;
        br.size = d.size;
        br.open_sink = [] { return std::make_unique<MemorySink>(); };
        br.on_done = [digest = d.digest](BlobSink& s) -> Result<void> {
          if (sha256_digest(static_cast<MemorySink&>(s).data) != digest) return op_error("sink holds wrong bytes");
          return {};
        };
        blobs.push_back(std::move(br));
      }
    }
  }
  std::uint64_t progressed = 0;
  auto done = client.fetch_blobs(std::move(blobs), [&](std::uint64_t n) { progressed += n; });
  REQUIRE(done.ok());
  CHECK(progressed == total);
  return total;
}

}  // namespace

TEST_CASE("live: plain http pull, push, mount, manifests and tag pagination", "[live]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("plain");
  json seeded = regs.seed(reg);
  std::string host = reg["host"].get<std::string>();
  RegistryClient client(config_for(reg, regs.dir()), fast_options());

  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t bytes = pull_all(client, seeded["images"]);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("pulled " << seeded["images"].size() << " seeded images, " << bytes << " blob bytes in " << s << " s");
  CHECK(client.stats().blob_bytes_downloaded == bytes);

  {  // errors name the reference, status and registry code
    auto missing = client.get_manifest(parse_ref(host + "/test/oci-single:no-such-tag"));
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message == host + "/test/oci-single:no-such-tag: manifest unknown (404 MANIFEST_UNKNOWN)");
    auto head = client.head_manifest(parse_ref(host + "/test/oci-single:no-such-tag"));
    REQUIRE(head.ok());
    CHECK_FALSE(head.value());
    MemorySink sink;
    auto blob = client.fetch_blob(parse_ref(host + "/test/oci-single"), sha256_digest("nope"), 4, sink);
    REQUIRE_FALSE(blob.ok());
    CHECK_THAT(blob.error().message, Catch::Contains("404 BLOB_UNKNOWN"));
    auto bad = client.get_manifest(parse_ref("no-such-host.invalid/x/y:1"));
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.error().message, Catch::Contains("unknown host no-such-host.invalid"));
  }

  {  // push monolithic and chunked, mount, manifest round trip, paginated tags
    std::string small = pseudo_random(10'000, 1);
    std::string large = pseudo_random(300'000, 2);
    std::string cfg = R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})";
    ClientOptions o = fast_options();
    o.monolithic_max = 64 * 1024;  // make the 300 kB blob go in chunks
    o.chunk_size = 100 * 1024;
    RegistryClient pusher(config_for(reg, regs.dir()), o);
    Reference repo = parse_ref(host + "/push/app");
    for (auto* blob : {&small, &large, &cfg}) {
      StringSource src(*blob);
      REQUIRE(pusher.push_blob(repo, sha256_digest(*blob), src).ok());
      CHECK(pusher.blob_exists(repo, sha256_digest(*blob)).value());
    }
    CHECK(pusher.stats().blobs_pushed == 3);
    MemorySink back;
    REQUIRE(client.fetch_blob(repo, sha256_digest(large), large.size(), back).ok());
    CHECK(back.data == large);

    Reference other = parse_ref(host + "/push/other");
    CHECK_FALSE(pusher.blob_exists(other, sha256_digest(large)).value());
    StringSource src(large);
    REQUIRE(pusher.push_blob(other, sha256_digest(large), src, repo).ok());
    CHECK(pusher.stats().blobs_mounted == 1);
    CHECK(pusher.blob_exists(other, sha256_digest(large)).value());

    // mount_blob alone: true where the source has it; false (upload cancelled, nothing
    // stored) where it does not, so import uploads the bytes itself.
    Reference third = parse_ref(host + "/push/third");
    auto mounted = pusher.mount_blob(third, sha256_digest(small), repo);
    REQUIRE(mounted.ok());
    CHECK(mounted.value());
    CHECK(pusher.blob_exists(third, sha256_digest(small)).value());
    Reference empty = parse_ref(host + "/push/empty");
    auto refused = pusher.mount_blob(third, sha256_digest(large), empty);
    REQUIRE(refused.ok());
    CHECK_FALSE(refused.value());
    CHECK_FALSE(pusher.blob_exists(third, sha256_digest(large)).value());
    CHECK(pusher.stats().blobs_mounted == 2);

    std::string manifest = std::string(R"({"schemaVersion":2,"mediaType":")") + std::string(oci::k_oci_manifest) +
                           R"(","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
                           sha256_digest(cfg) + R"(","size":)" + std::to_string(cfg.size()) +
                           R"(},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")" +
                           sha256_digest(small) + R"(","size":10000}]})";
    std::vector<std::string> tags = {"a1", "b2", "c3", "d4", "e5"};
    for (auto& t : tags) {
      Reference r = repo;
      r.tag = t;
      REQUIRE(pusher.put_manifest(r, oci::k_oci_manifest, manifest).ok());
    }
    auto got = client.get_manifest(parse_ref(host + "/push/app:c3"));
    REQUIRE(got.ok());
    CHECK(got->bytes == manifest);
    CHECK(got->digest == sha256_digest(manifest));
    auto byd = client.get_manifest(parse_ref(host + "/push/app@" + sha256_digest(manifest)));
    REQUIRE(byd.ok());
    // distribution 2.8 ignores ?n= for tags (it answers one page); Link
    // pagination is covered against a paging server below.
    auto listed = client.list_tags(repo, 2);
    REQUIRE(listed.ok());
    std::sort(listed.value().begin(), listed.value().end());
    CHECK(listed.value() == tags);
  }

  {  // an empty mirror answers 404: the pull falls through to the registry itself
    json empty = regs.start("empty");
    RegistryConfig cfg = config_for(reg, regs.dir(), "    mirrors: [\"" + empty["url"].get<std::string>() + "\"]\n");
    RegistryClient mirrored(cfg, fast_options());
    auto first = seeded["images"][0];
    auto m = mirrored.get_manifest(parse_ref(first["ref"].get<std::string>()));
    REQUIRE(m.ok());
    CHECK(m->digest == first["digest"].get<std::string>());
    RegistryConfig only = cfg;
    only.hosts[host].fallback = false;
    RegistryClient no_fallback(only, fast_options());
    auto miss = no_fallback.get_manifest(parse_ref(first["ref"].get<std::string>()));
    REQUIRE_FALSE(miss.ok());
    CHECK_THAT(miss.error().message, Catch::Contains("404 MANIFEST_UNKNOWN"));
  }
}

TEST_CASE("live: TLS with a CA, without it, and insecureSkipVerify", "[live]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("tls", "--tls");
  json seeded = regs.seed(reg);
  std::string first = seeded["images"][0]["ref"].get<std::string>();
  RegistryClient with_ca(config_for(reg, regs.dir()), fast_options());
  pull_all(with_ca, seeded["images"]);

  RegistryClient without(RegistryConfig{}, fast_options());
  auto refused = without.get_manifest(parse_ref(first));
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("TLS verification of " + reg["host"].get<std::string>()));

  RegistryConfig insecure;
  insecure.hosts[reg["host"].get<std::string>()].insecure_skip_verify = true;
  RegistryClient skip(insecure, fast_options());
  CHECK(skip.get_manifest(parse_ref(first)).ok());
}

TEST_CASE("live: htpasswd over TLS, right and wrong password", "[live]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("basic", "--htpasswd robot:s3cret-pw");
  json seeded = regs.seed(reg);
  spit(regs.dir() / "pw.txt", "s3cret-pw\n");
  spit(regs.dir() / "bad.txt", "wrong\n");
  RegistryClient good(config_for(reg, regs.dir(), "    username: robot\n    passwordFile: pw.txt\n"), fast_options());
  pull_all(good, seeded["images"]);
  std::string first = seeded["images"][0]["ref"].get<std::string>();

  RegistryClient bad(config_for(reg, regs.dir(), "    username: robot\n    passwordFile: bad.txt\n"), fast_options());
  auto denied = bad.get_manifest(parse_ref(first));
  REQUIRE_FALSE(denied.ok());
  CHECK_THAT(denied.error().message,
             Catch::Contains(reg["host"].get<std::string>() + ": authentication failed for user robot (401)"));
  CHECK(denied.error().message.find("wrong") == std::string::npos);

  RegistryClient anonymous(config_for(reg, regs.dir()), fast_options());
  auto anon = anonymous.get_manifest(parse_ref(first));
  REQUIRE_FALSE(anon.ok());
  CHECK_THAT(anon.error().message, Catch::Contains("no credentials for this host"));
}

TEST_CASE("live: token auth with credentials, caching, push, and no leak on redirect", "[live]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("token", "--token robot:tok-pw");
  json seeded = regs.seed(reg);
  std::string host = reg["host"].get<std::string>();
  spit(regs.dir() / "pw.txt", "tok-pw");
  std::string creds = "    username: robot\n    passwordFile: pw.txt\n";
  std::string stats_url = reg["token_realm"].get<std::string>();
  stats_url = stats_url.substr(0, stats_url.rfind('/')) + "/stats";
  auto issued = [&] { return json::parse(run("/usr/bin/python3 -c \"import urllib.request,sys;sys.stdout.write(urllib.request.urlopen('" + stats_url + "').read().decode())\""))["issued"].get<int>(); };

  int before = issued();
  RegistryClient client(config_for(reg, regs.dir(), creds), fast_options());
  pull_all(client, seeded["images"]);
  int used = issued() - before;
  // One token per repository scope, not one per request.
  CHECK(used <= static_cast<int>(seeded["images"].size()));
  CHECK(client.stats().requests > static_cast<std::uint64_t>(used) * 3);

  std::string blob = pseudo_random(5000, 3);
  StringSource src(blob);
  REQUIRE(client.push_blob(parse_ref(host + "/pushed/x"), sha256_digest(blob), src).ok());
  CHECK(client.blob_exists(parse_ref(host + "/pushed/x"), sha256_digest(blob)).value());

  spit(regs.dir() / "nope.txt", "nope");
  RegistryClient wrong2(config_for(reg, regs.dir(), "    username: robot\n    passwordFile: nope.txt\n"), fast_options());
  auto denied = wrong2.get_manifest(parse_ref(seeded["images"][0]["ref"].get<std::string>()));
  REQUIRE_FALSE(denied.ok());
  CHECK_THAT(denied.error().message, Catch::Contains("authentication failed for user robot (401)"));

  // A storage redirect to another host name must not carry the bearer token.
  json proxy = json::parse(regs.tool("faultproxy.py start --dir " + regs.dir().path().string() + " --upstream " +
                                     reg["url"].get<std::string>() + " --fault redirect --times 1 --match blobs"));
  std::string phost = proxy["url"].get<std::string>().substr(7);
  RegistryConfig pcfg = config_for(reg, regs.dir(), creds);
  pcfg.hosts[phost].plain_http = true;
  pcfg.hosts[phost].username = "robot";
  pcfg.hosts[phost].password_file = (regs.dir() / "pw.txt").string();
  RegistryClient via(pcfg, fast_options());
  // Learn the challenge and hold a token first, so the redirected GET carries one.
  auto none = via.head_manifest(parse_ref(phost + "/pushed/x:none"));
  REQUIRE(none.ok());
  CHECK_FALSE(none.value());
  MemorySink sink;
  auto got = via.fetch_blob(parse_ref(phost + "/pushed/x"), sha256_digest(blob), blob.size(), sink);
  json st = json::parse(regs.tool("faultproxy.py stats --dir " + regs.dir().path().string()));
  CHECK(st["leaked"].get<int>() == 0);
  CHECK(st["foreign"].get<int>() == 1);
  CHECK(st["injected"].get<int>() == 1);
  // The stand-in "storage" is the registry itself, which wants a token the other
  // origin must not get: its 401 is reported, never answered with credentials.
  REQUIRE_FALSE(got.ok());
  CHECK_THAT(got.error().message, Catch::Contains("(401"));
}

TEST_CASE("live: credentials never reach another origin (upload Location, Link page, redirect)", "[live][hostile]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("token", "--token robot:tok-pw");
  json seeded = regs.seed(reg);
  spit(regs.dir() / "pw.txt", "tok-pw");
  // A proxy in front of the registry whose fault points somewhere on its foreign
  // listener (another port: another origin); the client holds credentials for the proxy.
  auto through = [&](const std::string& name, const std::string& fault, const std::string& match) {
    json proxy = json::parse(regs.tool("faultproxy.py start --dir " + regs.dir().path().string() + " --name " + name +
                                       " --upstream " + reg["url"].get<std::string>() + " --fault " + fault +
                                       " --times 1 --match " + match));
    std::string phost = proxy["url"].get<std::string>().substr(7);
    RegistryConfig cfg;
    cfg.hosts[phost].plain_http = true;
    cfg.hosts[phost].username = "robot";
    cfg.hosts[phost].password_file = (regs.dir() / "pw.txt").string();
    return std::make_pair(phost, cfg);
  };
  auto stats = [&](const std::string& name) {
    return json::parse(regs.tool("faultproxy.py stats --dir " + regs.dir().path().string() + " --name " + name));
  };

  SECTION("an upload Location on another origin gets no Authorization") {
    auto [phost, cfg] = through("up", "foreign-upload", "uploads");
    RegistryClient client(cfg, fast_options());
    std::string blob = pseudo_random(3000, 9);
    StringSource src(blob);
    auto pushed = client.push_blob(parse_ref(phost + "/pushed/z"), sha256_digest(blob), src);
    json st = stats("up");
    CHECK(st["injected"].get<int>() == 1);
    CHECK(st["foreign"].get<int>() >= 1);
    CHECK(st["leaked"].get<int>() == 0);
    // The foreign upload is refused (no token); the retry opens a fresh upload on the registry itself.
    CHECK(pushed.ok());
  }
  SECTION("a Link page on another origin gets no Authorization") {
    auto [phost, cfg] = through("link", "foreign-link", "tags");
    RegistryClient client(cfg, fast_options());
    Reference repo = parse_ref(seeded["images"][0]["ref"].get<std::string>());
    repo.registry = phost;
    auto tags = client.list_tags(repo);
    json st = stats("link");
    CHECK(st["injected"].get<int>() == 1);
    CHECK(st["foreign"].get<int>() >= 1);
    CHECK(st["leaked"].get<int>() == 0);
    REQUIRE_FALSE(tags.ok());  // the foreign page wants a token it was not given
    CHECK_THAT(tags.error().message, Catch::Contains("(401"));
  }
}

TEST_CASE("live: injected faults are retried or resumed", "[live]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("faults");
  std::string host = reg["host"].get<std::string>();
  RegistryClient direct(config_for(reg, regs.dir()), fast_options());
  std::string blob = pseudo_random(600'000, 4);
  StringSource src(blob);
  REQUIRE(direct.push_blob(parse_ref(host + "/f/x"), sha256_digest(blob), src).ok());

  for (std::string fault : {"503", "drop", "truncate", "corrupt"}) {
    std::string name = "p" + fault;
    json proxy = json::parse(regs.tool("faultproxy.py start --dir " + regs.dir().path().string() + " --name " + name +
                                       " --upstream " + reg["url"].get<std::string>() + " --fault " + fault +
                                       " --times 2 --match blobs"));
    std::string phost = proxy["url"].get<std::string>().substr(7);
    RegistryConfig cfg;
    cfg.hosts[phost].plain_http = true;
    RegistryClient client(cfg, fast_options());
    MemorySink sink;
    std::uint64_t progressed = 0;
    auto r = client.fetch_blob(parse_ref(phost + "/f/x"), sha256_digest(blob), blob.size(), sink,
                               [&](std::uint64_t n) { progressed += n; });
    INFO("fault " << fault);
    REQUIRE(r.ok());
    CHECK(sink.data == blob);
    CHECK(progressed == blob.size());  // never counted twice, never backwards
    CHECK(client.stats().retries >= 1);
  }
}

namespace {

// A registry stand-in that pages /v2/pag/tags/list with Link headers, as
// distribution 3, Harbor and Docker Hub do.
const char* k_pager = R"(import http.server, json, sys, urllib.parse
TAGS = ["t%02d" % i for i in range(7)]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path != "/v2/pag/tags/list":
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        n = int(q.get("n", ["100"])[0]); last = q.get("last", [""])[0]
        rest = [t for t in TAGS if t > last]; page = rest[:n]
        body = json.dumps({"name": "pag", "tags": page}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if len(rest) > n:
            self.send_header("Link", '</v2/pag/tags/list?n=%d&last=%s>; rel="next"' % (n, page[-1]))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
)";

class Pager {
public:
  Pager() {
    spit(m_dir / "pager.py", k_pager);
    auto pid = run("/usr/bin/python3 " + (m_dir / "pager.py").string() + " " + (m_dir / "port").string() +
                   " >/dev/null 2>&1 & echo $!");
    m_pid = std::stoi(pid);
    for (int i = 0; i < 100 && !std::filesystem::exists(m_dir / "port"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(m_dir / "port");
    in >> m_port;
  }
  ~Pager() {
    if (m_pid > 0) kill(m_pid, SIGTERM);
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(m_port); }

private:
  TempDir m_dir;
  int m_pid = -1;
  int m_port = 0;
};

}  // namespace

TEST_CASE("live: tag listing follows Link pagination", "[live]") {
  Pager pager;
  RegistryConfig cfg;
  cfg.hosts[pager.host()].plain_http = true;
  RegistryClient client(cfg, fast_options());
  auto tags = client.list_tags(parse_ref(pager.host() + "/pag"), 3);
  REQUIRE(tags.ok());
  CHECK(tags.value() == std::vector<std::string>{"t00", "t01", "t02", "t03", "t04", "t05", "t06"});
  CHECK(client.stats().requests == 3);  // 3 + 3 + 1
  auto all = client.list_tags(parse_ref(pager.host() + "/pag"));
  REQUIRE(all.ok());
  CHECK(all.value().size() == 7);
  auto missing = client.list_tags(parse_ref(pager.host() + "/nope"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains(pager.host() + "/nope") && Catch::Contains("(404)"));
}

namespace {

// Hashes and drops the bytes: measures the client, not the disk.
class NullSink : public BlobSink {
public:
  Result<void> write(std::string_view chunk) override {
    m_size += chunk.size();
    return {};
  }
  std::uint64_t size() const override { return m_size; }
  Result<void> truncate() override {
    m_size = 0;
    return {};
  }

private:
  std::uint64_t m_size = 0;
};

}  // namespace

// Not part of the suite (hidden tag): ./unit_tests "[.registry-bench]"
TEST_CASE("bench: parallel blob fetch of the seeded bench set", "[.registry-bench]") {
  GB_REQUIRE_REGISTRY();
  Registries regs;
  json reg = regs.start("bench");
  json seeded = regs.seed(reg, "--set bench");
  RegistryClient client(config_for(reg, regs.dir()), fast_options());
  std::vector<BlobRequest> blobs;
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (auto& img : seeded["images"]) {
    auto r = parse_ref(img["ref"].get<std::string>());
    auto m = client.get_manifest(r).value_or_throw();
    std::vector<oci::Manifest> ms;
    if (m.index()) {
      for (auto& d : m.manifests) {
        Reference c = r;
        c.tag.clear();
        c.digest = d.digest;
        ms.push_back(client.get_manifest(c).value_or_throw());
      }
    } else {
      ms.push_back(m);
    }
    for (auto& x : ms) {
      auto ds = x.layers;
      ds.push_back(x.config);
      for (auto& d : ds) {
        if (!seen.insert(d.digest).second) continue;
        total += d.size;
        blobs.push_back(BlobRequest{r, d.digest, d.size, [] { return std::make_unique<NullSink>(); }, {}});
      }
    }
  }
  for (int j : {1, 4, 8}) {
    ClientOptions o = fast_options();
    o.max_parallel = j;
    RegistryClient c(config_for(reg, regs.dir()), o);
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(c.fetch_blobs(blobs).ok());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    WARN("-j" << j << ": " << blobs.size() << " blobs, " << total / 1e6 << " MB in " << s << " s = " << total / 1e6 / s
              << " MB/s");
  }
  // The transfer limit: 8 parallel curl processes over the same blobs.
  std::string list;
  for (auto& b : blobs) list += reg["url"].get<std::string>() + "/v2/" + b.repo.repository + "/blobs/" + b.digest + "\n";
  spit(regs.dir() / "urls.txt", list);
  auto t0 = std::chrono::steady_clock::now();
  run("xargs -P 8 -n 1 curl -sf -o /dev/null < " + (regs.dir() / "urls.txt").string());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("curl -P8: " << total / 1e6 << " MB in " << s << " s = " << total / 1e6 / s << " MB/s");
}
