// The push side of RegistryClient: blob existence, cross-repository mounts,
// monolithic and chunked uploads that resume from the registry's Range,
// manifests. Pushes go to the host itself, never a mirror.
#include "mirror/registry.hpp"

#include "common/log.hpp"
#include "common/strings.hpp"
#include "mirror/registry_text.hpp"
#include "net/retry.hpp"
#include "net/url.hpp"
#include "mirror/registry_session.hpp"
#include "signing/digest.hpp"

namespace gb::mirror {

using detail::check_digest;
using detail::pull_scope;
using detail::push_scope;

namespace {

std::string with_query(const std::string& url, const std::string& param) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + param;
}

std::string mount_query(const std::string& digest, const recipes::Reference& from) {
  return "?mount=" + net::url_encode(digest) + "&from=" + net::url_encode(from.repository);
}

}  // namespace

Result<bool> RegistryClient::blob_exists(const recipes::Reference& repo, const std::string& digest) {
  auto& im = *m_impl;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  std::string what = repo.name() + "@" + digest;
  Endpoint ep = im.config.push_endpoint(repo.registry);
  net::Request req;
  req.method = "HEAD";
  req.url = im.api(ep, repo, "/blobs/" + digest);
  auto sent = im.send(ep, {push_scope(repo)}, req);
  if (!sent) return detail::about(what, sent.error());
  net::Response& r = sent.value();
  if (r.answered() && r.status == 404) return false;
  if (!r.ok()) return detail::failure(what, r, req.url);
  return true;
}

Result<bool> RegistryClient::mount_blob(const recipes::Reference& repo, const std::string& digest, const recipes::Reference& from) {
  auto& im = *m_impl;
  std::string what = repo.name() + "@" + digest;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  if (from.registry != repo.registry || from.repository == repo.repository) return false;
  Endpoint ep = im.config.push_endpoint(repo.registry);
  net::Request req;
  req.method = "POST";
  req.url = im.api(ep, repo, "/blobs/uploads/") + mount_query(digest, from);
  auto sent = im.send(ep, {push_scope(repo), pull_scope(from)}, req);
  if (!sent) return detail::about(what, sent.error());
  net::Response& r = sent.value();
  if (r.answered() && r.status == 201) {
    ++im.n_mounted;
    return true;
  }
  if (!r.answered() || r.status != 202) return detail::failure(what + ": mounting from " + from.repository, r, req.url);
  // Refused: the registry opened an upload session instead. Close it; registries expire it anyway.
  if (std::string loc = r.header("location"); !loc.empty()) {
    net::Request cancel;
    cancel.method = "DELETE";
    cancel.url = net::resolve_url(req.url, loc);
    (void)im.send(ep, {push_scope(repo)}, cancel, {.retry = false});
  }
  return false;
}

