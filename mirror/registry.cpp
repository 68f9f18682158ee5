// The pull side of RegistryClient: manifests, tag lists, blobs, URLs. Every
// call that walks a host's endpoints goes through detail::walk (the one
// fall-through rule, registry_session.hpp).
#include "mirror/registry.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "common/parallel.hpp"
#include "common/strings.hpp"
#include "mirror/registry_text.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"
#include "mirror/registry_session.hpp"
#include "signing/digest.hpp"

namespace gb::mirror {

using detail::Answer;
using detail::check_digest;
using detail::pull_scope;

RegistryClient::RegistryClient(RegistryConfig config, ClientOptions options)
    : RegistryClient(std::move(config), std::move(options), nullptr, net::Clock{}) {}
RegistryClient::RegistryClient(RegistryConfig config, ClientOptions options, std::shared_ptr<net::Transport> transport,
                               net::Clock clock)
    : m_impl(std::make_unique<Impl>(std::move(config), std::move(options), std::move(transport), std::move(clock))) {}
RegistryClient::~RegistryClient() = default;

RegistryClient::Stats RegistryClient::stats() const {
  Stats s;
  s.requests = m_impl->n_requests;
  s.blob_bytes_downloaded = m_impl->n_bytes;
  s.blobs_pushed = m_impl->n_pushed;
  s.blobs_mounted = m_impl->n_mounted;
  s.retries = m_impl->n_retries;
  return s;
}

std::vector<std::string> RegistryClient::host_problems() const {
  std::vector<std::string> lines;
  for (const auto& d : m_impl->hosts_down())
    if (lines.empty() || lines.back() != d.line) lines.push_back(d.line);
  return lines;
}

std::vector<std::string> RegistryClient::by_host(const std::vector<std::string>& lines) const {
  auto down = m_impl->hosts_down();
  if (down.empty()) return lines;
  std::vector<std::string> out = host_problems();
  for (const auto& line : lines) {
    bool told = std::any_of(down.begin(), down.end(), [&](const auto& d) { return ends_with(line, d.summary); });
    if (!told) out.push_back(line);
  }
  return out;
}

namespace {

// The tag or digest a manifest call names, checked.
Result<std::string> manifest_target(const recipes::Reference& ref) {
  std::string target = ref.digest.empty() ? ref.tag : ref.digest;
  if (target.empty()) return input_error(ref.str() + ": needs a tag or a digest");
  if (!ref.digest.empty())
    if (auto c = check_digest(ref.name(), ref.digest); !c) return c.error();
  return target;
}

net::Request manifest_request(const char* method, std::string url) {
  net::Request req;
  req.method = method;
  req.url = std::move(url);
  req.headers.push_back("Accept: " + oci::accept_header());
  req.body_cap = detail::k_manifest_cap;
  return req;
}

}  // namespace

Result<oci::Manifest> RegistryClient::get_manifest(const recipes::Reference& ref) {
  auto& im = *m_impl;
  auto target = manifest_target(ref);
  if (!target) return target.error();
  const std::string what = ref.str();
  auto one = [&](const Endpoint& ep) -> Answer<oci::Manifest> {
    net::Request req = manifest_request("GET", im.api(ep, ref, "/manifests/" + *target));
    auto sent = im.send(ep, {pull_scope(ref)}, req);
    if (!sent) return Answer<oci::Manifest>::sent(detail::about(what, sent.error()));
    net::Response& r = sent.value();
    if (r.error == net::NetError::TooLarge) return Answer<oci::Manifest>::stop(op_error(what + ": manifest larger than 16 MiB"));
    if (!r.ok()) return Answer<oci::Manifest>::refused(what, r, req.url, r.status == 404 ? "manifest unknown" : "");
    std::string got = signing::sha256_digest(r.body);
    std::string served = r.header("docker-content-digest");
    if (!served.empty() && starts_with(served, "sha256:") && served != got)
      return Answer<oci::Manifest>::stop(op_error(what + ": Docker-Content-Digest " + served + " does not match the bytes served (" + got + ")"));
    if (!ref.digest.empty() && got != ref.digest)
      return Answer<oci::Manifest>::stop(op_error(what + ": the bytes served hash to " + got + ", not the requested digest"));
    auto m = oci::parse_manifest(std::move(r.body), r.header("content-type"));
    if (!m) return Answer<oci::Manifest>::stop(detail::about(what, m.error()));
    return Answer<oci::Manifest>::of(std::move(m).value());
  };
  return detail::walk<oci::Manifest>(im.config.endpoints(ref.registry), what, one).result();
}

Result<std::optional<std::string>> RegistryClient::head_manifest(const recipes::Reference& ref) {
  auto& im = *m_impl;
  auto target = manifest_target(ref);
  if (!target) return target.error();
  const std::string what = ref.str();
  auto one = [&](const Endpoint& ep) -> Answer<std::string> {
    net::Request req = manifest_request("HEAD", im.api(ep, ref, "/manifests/" + *target));
    auto sent = im.send(ep, {pull_scope(ref)}, req);
    if (!sent) return Answer<std::string>::sent(detail::about(what, sent.error()));
    net::Response& r = sent.value();
    if (!r.ok()) return Answer<std::string>::refused(what, r, req.url);
    return Answer<std::string>::of(r.header("docker-content-digest"));
  };
  auto a = detail::walk<std::string>(im.config.endpoints(ref.registry), what, one);
  if (!a.value) {
    if (a.not_found) return std::optional<std::string>{};  // the last endpoint has no such manifest
    return a.failure;
  }
  std::string d = *a.value;
  if (d.empty()) {
    // Old registries omit the header on HEAD; the bytes tell.
    auto m = get_manifest(ref);
    if (!m) return m.error();
    d = m->digest;
  }
  if (auto c = check_digest(what + ": Docker-Content-Digest", d); !c) return op_error(c.error().message);
  return std::optional<std::string>(d);
}

Result<std::vector<std::string>> RegistryClient::list_tags(const recipes::Reference& repo, int page_size) {
  auto& im = *m_impl;
  const std::string what = repo.name();
  using Tags = std::vector<std::string>;
  auto one = [&](const Endpoint& ep) -> Answer<Tags> {
    Tags tags;
    std::string url = im.api(ep, repo, "/tags/list") + (page_size > 0 ? "?n=" + std::to_string(page_size) : "");
    for (int page = 0; page < 100000 && !url.empty(); ++page) {
      net::Request req;
      req.url = url;
      req.body_cap = detail::k_small_cap;
      auto sent = im.send(ep, {pull_scope(repo)}, req);
      if (!sent) return Answer<Tags>::sent(detail::about(what, sent.error()));
      net::Response& r = sent.value();
      if (!r.ok()) return Answer<Tags>::refused(what + ": listing tags", r, url, r.status == 404 ? "repository unknown" : "");
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return Answer<Tags>::stop(op_error(what + ": tag list is not JSON"));
      if (j.contains("tags") && j["tags"].is_array())
        for (const auto& t : j["tags"])
          if (t.is_string()) tags.push_back(t.get<std::string>());
      auto next = detail::next_link(r.header("link"));
      url = next ? net::resolve_url(url, *next) : std::string();
    }
    return Answer<Tags>::of(std::move(tags));
  };
  return detail::walk<Tags>(im.config.endpoints(repo.registry), what, one).result();
}

// Streams one blob from one endpoint. Resumes with Range after a broken
// transfer; restarts when the server ignores Range or the bytes are corrupt.
struct RegistryClient::Impl::BlobFetch {
  RegistryClient::Impl& im;
  const Endpoint& ep;
  const recipes::Reference& repo;
  const std::string& digest;
  std::uint64_t size;
  BlobSink& sink;
  const std::function<void(std::uint64_t)>& on_bytes;
  std::uint64_t& reported;  // bytes already reported through on_bytes (never goes back)

