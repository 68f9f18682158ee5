#include "bundles/bundle_blobs.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <fcntl.h>
#include <unistd.h>

#include "bundles/bundle.hpp"
#include "bundles/zstd_decode.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

namespace gb::bundles {

namespace {

class Fd {
public:
  explicit Fd(const std::filesystem::path& p) : m_fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }

private:
  int m_fd;
};

// Reads a blob's stored bytes straight from the verified volumes.
class SegmentSource final : public mirror::BlobSource {
public:
  SegmentSource(const BundleBlob& b, std::function<void(std::uint64_t)> on_new_bytes) : m_blob(b), m_on(std::move(on_new_bytes)) {}
  std::uint64_t size() const override { return m_blob.stored_size(); }
  Result<std::size_t> read(std::uint64_t offset, char* buf, std::size_t len) override {
    std::uint64_t base = 0;
    for (const auto& s : m_blob.segments) {
      if (offset < base + s.size) {
        std::uint64_t within = offset - base;
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len, s.size - within));
        int fd = open_fd(s.volume);
        if (fd < 0) return op_error(s.volume.string() + ": cannot open");
        ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(s.offset + within));
        if (got <= 0) return op_error(s.volume.string() + ": short read");
        if (offset + static_cast<std::uint64_t>(got) > m_high) {  // retries re-read; count new bytes once
          if (m_on) m_on(offset + static_cast<std::uint64_t>(got) - std::max(offset, m_high));
          m_high = offset + static_cast<std::uint64_t>(got);
        }
        return static_cast<std::size_t>(got);
      }
      base += s.size;
    }
    return std::size_t{0};
  }
  ~SegmentSource() override {
    for (auto& [p, fd] : m_fds) ::close(fd);
  }

private:
  int open_fd(const std::filesystem::path& p) {
    auto it = m_fds.find(p.string());
    if (it != m_fds.end()) return it->second;
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) m_fds[p.string()] = fd;
    return fd;
  }
  BundleBlob m_blob;
  std::function<void(std::uint64_t)> m_on;
  std::uint64_t m_high = 0;
  std::map<std::string, int> m_fds;
};

// A zstd blob's content for a push, decoded as the registry client reads it;
// reading back (a retry) decodes again from the start.
class ZstdSource final : public mirror::BlobSource {
public:
  ZstdSource(const BundleBlob& b, std::uint64_t size, std::function<void(std::uint64_t)> on) : m_stored(b, std::move(on)), m_size(size) {}
  std::uint64_t size() const override { return m_size; }
  Result<std::size_t> read(std::uint64_t offset, char* buf, std::size_t len) override {
    if (offset < m_base) restart();
    while (offset >= m_base + m_buf.size()) {
      if (m_done) return std::size_t{0};
      m_base += m_buf.size();
      m_buf.clear();
      auto n = m_stored.read(m_at, m_in.data(), m_in.size());
      if (!n) return n.error();
      m_at += *n;
      auto append = [&](std::string_view chunk) -> Result<void> {
        m_buf.append(chunk);
        return {};
      };
      auto r = *n ? m_dec.feed(std::string_view(m_in.data(), *n), append) : m_dec.finish(append);
      if (!r) return r.error();
      m_done = *n == 0;
    }
    std::size_t from = static_cast<std::size_t>(offset - m_base);
    std::size_t k = std::min(len, m_buf.size() - from);
    std::copy_n(m_buf.data() + from, k, buf);
    return k;
  }

private:
  void restart() {
    m_dec.reset();
    m_buf.clear();
    m_base = m_at = 0;
    m_done = false;
  }
  SegmentSource m_stored;
  std::uint64_t m_size;
  detail::ZstdDecoder m_dec;
  std::string m_in = std::string(16 << 10, '\0');
  std::string m_buf;        // decoded bytes [m_base, m_base + size)
  std::uint64_t m_base = 0;
  std::uint64_t m_at = 0;   // stored bytes fed
  bool m_done = false;
};

}  // namespace

std::uint64_t BundleBlob::stored_size() const {
  std::uint64_t n = 0;
  for (const auto& s : segments) n += s.size;
  return n;
}

