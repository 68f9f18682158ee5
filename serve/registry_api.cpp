#include "serve/registry_api.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/strings.hpp"
#include "recipes/reference.hpp"
#include "signing/digest.hpp"

namespace gb::serve {

namespace {

constexpr const char* k_api_version = "registry/2.0";

HttpResponse error(int status, const std::string& code, const std::string& message) {
  HttpResponse r;
  r.status = status;
  nlohmann::json e = {{"code", code}, {"message", message}, {"detail", nullptr}};
  r.body = nlohmann::json{{"errors", nlohmann::json::array({e})}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.headers = {{"Content-Type", "application/json"}};
  return r;
}

// A query's "n": absent is a full page; not a number is refused.
std::optional<std::size_t> page_size(const HttpRequest& r) {
  auto it = r.query.find("n");
  if (it == r.query.end()) return RegistryApi::k_max_page;
  if (it->second.empty() || it->second.size() > 9 || !is_digits(it->second)) return std::nullopt;
  return std::min<std::size_t>(std::stoul(it->second), RegistryApi::k_max_page);
}

// One page of `all` (sorted) after `last`, with a Link to the next.
HttpResponse page(const HttpRequest& r, const std::vector<std::string>& all, const std::string& key, nlohmann::json body,
                  const std::string& path) {
  auto n = page_size(r);
  if (!n) return error(400, "PAGINATION_NUMBER_INVALID", "n is not a number");
  auto last = r.query.find("last");
  auto from = last == r.query.end() ? all.begin() : std::upper_bound(all.begin(), all.end(), last->second);
  std::size_t left = static_cast<std::size_t>(all.end() - from);
  std::size_t take = std::min(*n, left);
  body[key] = std::vector<std::string>(from, from + static_cast<std::ptrdiff_t>(take));
  HttpResponse resp;
  resp.body = body.dump();
  resp.headers = {{"Content-Type", "application/json"}};
  if (take < left && take > 0)
    resp.headers.emplace_back("Link", "<" + path + "?last=" + *(from + static_cast<std::ptrdiff_t>(take) - 1) + "&n=" + std::to_string(*n) +
                                          ">; rel=\"next\"");
  return resp;
}

// Accept lists media types (q-values ignored); none, or a wildcard, takes any.
bool accepts(const HttpRequest& r, std::string_view media_type) {
  std::string accept = r.header("accept");
  if (accept.empty()) return true;
  for (const auto& part : split(accept, ',')) {
    std::string_view type = trim(std::string_view(part).substr(0, part.find(';')));
    if (type == media_type || type == "*/*" || type == "application/*") return true;
  }
  return false;
}

void add_digest_headers(HttpResponse& r, const std::string& digest) {
  r.headers.emplace_back("Docker-Content-Digest", digest);
  r.headers.emplace_back("ETag", "\"" + digest + "\"");
}

}  // namespace

bool is_valid_repository_name(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (const auto& c : split(name, '/'))
    if (!recipes::is_valid_path_component(c)) return false;
  return true;
}

std::optional<Route> parse_route(std::string_view path) {
  if (path.substr(0, 4) != "/v2/") return std::nullopt;
  std::string_view rest = path.substr(4);
  auto last = rest.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  auto kind_start = rest.rfind('/', last - 1);
  if (kind_start == std::string_view::npos) return std::nullopt;
  Route r{std::string(rest.substr(0, kind_start)), std::string(rest.substr(kind_start + 1, last - kind_start - 1)),
          std::string(rest.substr(last + 1))};
  if (r.kind == "tags" && r.ref != "list") return std::nullopt;
  if (r.kind != "manifests" && r.kind != "blobs" && r.kind != "tags") return std::nullopt;
  return r;
}

Result<std::optional<ByteRange>> parse_range(std::string_view header, std::uint64_t size) {
  if (header.empty()) return std::optional<ByteRange>();
  auto bad = [&] { return op_error("bytes */" + std::to_string(size)); };
  std::string_view h = trim(header);
  if (h.size() < 6 || to_lower(h.substr(0, 6)) != "bytes=") return bad();
  std::string_view spec = trim(h.substr(6));
  auto dash = spec.find('-');
  if (dash == std::string_view::npos || spec.find(',') != std::string_view::npos) return bad();
  std::string_view a = trim(spec.substr(0, dash)), b = trim(spec.substr(dash + 1));
  auto number = [](std::string_view s) -> std::optional<std::uint64_t> {
    if (s.empty() || s.size() > 18 || !is_digits(s)) return std::nullopt;
    return std::stoull(std::string(s));
  };
  if (a.empty()) {  // suffix: the last n bytes
    auto n = number(b);
    if (!n || *n == 0 || size == 0) return bad();
    std::uint64_t len = std::min(*n, size);
    return std::optional<ByteRange>(ByteRange{size - len, len});
  }
  auto first = number(a);
  if (!first || *first >= size) return bad();
  std::uint64_t end = size - 1;
  if (!b.empty()) {
    auto e = number(b);
    if (!e || *e < *first) return bad();
    end = std::min(*e, end);
  }
  return std::optional<ByteRange>(ByteRange{*first, end - *first + 1});
}

RegistryApi::RegistryApi(const Catalog& catalog, BlobBodies& blobs, const Users* users)
    : m_catalog(catalog), m_blobs(blobs), m_users(users) {}

HttpResponse RegistryApi::handle(const HttpRequest& r) const {
  HttpResponse resp = [&]() -> HttpResponse {
    if (r.method != "GET" && r.method != "HEAD") {
      auto e = error(405, "UNSUPPORTED", "this registry is read-only: " + r.method + " is not served");
      e.headers.emplace_back("Allow", "GET, HEAD");
      return e;
    }
    std::string user;
    if (m_users) {
      auto who = m_users->check(r.header("authorization"));
      if (!who) {
        auto e = error(401, "UNAUTHORIZED", "authentication required");
        e.headers.emplace_back("WWW-Authenticate", "Basic realm=\"gpubundle serve\"");
        return e;
      }
      user = *who;
    }
    HttpResponse out = [&]() -> HttpResponse {
      if (r.path == "/v2/" || r.path == "/v2") {
        HttpResponse ok;
        ok.body = "{}";
        ok.headers = {{"Content-Type", "application/json"}};
        return ok;
      }
      if (r.path == "/v2/_catalog") {
        std::vector<std::string> names;
        for (const auto& [name, _] : m_catalog.repositories) names.push_back(name);
        return page(r, names, "repositories", nlohmann::json::object(), "/v2/_catalog");
      }
      auto route = parse_route(r.path);
      if (!route) return error(404, "UNSUPPORTED", "not an endpoint of the pull API");
      if (!is_valid_repository_name(route->name)) return error(400, "NAME_INVALID", "invalid repository name");
      if (!m_catalog.repositories.count(route->name)) return error(404, "NAME_UNKNOWN", "repository not served: " + route->name);
      if (route->kind == "tags") {
        const Repository& repo = m_catalog.repositories.find(route->name)->second;
        std::vector<std::string> tags;
        for (const auto& [tag, _] : repo.tags) tags.push_back(tag);
        return page(r, tags, "tags", {{"name", route->name}}, "/v2/" + route->name + "/tags/list");
      }
      if (route->kind == "manifests") return manifest(r, route->name, route->ref);
      return blob(r, route->name, route->ref);
    }();
    out.user = user;
    return out;
  }();
  resp.headers.emplace_back("Docker-Distribution-API-Version", k_api_version);
  return resp;
}

HttpResponse RegistryApi::manifest(const HttpRequest& r, const std::string& name, const std::string& ref) const {
  const Repository& repo = m_catalog.repositories.find(name)->second;
  std::string digest;
  if (ref.find(':') != std::string::npos) {
    if (!signing::is_sha256_digest(ref)) return error(400, "DIGEST_INVALID", "only sha256 digests are served");
    digest = ref;
  } else {
    if (!recipes::is_valid_tag(ref)) return error(404, "MANIFEST_UNKNOWN", "not a valid tag");
    auto t = repo.tags.find(ref);
    if (t == repo.tags.end()) return error(404, "MANIFEST_UNKNOWN", "manifest unknown: " + name + ":" + ref);
    digest = t->second;
  }
  auto m = m_catalog.manifests.find(digest);
  if (!repo.digests.count(digest) || m == m_catalog.manifests.end())
    return error(404, "MANIFEST_UNKNOWN", "manifest unknown: " + name + "@" + digest);
  if (!accepts(r, m->second.media_type))
    return error(404, "MANIFEST_UNKNOWN", "manifest " + digest + " is " + m->second.media_type + ", which the request does not accept");
  HttpResponse out;
  out.body = m->second.bytes;
  out.headers = {{"Content-Type", m->second.media_type}};
  add_digest_headers(out, digest);
  return out;
}

HttpResponse RegistryApi::blob(const HttpRequest& r, const std::string& name, const std::string& digest) const {
  if (!signing::is_sha256_digest(digest)) return error(400, "DIGEST_INVALID", "only sha256 digests are served");
  const Repository& repo = m_catalog.repositories.find(name)->second;
  if (!repo.digests.count(digest)) return error(404, "BLOB_UNKNOWN", "blob unknown to " + name + ": " + digest);
  BlobBody body;
  if (auto m = m_catalog.manifests.find(digest); m != m_catalog.manifests.end()) {
    const std::string* bytes = &m->second.bytes;  // the catalog outlives every response
    body.size = bytes->size();
    body.read = [bytes](std::uint64_t at, char* buf, std::size_t len) -> Result<std::size_t> {
      std::size_t n = at >= bytes->size() ? 0 : std::min<std::size_t>(len, bytes->size() - at);
      std::memcpy(buf, bytes->data() + at, n);
      return n;
    };
  } else {
    auto opened = m_blobs.open(digest);
    if (!opened) return error(500, "UNKNOWN", opened.error().message);
    if (!*opened) return error(404, "BLOB_UNKNOWN", "blob unknown to " + name + ": " + digest);
    body = std::move(**opened);
  }
  auto range = parse_range(r.header("range"), body.size);
  if (!range) {
    auto e = error(416, "RANGE_INVALID", "one satisfiable byte range is served, no more");
    e.headers.emplace_back("Content-Range", range.error().message);
    return e;
  }
  ByteRange part = range.value() ? *range.value() : ByteRange{0, body.size};
  HttpResponse out;
  out.status = range.value() ? 206 : 200;
  out.headers = {{"Content-Type", "application/octet-stream"}, {"Accept-Ranges", "bytes"}};
  if (range.value())
    out.headers.emplace_back("Content-Range", "bytes " + std::to_string(part.first) + "-" + std::to_string(part.first + part.length - 1) +
                                                  "/" + std::to_string(body.size));
  add_digest_headers(out, digest);
  out.size = part.length;
  if (r.method == "HEAD") {
    // No body leaves, so nothing is opened; libmicrohttpd still says the size.
    out.reader = [](std::uint64_t, char*, std::size_t) -> long { return -1; };
    return out;
  }
  if (!body.file.empty()) {
    int fd = ::open(body.file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return error(500, "UNKNOWN", "cannot open the bundle: " + std::string(std::strerror(errno)));
    out.file = HttpResponse::FileRange{fd, body.offset + part.first};
    return out;
  }
  auto read = std::move(body.read);
  out.reader = [read = std::move(read), part](std::uint64_t pos, char* buf, std::size_t max) -> long {
    if (pos >= part.length) return -1;
    auto got = read(part.first + pos, buf, static_cast<std::size_t>(std::min<std::uint64_t>(max, part.length - pos)));
    return got && got.value() > 0 ? static_cast<long>(got.value()) : -1;
  };
  return out;
}

}  // namespace gb::serve