Result<void> RegistryClient::push_blob(const recipes::Reference& repo, const std::string& digest, BlobSource& source,
                                       const std::optional<recipes::Reference>& mount_from) {
  auto& im = *m_impl;
  std::string what = repo.name() + "@" + digest;
  if (auto c = check_digest(repo.name(), digest); !c) return c.error();
  Endpoint ep = im.config.push_endpoint(repo.registry);
  std::vector<std::string> scopes = {push_scope(repo)};
  const std::uint64_t size = source.size();
  auto fail = [&](const std::string& step, const net::Response& r, const std::string& url) {
    return detail::failure(what + ": " + step, r, url);
  };

  // Opens an upload session; with a mount source, may finish at once (201).
  auto start = [&](bool try_mount, bool& mounted) -> Result<std::string> {
    net::Request req;
    req.method = "POST";
    req.url = im.api(ep, repo, "/blobs/uploads/");
    std::vector<std::string> sc = scopes;
    if (try_mount) {
      req.url += mount_query(digest, *mount_from);
      sc.push_back(pull_scope(*mount_from));
    }
    auto sent = im.send(ep, sc, req);
    if (!sent) return detail::about(what, sent.error());
    net::Response& r = sent.value();
    if (try_mount && r.answered() && r.status == 201) {
      mounted = true;
      return std::string();
    }
    if (!r.answered() || r.status != 202) return fail("starting the upload", r, req.url);
    std::string loc = r.header("location");
    if (loc.empty()) return op_error(what + ": the registry started an upload without a Location");
    return net::resolve_url(req.url, loc);
  };

  // The registry's view of how far an upload got (GET on the session).
  auto upload_offset = [&](std::string& location) -> Result<std::uint64_t> {
    net::Request req;
    req.url = location;
    auto sent = im.send(ep, scopes, req);
    if (!sent) return sent.error();
    net::Response& r = sent.value();
    if (!r.answered() || r.status != 204) return fail("querying the upload", r, location);
    if (auto loc = r.header("location"); !loc.empty()) location = net::resolve_url(location, loc);
    std::string range = r.header("range");  // "0-1234" (inclusive)
    auto dash = range.find('-');
    if (dash == std::string::npos) return std::uint64_t{0};
    return std::stoull(range.substr(dash + 1)) + 1;
  };

  auto finish = [&](const std::string& location, std::uint64_t offset) -> Result<void> {
    net::Request req;
    req.method = "PUT";
    req.url = with_query(location, "digest=" + net::url_encode(digest));
    detail::body_from(req, source, offset, size - offset);
    req.headers.push_back("Content-Type: application/octet-stream");
    auto sent = im.send(ep, scopes, req, {.retry = false});
    if (!sent) return detail::about(what, sent.error());
    net::Response& r = sent.value();
    if (!r.answered() || r.status != 201) return fail("completing the upload", r, req.url);
    return {};
  };

  bool try_mount = mount_from && mount_from->registry == repo.registry && mount_from->repository != repo.repository;
  Failure last;
  std::chrono::milliseconds waited{0};
  for (int attempt = 0; attempt <= im.options.retry.retries; ++attempt) {
    if (attempt > 0) {
      if (!im.backoff(attempt - 1, net::Response{}, waited)) break;
      ++im.n_retries;
      log_verbose(last.message + "; starting the upload again");
    }
    bool mounted = false;
    auto loc = start(try_mount && attempt == 0, mounted);
    if (!loc) {
      last = loc.error();
      continue;
    }
    if (mounted) {
      ++im.n_mounted;
      return {};
    }
    std::string location = loc.value();
    if (size <= im.options.monolithic_max) {
      auto done = finish(location, 0);
      if (done) {
        ++im.n_pushed;
        return {};
      }
      last = done.error();
      continue;
    }
    // Chunked: PATCH chunk after chunk; on a failure ask the registry how far it got.
    std::uint64_t offset = 0;
    int chunk_failures = 0;
    bool restart = false;
    while (offset < size) {
      std::uint64_t len = std::min<std::uint64_t>(im.options.chunk_size, size - offset);
      net::Request req;
      req.method = "PATCH";
      req.url = location;
      detail::body_from(req, source, offset, len);
      req.headers.push_back("Content-Type: application/octet-stream");
      req.headers.push_back("Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + len - 1));
      auto sent = im.send(ep, scopes, req, {.retry = false});
      if (!sent) return detail::about(what, sent.error());
      net::Response& r = sent.value();
      if (r.answered() && r.status == 202) {
        if (auto l = r.header("location"); !l.empty()) location = net::resolve_url(location, l);
        offset += len;
        continue;
      }
      last = fail("uploading bytes " + std::to_string(offset) + "+", r, location);
      if (++chunk_failures > im.options.retry.retries || !(net::retryable(r) || r.status == 416) ||
          !im.backoff(chunk_failures - 1, r, waited)) {
        restart = true;
        break;
      }
      ++im.n_retries;
      auto where = upload_offset(location);
      if (!where) {
        restart = true;
        break;
      }
      offset = std::min(where.value(), size);
    }
    if (restart) continue;
    auto done = finish(location, size);
    if (done) {
      ++im.n_pushed;
      return {};
    }
    last = done.error();
  }
  return last;
}

Result<void> RegistryClient::put_manifest(const recipes::Reference& ref, std::string_view media_type, std::string_view bytes) {
  auto& im = *m_impl;
  std::string what = ref.str();
  std::string target = !ref.tag.empty() ? ref.tag : ref.digest;
  if (target.empty()) return input_error(what + ": needs a tag or a digest to push to");
  if (!ref.digest.empty())
    if (auto c = check_digest(ref.name(), ref.digest); !c) return c.error();
  std::string digest = signing::sha256_digest(bytes);
  if (!ref.digest.empty() && ref.digest != digest)
    return input_error(what + ": the manifest bytes hash to " + digest + ", not the reference's digest");
  Endpoint ep = im.config.push_endpoint(ref.registry);
  net::Request req;
  req.method = "PUT";
  req.url = im.api(ep, ref, "/manifests/" + target);
  detail::body_from(req, bytes);
  req.headers.push_back("Content-Type: " + std::string(media_type));
  auto sent = im.send(ep, {push_scope(ref)}, req);
  if (!sent) return detail::about(what, sent.error());
  net::Response& r = sent.value();
  if (!r.answered()) return detail::failure(what, r, req.url);
  if (r.status != 201 && r.status != 200) return detail::failure(what + ": pushing the manifest", r, req.url);
  std::string served = r.header("docker-content-digest");
  if (!served.empty() && starts_with(served, "sha256:") && served != digest)
    return op_error(what + ": the registry stored the manifest as " + served + ", not " + digest);
  return {};
}

}  // namespace gb::mirror