Result<BundleBlobs> BundleBlobs::from(const VerifyReport& verified) {
  BundleBlobs out;
  std::set<std::string> deferred;  // blobs with an entry not hashed yet: not readable
  for (const auto& f : verified.manifest.files) {
    if (f.blob.empty()) continue;
    if (verified.unhashed.count(f.path)) {
      deferred.insert(f.blob);
      continue;
    }
    auto loc = verified.locations.find(f.path);
    if (loc == verified.locations.end()) return op_error("bundle entry " + f.path + " was verified but not located");
    auto& b = out.m_blobs[f.blob];
    b.encoding = f.encoding;
    BlobSegment seg{loc->second.volume, loc->second.offset, f.size};
    if (f.parts == 0) {
      b.segments = {seg};
      continue;
    }
    // The verifier checked the numbering; this only keeps a bad report from indexing out of range.
    if (f.parts < 0 || f.parts > k_max_volumes || f.part < 1 || f.part > f.parts)
      return op_error("bundle entry " + f.path + ": part " + std::to_string(f.part) + " of " + std::to_string(f.parts) + " is impossible");
    if (b.segments.size() != static_cast<size_t>(f.parts)) b.segments.assign(static_cast<size_t>(f.parts), {});
    b.segments[static_cast<size_t>(f.part - 1)] = seg;
  }
  for (const auto& d : deferred) out.m_blobs.erase(d);
  return out;
}

const BundleBlob* BundleBlobs::find(std::string_view digest) const {
  auto it = m_blobs.find(digest);
  return it == m_blobs.end() ? nullptr : &it->second;
}

Result<std::string> BundleBlobs::read_stored(const BundleBlob& b) {
  std::string out;
  out.resize(b.stored_size());
  std::uint64_t at = 0;
  for (const auto& s : b.segments) {
    Fd fd(s.volume);
    if (fd.get() < 0) return op_error(s.volume.string() + ": cannot open");
    if (::pread(fd.get(), out.data() + at, s.size, static_cast<off_t>(s.offset)) != static_cast<ssize_t>(s.size))
      return op_error(s.volume.string() + ": short read");
    at += s.size;
  }
  return out;
}

Result<std::string> BundleBlobs::content(std::string_view digest) const {
  std::string out;
  auto r = stream_content(digest, [&](std::string_view chunk) -> Result<void> {
    out.append(chunk);
    return {};
  });
  if (!r) return r.error();
  return out;
}

Result<void> BundleBlobs::stream_content(std::string_view digest, const std::function<Result<void>(std::string_view)>& out) const {
  const BundleBlob* b = find(digest);
  if (!b) return op_error("blob " + std::string(digest) + " is not in the bundle");
  return stream_content(*b, digest, out);
}

Result<void> BundleBlobs::stream_content(const BundleBlob& b, std::string_view digest,
                                         const std::function<Result<void>(std::string_view)>& out) {
  if (!b.encoding.empty() && b.encoding != "zstd") return op_error("blob " + std::string(digest) + ": unknown encoding " + b.encoding);
  auto src = source(b, nullptr);
  std::optional<detail::ZstdDecoder> dec;
  if (!b.encoding.empty()) dec.emplace();
  signing::Sha256 hash;
  auto emit = [&](std::string_view chunk) -> Result<void> {
    hash.update(chunk);
    return out(chunk);
  };
  auto fail = [&](const Failure& f) { return op_error("blob " + std::string(digest) + ": " + f.message); };
  std::string in(1 << 16, '\0');
  for (std::uint64_t at = 0;;) {
    auto n = src->read(at, in.data(), in.size());
    if (!n) return n.error();
    if (*n == 0) break;
    at += *n;
    std::string_view chunk(in.data(), *n);
    if (auto r = dec ? dec->feed(chunk, emit) : emit(chunk); !r) return fail(r.error());
  }
  if (dec)
    if (auto r = dec->finish(emit); !r) return fail(r.error());
  if ("sha256:" + hash.hex() != digest) return op_error("blob " + std::string(digest) + ": content does not match its digest");
  return {};
}

std::unique_ptr<mirror::BlobSource> BundleBlobs::source(const BundleBlob& blob, std::function<void(std::uint64_t)> on_new_bytes) {
  return std::make_unique<SegmentSource>(blob, std::move(on_new_bytes));
}

Result<std::unique_ptr<mirror::BlobSource>> BundleBlobs::content_source(const BundleBlob& blob, std::function<void(std::uint64_t)> on_stored_bytes) {
  if (blob.encoding.empty()) return source(blob, std::move(on_stored_bytes));
  SegmentSource head_src(blob, nullptr);
  std::string head(detail::k_zstd_frame_header_max, '\0');
  auto n = head_src.read(0, head.data(), head.size());
  if (!n) return n.error();
  head.resize(*n);
  auto size = detail::ZstdDecoder::declared_size(head);
  if (!size) return size.error();
  return std::unique_ptr<mirror::BlobSource>(std::make_unique<ZstdSource>(blob, *size, std::move(on_stored_bytes)));
}

}  // namespace gb::bundles
