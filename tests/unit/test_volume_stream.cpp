// bundle create's volume stream and store reader (bundles/volume_stream.hpp):
// the bytes land as appended, however they came (copied, read in place,
// across chunks), checked entries are hashed, and direct I/O falls back
// where it cannot be used.
#include <catch2/catch.hpp>
#include <cstring>
#include <fcntl.h>
#include <tuple>
#include <unistd.h>

#include "bundles/volume_stream.hpp"
#include "common/files.hpp"
#include "fixtures.hpp"
#include "signing/digest.hpp"

using namespace gb;
using namespace gb::bundles::detail;
using gbtest::TempDir;
namespace fs = std::filesystem;

namespace {

std::string pattern(std::size_t size, unsigned seed) {
  std::string s(size, '\0');
  unsigned x = seed;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

// A file written and then, as far as the kernel lets us, dropped from the
// page cache, so that reads of it take the direct path.
fs::path cold_file(const TempDir& dir, const std::string& name, const std::string& bytes) {
  auto path = dir / name;
  write_atomic(path, bytes).value_or_throw();
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return path;
}

struct Volume {
  fs::path path;
  int fd;
  explicit Volume(const fs::path& p) : path(p), fd(::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) { REQUIRE(fd >= 0); }
  ~Volume() { ::close(fd); }
};

}  // namespace

TEST_CASE("the volume stream writes what is appended, across chunks, in place or copied", "[bundle]") {
  TempDir dir;
  const std::size_t chunk = VolumeStream::k_chunk;
  // A header, a store file read in place across three chunks, padding, a
  // copied piece larger than a chunk, and an odd tail: every path.
  std::string header = pattern(512, 1);
  std::string blob = pattern(2 * chunk + 4096 * 3 + 100, 2);
  std::string pad(512 - blob.size() % 512, '\0');
  std::string copied = pattern(chunk + 777, 3);
  std::string tail = pattern(333, 4);
  auto source = cold_file(dir, "blob", blob);

  Volume v(dir / "volume");
  DirectReader reader;
  {
    VolumeStream stream(v.fd, v.path.string());
    REQUIRE(stream.append(header.data(), header.size()));
    REQUIRE(stream.expect(blob.size(), signing::sha256_hex(blob), "blob does not match"));
    for (std::uint64_t pos = 0; pos < blob.size();) {
      auto room = stream.room();
      REQUIRE(room);
      auto n = std::min<std::size_t>(blob.size() - pos, room->size());
      REQUIRE(reader.read(source, pos, room->data(), n));
      REQUIRE(stream.append(room->data(), n));
      pos += n;
    }
    REQUIRE(stream.append(pad.data(), pad.size()));
    REQUIRE(stream.expect(copied.size(), signing::sha256_hex(copied), "copied does not match"));
    REQUIRE(stream.append(copied.data(), copied.size()));
    REQUIRE(stream.append(tail.data(), tail.size()));
    auto done = stream.finish();
    REQUIRE(done);
    CHECK(done.value() == header.size() + blob.size() + pad.size() + copied.size() + tail.size());
  }
  auto written = read_file(v.path).value_or_throw();
  CHECK(written.size() == header.size() + blob.size() + pad.size() + copied.size() + tail.size());
  CHECK(written == header + blob + pad + copied + tail);
}

TEST_CASE("the volume stream fails on an entry that does not match its digest", "[bundle]") {
  TempDir dir;
  std::string good = pattern(VolumeStream::k_chunk + 5000, 5);
  std::string bad = good;
  bad[VolumeStream::k_chunk + 10] ^= 1;  // in the second chunk
  Volume v(dir / "volume");
  VolumeStream stream(v.fd, v.path.string());
  REQUIRE(stream.expect(bad.size(), signing::sha256_hex(good), "store blob sha256:x does not match its digest"));
  REQUIRE(stream.append(bad.data(), bad.size()));
  auto done = stream.finish();
  REQUIRE_FALSE(done);
  CHECK(done.error().message == "store blob sha256:x does not match its digest");

  // An empty entry is checked too.
  Volume w(dir / "empty");
  VolumeStream empty(w.fd, w.path.string());
  CHECK(empty.expect(0, signing::sha256_hex(""), "empty"));
  CHECK_FALSE(empty.expect(0, signing::sha256_hex("x"), "empty"));
  CHECK(empty.finish());

  // A writer that gives up half way (a store file it cannot read) leaves
  // the stream with chunks in flight: it stops and joins its threads.
  Volume x(dir / "abandoned");
  {
    VolumeStream abandoned(x.fd, x.path.string());
    std::string bytes = pattern(3 * VolumeStream::k_chunk + 1, 7);
    REQUIRE(abandoned.append(bytes.data(), bytes.size()));
  }
}

TEST_CASE("the store reader reads any slice into any memory, and says when the file is short", "[bundle]") {
  TempDir dir;
  std::string bytes = pattern(3 * 4096 + 1234, 6);
  auto path = cold_file(dir, "blob", bytes);
  auto buf = aligned_buffer(VolumeStream::k_chunk);
  DirectReader reader;
  // Aligned, unaligned destination (bounce), unaligned offset (page cache), a tail.
  for (auto [offset, size, shift] : {std::tuple<std::size_t, std::size_t, std::size_t>{0, bytes.size(), 0},
                                     {4096, 8192, 1},
                                     {512, 4096, 512},
                                     {1, 5000, 0},
                                     {bytes.size() - 10, 10, 7}}) {
    std::memset(buf.get(), 0, VolumeStream::k_chunk);
    REQUIRE(reader.read(path, offset, buf.get() + shift, size));
    CHECK(std::string(buf.get() + shift, size) == bytes.substr(offset, size));
  }
  auto r = reader.read(path, 4096, buf.get(), bytes.size());  // past the end
  REQUIRE_FALSE(r);
  CHECK(r.error().message == path.string() + ": short read (the store changed under us?)");
  auto missing = reader.read(dir / "missing", 0, buf.get(), 1);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == (dir / "missing").string() + ": cannot open");
}
