#include "packages/packages.hpp"

#include <unistd.h>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "common/parallel.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "net/transport.hpp"
#include "net/retry.hpp"
#include "signing/digest.hpp"

namespace gb::packages {

namespace fs = std::filesystem;

std::string Package::file_name() const {
  auto slash = location.rfind('/');
  return slash == std::string::npos ? location : location.substr(slash + 1);
}

namespace {

std::string label(const recipes::PackageSource& s) { return "package source '" + s.name + "' (" + s.url + ")"; }

std::string failure_text(const net::Response& r) {
  if (!r.answered()) return r.error_text.empty() ? "no answer" : r.error_text;
  return "HTTP " + std::to_string(r.status);
}

// One GET under net/retry.hpp's policy, with the source's CA. `fresh` runs
// before each exchange, so a streamed body can start over.
net::Response get(net::Transport& t, const recipes::PackageSource& source, const std::string& url, net::Request req,
                  const std::function<void()>& fresh) {
  net::TlsOptions tls;
  if (!source.ca_file.empty()) tls.ca_file = source.ca_file.string();
  req.url = url;
  req.tls = &tls;
  net::SendHooks hooks;
  hooks.before = fresh;
  hooks.on_retry = [&](const net::Response& r) {
    log_verbose(label(source) + ": " + url + ": " + failure_text(r) + "; trying again");
  };
  return net::send(t, std::move(req), net::RetryPolicy{}, {}, hooks);
}

}  // namespace

Result<std::optional<std::string>> get_optional_document(net::Transport& t, const recipes::PackageSource& source,
                                                         const std::string& url, std::uint64_t max_bytes) {
  net::Request req;
  std::string body;
  bool too_large = false;
  req.on_body = [&](long, std::string_view chunk) {
    if (body.size() + chunk.size() > max_bytes) return !(too_large = true);
    body.append(chunk);
    return true;
  };
  auto r = get(t, source, url, req, [&] { body.clear(); });
  if (too_large) return op_error(url + ": larger than " + std::to_string(max_bytes) + " bytes; refused (" + label(source) + ")");
  if (r.answered() && (r.status == 404 || r.status == 410)) return std::optional<std::string>();
  if (!r.ok()) return op_error(url + ": " + failure_text(r) + " (" + label(source) + ")");
  return std::optional<std::string>(std::move(body));
}

Result<std::string> get_document(net::Transport& t, const recipes::PackageSource& source, const std::string& url,
                                 std::uint64_t max_bytes) {
  auto d = get_optional_document(t, source, url, max_bytes);
  if (!d) return d.error();
  if (!*d) return op_error(url + ": not found (" + label(source) + ")");
  return std::move(**d);
}

Result<std::string> decompress(std::string_view data, const std::string& what, std::uint64_t max_bytes) {
  auto magic = [&](std::string_view m) { return data.substr(0, m.size()) == m; };
  bool compressed = magic("\x1f\x8b") || magic("\xfd" "7zXZ") || magic("\x28\xb5\x2f\xfd") || magic("BZh");
  if (!compressed) {
    if (data.size() > max_bytes) return op_error(what + ": larger than " + std::to_string(max_bytes) + " bytes");
    return std::string(data);
  }
  detail::ArchiveReader a(archive_read_new());
  detail::support_builtin_filters(a.get());
  archive_read_support_format_raw(a.get());
  if (archive_read_open_memory(a.get(), data.data(), data.size()) != ARCHIVE_OK)
    return op_error(what + ": cannot decompress: " + detail::archive_error(a.get()));
  archive_entry* e = nullptr;
  if (archive_read_next_header(a.get(), &e) != ARCHIVE_OK)
    return op_error(what + ": cannot decompress: " + std::string(archive_error_string(a.get()) ? archive_error_string(a.get()) : "empty"));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
    if (n < 0) return op_error(what + ": cannot decompress: " + detail::archive_error(a.get()));
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes)
      return op_error(what + ": decompresses to more than " + std::to_string(max_bytes) + " bytes; refused");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::vector<Fetched>> download(net::Transport& t, const std::vector<recipes::PackageSource>& sources,
                                      const std::vector<Package>& packages, const fs::path& dest, int jobs,
                                      Progress* progress) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return op_error(dest.string() + ": " + ec.message());
  auto source_of = [&](const Package& p) -> const recipes::PackageSource* {
    for (const auto& s : sources)
      if (s.name == p.origin) return &s;
    return nullptr;
  };
  std::uint64_t total = 0;
  for (const auto& p : packages) {
    total += p.size;
    std::string f = p.file_name();
    if (f.empty() || f[0] == '.' || f.find_first_of("/\\") != std::string::npos || p.location.find("..") != std::string::npos)
      return op_error(p.name + ": unsafe file name in its index: " + p.location);
    if (!source_of(p)) return op_error(p.name + ": from unknown source '" + p.origin + "'");
    if (p.sha256.size() != 64) return op_error(p.name + ": its index gives no sha256");
  }
  if (progress) progress->begin("packages", total);
  std::vector<Fetched> out(packages.size());
  auto r = parallel_try(packages.size(), std::max(1, jobs), [&](size_t i) -> Result<void> {
    const Package& p = packages[i];
    const recipes::PackageSource& src = *source_of(p);
    fs::path file = dest / p.file_name();
    out[i] = {p, file};
    std::string url = p.repo_url + "/" + p.location;
    auto atomic = AtomicFile::create(file);
    if (!atomic) return atomic.error();
    signing::Sha256 hash;
    std::uint64_t got = 0;
    Result<void> written;
    bool too_large = false;
    net::Request req;
    req.on_body = [&](long, std::string_view chunk) {
      got += chunk.size();
      if (got > p.size) return !(too_large = true);
      hash.update(chunk);
      written = atomic->write(chunk);
      if (progress) progress->advance(chunk.size());
      return static_cast<bool>(written);
    };
    auto resp = get(t, src, url, req, [&] {
      if (got > 0) {
        // A retry starts the file over.
        hash = signing::Sha256();
        got = 0;
        if (::ftruncate(atomic->fd(), 0) != 0 || ::lseek(atomic->fd(), 0, SEEK_SET) != 0)
          written = op_error(file.string() + ": cannot start the file over");
      }
    });
    if (!written) return written.error();
    if (too_large) return op_error(url + ": larger than the " + std::to_string(p.size) + " bytes its index gives; refused (" + label(src) + ")");
    if (!resp.ok()) return op_error(url + ": " + failure_text(resp) + " (" + label(src) + ")");
    std::string hex = hash.hex();
    if (got != p.size || hex != p.sha256)
      return op_error(url + ": " + std::to_string(got) + " bytes with sha256 " + hex + ", but its signed index says " +
                      std::to_string(p.size) + " bytes with sha256 " + p.sha256 + "; refused (" + label(src) + ")");
    if (auto c = atomic->commit(); !c) return c.error();
    if (progress) progress->item(p.file_name(), "fetched");
    return {};
  });
  if (progress) progress->end(std::to_string(packages.size()) + " packages");
  if (!r) return r.error();
  return out;
}

}  // namespace gb::packages