  using Done = Answer<bool>;

  Done run() {
    const std::string what = repo.name() + "@" + digest;
    signing::Sha256 hasher;  // unless the sink hashes
    const bool own_hash = !sink.hashes();
    std::uint64_t got = 0;
    std::string sink_error;
    auto restart = [&]() -> bool {
      hasher = signing::Sha256();
      got = 0;
      auto t = sink.truncate();
      if (!t) sink_error = t.error().message;
      return t.ok();
    };
    auto local = [&] { return Done::stop(op_error(what + ": " + sink_error)); };
    // Bytes an earlier run left: hashed here, the rest asked for with Range,
    // the whole checked at the end like any download.
    if (auto held = sink.resume(hasher); !held) {
      return Done::stop(detail::about(what, held.error()));
    } else if (*held > size) {
      if (!restart()) return local();
    } else if (*held > 0) {
      got = *held;
      log_verbose(what + ": resuming at byte " + std::to_string(got) + " of " + std::to_string(size) + " (left by an earlier run)");
    }
    // Whole already (a run stopped before it named its blobs): no request,
    // and none for docker-registry to answer with a 416 whose body is short.
    if (got == size && size > 0) {
      if ("sha256:" + (own_hash ? hasher.hex() : sink.sha256_hex()) == digest) return Done::of(true);
      if (!restart()) return local();
    }
    int failures = 0;
    std::chrono::milliseconds waited{0};
    while (true) {
      net::Request req;
      req.url = im.api(ep, repo, "/blobs/" + digest);
      req.body_cap = detail::k_small_cap;
      std::uint64_t start = got;
      if (start > 0) req.headers.push_back("Range: bytes=" + std::to_string(start) + "-");
      bool first = true;
      bool too_big = false;
      req.on_body = [&](long status, std::string_view chunk) {
        if (first) {
          first = false;
          if (start > 0 && status == 200 && !restart()) return false;  // Range ignored: start over
        }
        if (got + chunk.size() > size) {
          too_big = true;
          return false;
        }
        if (own_hash) hasher.update(chunk);
        auto w = sink.write(chunk);
        if (!w) {
          sink_error = w.error().message;
          return false;
        }
        got += chunk.size();
        im.n_bytes += chunk.size();
        if (got > reported) {
          if (on_bytes) on_bytes(got - reported);
          reported = got;
        }
        return true;
      };
      auto sent = im.send(ep, {pull_scope(repo)}, req, {.follow = true, .retry = false});
      if (!sent) return Done::sent(detail::about(what, sent.error()));
      net::Response& r = sent.value();
      if (!sink_error.empty()) return local();
      if (r.answered() && r.status == 416 && got == size && size > 0) {
        // Everything arrived before the connection broke; nothing left to send.
      } else if (r.ok() && !too_big) {
        if (got != size) return Done::stop(op_error(what + ": size " + std::to_string(got) + " instead of " + std::to_string(size)));
      } else if (too_big) {
        // More bytes than the descriptor says: the content is wrong, not the connection.
        if (failures >= im.options.retry.retries)
          return Done::stop(op_error(what + ": the registry sent more than the expected " + std::to_string(size) + " bytes"));
        ++failures;
        ++im.n_retries;
        if (!restart()) return local();
        continue;
      } else {
        if (!net::retryable(r) || failures >= im.options.retry.retries || !im.backoff(failures, r, waited))
          return Done::refused(what, r, req.url, r.status == 404 ? "blob unknown" : "");
        ++failures;
        ++im.n_retries;
        log_verbose(what + ": transfer broke at byte " + std::to_string(got) + ", resuming");
        continue;
      }
      std::string hex = own_hash ? hasher.hex() : sink.sha256_hex();
      if ("sha256:" + hex == digest) return Done::of(true);
      // Corrupt bytes (a bad proxy, a bad disk on the server): start over,
      // within the same retry budget as broken transfers.
      if (failures >= im.options.retry.retries)
        return Done::stop(op_error(what + ": the bytes served hash to sha256:" + hex + " (corrupt download)"));
      ++failures;
      ++im.n_retries;
      log_warn(what + ": digest mismatch, downloading it again");
      if (!restart()) return local();
    }
  }
};

Result<void> RegistryClient::fetch_blob(const recipes::Reference& repo, const std::string& digest, std::uint64_t size, BlobSink& sink,
                                        const std::function<void(std::uint64_t)>& on_bytes) {
  auto& im = *m_impl;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  if (!starts_with(digest, "sha256:")) return input_error(repo.name() + ": unsupported blob digest '" + digest + "' (sha256 only)");
  std::uint64_t reported = 0;
  auto one = [&](const Endpoint& ep) { return Impl::BlobFetch{im, ep, repo, digest, size, sink, on_bytes, reported}.run(); };
  auto a = detail::walk<bool>(im.config.endpoints(repo.registry), repo.name() + "@" + digest, one);
  if (a.value) return {};
  return a.failure;
}

Result<void> RegistryClient::fetch_blobs(std::vector<BlobRequest> requests, const std::function<void(std::uint64_t)>& on_bytes) {
  std::mutex progress_mutex;
  auto report = [&](std::uint64_t n) {
    if (!on_bytes) return;
    std::lock_guard lock(progress_mutex);
    on_bytes(n);
  };
  std::vector<std::string> hosts;
  for (const auto& rq : requests) hosts.push_back(rq.repo.registry);
  return parallel_try(hosts, m_impl->options.max_parallel, m_impl->options.max_per_host, [&](std::size_t i) -> Result<void> {
    BlobRequest& rq = requests[i];
    std::unique_ptr<BlobSink> sink = rq.open_sink ? rq.open_sink() : nullptr;
    if (!sink) return op_error(rq.repo.name() + "@" + rq.digest + ": no place to write the blob");
    if (auto r = fetch_blob(rq.repo, rq.digest, rq.size, *sink, report); !r) return r;
    if (rq.on_done) return rq.on_done(*sink);
    return {};
  });
}

Result<std::string> RegistryClient::get_url(const std::string& url) {
  auto& im = *m_impl;
  std::string shown = redact_url(url);
  if (!starts_with(url, "https://") && !starts_with(url, "http://"))
    return input_error(shown + ": only http:// and https:// URLs can be fetched");
  if (!net::url_origin(url)) return input_error(shown + ": not a valid URL");
  Endpoint ep;
  ep.host = net::url_host(url);
  ep.base_url = url;  // same origin as the URL: credentials for its host go along
  ep.tls = im.config.host(ep.host);
  net::Request req;
  req.url = url;
  req.body_cap = k_url_max_bytes;
  auto sent = im.send(ep, {}, req, {.follow = true});
  if (!sent) return detail::about(shown, sent.error());
  net::Response& r = sent.value();
  if (r.error == net::NetError::TooLarge)
    return op_error(shown + ": larger than " + std::to_string(k_url_max_bytes >> 20) + " MiB (refused)");
  if (!r.ok()) return detail::failure(shown, r, url);
  return std::move(r.body);
}

}  // namespace gb::mirror
