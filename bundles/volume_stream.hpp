#pragma once
// Private to bundles/: how bundle create moves a volume's bytes past the page
// cache (issue 33). On a virtual disk, filling and reclaiming twice the
// bundle's size in page cache cost more CPU than the hashing (tar -cf of a
// 10 GB store: 45 s of system time), so bulk bytes skip it on both sides:
//
//   - VolumeStream lays the volume's tar stream out in large aligned chunks.
//     Full chunks go to a second thread, which hashes the bytes of each entry
//     that must be checked (a store blob against its digest), and then to a
//     third, which writes them at their place in the volume with O_DIRECT
//     where the file system takes it. Reading the store, hashing and writing
//     overlap; the bytes and their order are those of any plain writer.
//   - DirectReader reads a store file straight into its place in a chunk,
//     with O_DIRECT unless its pages are in the page cache already (a store
//     just mirrored), and through the page cache where direct I/O is refused.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"

namespace gb::bundles::detail {

// Memory aligned for direct I/O (4096 suits every common block size).
struct AlignedFree {
  void operator()(char* p) const;
};
using AlignedBuffer = std::unique_ptr<char, AlignedFree>;
AlignedBuffer aligned_buffer(std::size_t size);

class VolumeStream {
public:
  static constexpr std::size_t k_chunk = 4 << 20;
  static constexpr std::size_t k_max_chunks = 8;  // 32 MiB at most

  // `fd`: the volume's empty temp file, which the caller owns and commits;
  // `name`: the file in write errors ("NAME: write failed: ...").
  VolumeStream(int fd, std::string name);
  ~VolumeStream();  // stops and joins the threads if finish() did not
  VolumeStream(const VolumeStream&) = delete;
  VolumeStream& operator=(const VolumeStream&) = delete;

  // The free room at the end of the stream, in the current chunk (at least
  // one byte): read an entry's next bytes there, then append() them.
  Result<std::span<char>> room();
  // Adds bytes at the end of the stream. Bytes that room() pointed to are
  // not copied again.
  Result<void> append(const char* data, std::size_t size);
  // The next `size` bytes appended are an entry whose sha256 must be
  // `sha256_hex`; if they are not, the stream fails with `mismatch`.
  Result<void> expect(std::uint64_t size, std::string sha256_hex, std::string mismatch);
  // Writes what is left and waits for both threads: the first failure of
  // reading, hashing or writing, or the bytes in the volume.
  Result<std::uint64_t> finish();

private:
  struct Check {
    std::string sha256;
    std::string mismatch;
  };
  struct Segment {  // bytes of a chunk that belong to a checked entry
    std::shared_ptr<const Check> check;
    std::size_t offset = 0, size = 0;
    bool last = false;
  };
  struct Chunk {
    AlignedBuffer data;
    std::size_t used = 0;
    std::uint64_t offset = 0;  // in the volume
    std::vector<Segment> segments;
  };

  Result<void> next_chunk();
  void advance(std::size_t n);
  void hand_off(Chunk* c);  // nullptr: the end
  void fail(Failure f);
  void stop();
  void hash_loop();
  void write_loop();
  Result<void> write_chunk(Chunk& c);
  Result<void> write_buffered(const char* data, std::size_t size, std::uint64_t offset);

  int m_fd;
  std::string m_name;
  std::size_t m_align = 0;  // direct writes: their alignment; 0 for none (writer thread only once started)
  bool m_truncate = false;  // a padded direct write went past the end (writer thread, then finish)

  // The producer's side (the caller's thread).
  Chunk* m_cur = nullptr;
  std::uint64_t m_pos = 0;
  std::shared_ptr<const Check> m_check;
  std::uint64_t m_check_left = 0;
  std::vector<std::unique_ptr<Chunk>> m_chunks;  // every chunk; only the producer adds to it

  // Shared, under m_mutex: chunks move free -> to hash -> to write -> free.
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<Chunk*> m_free, m_to_hash, m_to_write;
  bool m_stop = false;
  std::optional<Failure> m_error;

  std::thread m_hasher, m_writer;
};

// Reads slices of files into the caller's memory, the store's files here.
// One file is open at a time; reading another closes it.
class DirectReader {
public:
  DirectReader() = default;
  ~DirectReader();
  DirectReader(const DirectReader&) = delete;
  DirectReader& operator=(const DirectReader&) = delete;

  // Exactly `size` bytes of `path` from `offset` into `dst` (size at most
  // VolumeStream::k_chunk), or an error naming the file.
  Result<void> read(const std::filesystem::path& path, std::uint64_t offset, char* dst, std::size_t size);

private:
  Result<void> open(const std::filesystem::path& path);
  void close();
  bool cached(std::uint64_t offset, std::size_t size) const;

  std::filesystem::path m_path;
  int m_fd = -1;
  int m_direct = -1;        // the same file with O_DIRECT; -1 when refused or not tried
  bool m_tried_direct = false;
  std::size_t m_align = 0;  // of m_direct
  std::vector<unsigned char> m_resident;  // mincore() when opened: pages in the page cache
  AlignedBuffer m_bounce;   // for a destination direct I/O cannot take
};

}  // namespace gb::bundles::detail
