#include "bundles/bundle_blobs.hpp"

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include "bundles/bundle.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"

namespace gb {

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

struct DStreamFree {
  void operator()(ZSTD_DStream* s) const { ZSTD_freeDStream(s); }
};

// Reads a blob's stored bytes straight from the verified volumes.
class SegmentSource final : public BlobSource {
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

}  // namespace

std::uint64_t BundleBlob::stored_size() const {
  std::uint64_t n = 0;
  for (const auto& s : segments) n += s.size;
  return n;
}

Result<BundleBlobs> BundleBlobs::from(const VerifyReport& verified) {
  BundleBlobs out;
  for (const auto& f : verified.manifest.files) {
    if (f.blob.empty()) continue;
    auto loc = verified.locations.find(f.path);
    if (loc == verified.locations.end()) return op_error("bundle entry " + f.path + " was verified but not located");
    auto& b = out.m_blobs[f.blob];
    b.encoding = f.encoding;
    if (f.parts && b.segments.size() < static_cast<size_t>(f.parts)) b.segments.resize(static_cast<size_t>(f.parts));
    BlobSegment seg{loc->second.volume, loc->second.offset, f.size};
    if (f.parts) b.segments[static_cast<size_t>(f.part - 1)] = seg;
    else b.segments = {seg};
  }
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
  auto src = source(*b, nullptr);
  std::unique_ptr<ZSTD_DStream, DStreamFree> ds;
  if (b->encoding == "zstd") ds.reset(ZSTD_createDStream());
  else if (!b->encoding.empty()) return op_error("blob " + std::string(digest) + ": unknown encoding " + b->encoding);
  Sha256 hash;
  std::string in(1 << 16, '\0'), dec(ZSTD_DStreamOutSize(), '\0');
  auto emit = [&](std::string_view chunk) -> Result<void> {
    hash.update(chunk);
    return out(chunk);
  };
  for (std::uint64_t at = 0;;) {
    auto n = src->read(at, in.data(), in.size());
    if (!n) return n.error();
    if (*n == 0) break;
    at += *n;
    if (!ds) {
      if (auto r = emit(std::string_view(in.data(), *n)); !r) return r;
      continue;
    }
    ZSTD_inBuffer ib{in.data(), *n, 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{dec.data(), dec.size(), 0};
      size_t rc = ZSTD_decompressStream(ds.get(), &ob, &ib);
      if (ZSTD_isError(rc)) return op_error("blob " + std::string(digest) + ": zstd: " + ZSTD_getErrorName(rc));
      if (ob.pos)
        if (auto r = emit(std::string_view(dec.data(), ob.pos)); !r) return r;
    }
  }
  if ("sha256:" + hash.hex() != digest) return op_error("blob " + std::string(digest) + ": content does not match its digest");
  return {};
}

std::unique_ptr<BlobSource> BundleBlobs::source(const BundleBlob& blob, std::function<void(std::uint64_t)> on_new_bytes) {
  return std::make_unique<SegmentSource>(blob, std::move(on_new_bytes));
}

}  // namespace gb
