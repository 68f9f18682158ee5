#include "bundles/volume_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signing/digest.hpp"

namespace gb::bundles::detail {

namespace {

constexpr std::size_t k_page_align = 4096;

// What O_DIRECT needs of offsets, sizes and memory on fd's file system:
// statx's word where the kernel gives it (Linux 6.1), else 4096, which suits
// every common block size; 0 where direct I/O is not offered.
std::size_t direct_alignment(int fd) {
  std::size_t align = k_page_align;
#ifdef STATX_DIOALIGN
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
    if (sx.stx_dio_offset_align == 0) return 0;
    align = std::max<std::size_t>(sx.stx_dio_offset_align, sx.stx_dio_mem_align);
  }
#endif
  // Chunks are aligned to 4096 and sized in multiples of it.
  if (align > k_page_align || (align & (align - 1)) != 0) return 0;
  return align;
}

bool set_direct(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  return ::fcntl(fd, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) == 0;
}

std::string errno_message() { return std::strerror(errno); }

}  // namespace

void AlignedFree::operator()(char* p) const { std::free(p); }

AlignedBuffer aligned_buffer(std::size_t size) {
  void* p = nullptr;
  if (::posix_memalign(&p, k_page_align, size) != 0) throw std::bad_alloc();
  return AlignedBuffer(static_cast<char*>(p));
}

// ---- VolumeStream ----------------------------------------------------------

VolumeStream::VolumeStream(int fd, std::string name) : m_fd(fd), m_name(std::move(name)) {
  m_align = direct_alignment(fd);
  if (m_align && !set_direct(fd, true)) m_align = 0;  // the file system refuses it: through the page cache
  try {
    m_hasher = std::thread([this] { hash_loop(); });
    m_writer = std::thread([this] { write_loop(); });
  } catch (...) {
    stop();
    throw;
  }
}

VolumeStream::~VolumeStream() { stop(); }

void VolumeStream::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_hasher.joinable()) m_hasher.join();
  if (m_writer.joinable()) m_writer.join();
}

void VolumeStream::fail(Failure f) {
  {
    std::lock_guard lock(m_mutex);
    if (!m_error) m_error = std::move(f);
    m_stop = true;
  }
  m_cv.notify_all();
}

void VolumeStream::hand_off(Chunk* c) {
  {
    std::lock_guard lock(m_mutex);
    m_to_hash.push_back(c);
  }
  m_cv.notify_all();
}

// A free chunk for the bytes that follow: a new one while there are fewer
// than k_max_chunks, else the next the writer gives back.
Result<void> VolumeStream::next_chunk() {
  std::unique_lock lock(m_mutex);
  if (m_free.empty() && m_chunks.size() < k_max_chunks && !m_stop) {
    lock.unlock();
    auto c = std::make_unique<Chunk>();
    c->data = aligned_buffer(k_chunk);
    m_chunks.push_back(std::move(c));
    lock.lock();
    m_free.push_back(m_chunks.back().get());
  }
  m_cv.wait(lock, [&] { return !m_free.empty() || m_stop; });
  if (m_stop) return m_error ? *m_error : op_error(m_name + ": write stopped");
  m_cur = m_free.front();
  m_free.pop_front();
  lock.unlock();
  m_cur->used = 0;
  m_cur->offset = m_pos;
  m_cur->segments.clear();
  return {};
}

Result<std::span<char>> VolumeStream::room() {
  if (!m_cur || m_cur->used == k_chunk)
    if (auto r = next_chunk(); !r) return r.error();
  return std::span<char>(m_cur->data.get() + m_cur->used, k_chunk - m_cur->used);
}

// Counts n bytes placed at the end of the current chunk, recording those of
// a checked entry for the hasher; hands the chunk on when it is full.
void VolumeStream::advance(std::size_t n) {
  if (m_check_left > 0) {
    std::size_t mine = static_cast<std::size_t>(std::min<std::uint64_t>(n, m_check_left));
    m_check_left -= mine;
    m_cur->segments.push_back({m_check, m_cur->used, mine, m_check_left == 0});
    if (m_check_left == 0) m_check.reset();
  }
  m_cur->used += n;
  m_pos += n;
  if (m_cur->used == k_chunk) {
    hand_off(m_cur);
    m_cur = nullptr;
  }
}

Result<void> VolumeStream::append(const char* data, std::size_t size) {
  // Read in place (room()): already there.
  if (m_cur && data == m_cur->data.get() + m_cur->used && size <= k_chunk - m_cur->used) {
    advance(size);
    return {};
  }
  while (size > 0) {
    auto r = room();
    if (!r) return r.error();
    std::size_t n = std::min(size, r->size());
    std::memmove(r->data(), data, n);
    advance(n);
    data += n;
    size -= n;
  }
  return {};
}

Result<void> VolumeStream::expect(std::uint64_t size, std::string sha256_hex, std::string mismatch) {
  if (m_check_left > 0) return op_error(m_name + ": an entry began before the last one ended");
  if (size == 0) {  // no bytes for the hasher to see
    if (signing::sha256_hex("") != sha256_hex) return op_error(mismatch);
    return {};
  }
  m_check = std::make_shared<const Check>(Check{std::move(sha256_hex), std::move(mismatch)});
  m_check_left = size;
  return {};
}

Result<std::uint64_t> VolumeStream::finish() {
  if (m_check_left > 0) fail(op_error(m_name + ": the stream ended inside an entry"));
  if (m_cur && m_cur->used > 0) hand_off(m_cur);
  m_cur = nullptr;
  hand_off(nullptr);
  if (m_hasher.joinable()) m_hasher.join();
  if (m_writer.joinable()) m_writer.join();
  if (m_error) return *m_error;
  // A padded last direct write leaves the file longer than the stream.
  if (m_truncate && ::ftruncate(m_fd, static_cast<off_t>(m_pos)) != 0) return op_error(m_name + ": write failed: " + errno_message());
  return m_pos;
}

void VolumeStream::hash_loop() {
  std::shared_ptr<const Check> current;
  signing::Sha256 sha;
  for (;;) {
    Chunk* c = nullptr;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return !m_to_hash.empty() || m_stop; });
      if (m_stop) return;
      c = m_to_hash.front();
      m_to_hash.pop_front();
    }
    if (c) {
      for (const auto& s : c->segments) {
        if (s.check != current) {  // an entry's first bytes
          current = s.check;
          sha = signing::Sha256();
        }
        sha.update(c->data.get() + s.offset, s.size);
        if (s.last) {
          if (sha.hex() != current->sha256) return fail(op_error(current->mismatch));
          current.reset();
        }
      }
    }
    {
      std::lock_guard lock(m_mutex);
      m_to_write.push_back(c);  // the end too, so the writer stops after the last chunk
    }
    m_cv.notify_all();
    if (!c) return;
  }
}

void VolumeStream::write_loop() {
  for (;;) {
    Chunk* c = nullptr;
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait(lock, [&] { return !m_to_write.empty() || m_stop; });
      if (m_stop) return;
      c = m_to_write.front();
      m_to_write.pop_front();
    }
    if (!c) return;
    if (auto r = write_chunk(*c); !r) return fail(r.error());
    {
      std::lock_guard lock(m_mutex);
      m_free.push_back(c);
    }
    m_cv.notify_all();
  }
}

Result<void> VolumeStream::write_chunk(Chunk& c) {
  std::size_t done = 0;
  if (m_align) {
    // Direct: whole aligned blocks, the last chunk padded with zeros and the
    // file cut back to the stream's length at the end.
    std::size_t padded = (c.used + m_align - 1) / m_align * m_align;
    std::memset(c.data.get() + c.used, 0, padded - c.used);
    while (done < padded) {
      ssize_t n = ::pwrite(m_fd, c.data.get() + done, padded - done, static_cast<off_t>(c.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EINVAL) return op_error(m_name + ": write failed: " + errno_message());
      if (n <= 0 || (done + static_cast<std::size_t>(n)) % m_align != 0) {
        // Refused (EINVAL: not the alignment it wants after all) or cut short
        // (a full disk): the rest through the page cache, which says why.
        if (n > 0) done += static_cast<std::size_t>(n);
        m_align = 0;
        if (!set_direct(m_fd, false)) return op_error(m_name + ": write failed: " + errno_message());
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (padded > c.used) m_truncate = true;
    if (done >= c.used) return {};
  }
  return write_buffered(c.data.get() + done, c.used - done, c.offset + done);
}

Result<void> VolumeStream::write_buffered(const char* data, std::size_t size, std::uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pwrite(m_fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return op_error(m_name + ": write failed: " + errno_message());
    if (n == 0) return op_error(m_name + ": write failed: no progress");
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return {};
}

// ---- DirectReader ----------------------------------------------------------

DirectReader::~DirectReader() { close(); }

void DirectReader::close() {
  if (m_fd >= 0) ::close(m_fd);
  if (m_direct >= 0) ::close(m_direct);
  m_fd = m_direct = -1;
  m_tried_direct = false;
  m_resident.clear();
  m_path.clear();
}

Result<void> DirectReader::open(const std::filesystem::path& path) {
  close();
  m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (m_fd < 0) return op_error(path.string() + ": cannot open");
  m_path = path;
  // Which pages are in the page cache now: those are read from there.
  struct stat st {};
  if (::fstat(m_fd, &st) == 0 && st.st_size > 0) {
    auto size = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, m_fd, 0);
    if (map != MAP_FAILED) {
      long page = ::sysconf(_SC_PAGESIZE);
      m_resident.resize((size + static_cast<std::size_t>(page) - 1) / static_cast<std::size_t>(page));
      if (::mincore(map, size, m_resident.data()) != 0) m_resident.clear();
      ::munmap(map, size);
    }
  }
  return {};
}

bool DirectReader::cached(std::uint64_t offset, std::size_t size) const {
  if (m_resident.empty() || size == 0) return false;
  auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::uint64_t first = offset / page, last = (offset + size - 1) / page;
  if (last >= m_resident.size()) return false;
  for (std::uint64_t p = first; p <= last; ++p)
    if (!(m_resident[p] & 1)) return false;
  return true;
}

Result<void> DirectReader::read(const std::filesystem::path& path, std::uint64_t offset, char* dst, std::size_t size) {
  if (path != m_path || m_fd < 0)
    if (auto r = open(path); !r) return r;
  bool direct = !cached(offset, size);
  if (direct && !m_tried_direct) {
    m_tried_direct = true;
    m_direct = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    m_align = m_direct >= 0 ? direct_alignment(m_direct) : 0;
    if (m_direct >= 0 && m_align == 0) {
      ::close(m_direct);
      m_direct = -1;
    }
  }
  while (size > 0) {
    ssize_t n;
    if (direct && m_direct >= 0 && offset % m_align == 0 && size >= m_align) {
      // Whole blocks straight from the disk, into a bounce buffer when the
      // destination is not aligned; a tail below one block comes through the
      // page cache.
      std::size_t len = size / m_align * m_align;
      char* via = reinterpret_cast<std::uintptr_t>(dst) % m_align == 0 ? dst : nullptr;
      if (!via) {
        if (!m_bounce) m_bounce = aligned_buffer(VolumeStream::k_chunk);
        via = m_bounce.get();
        len = std::min(len, VolumeStream::k_chunk);
      }
      n = ::pread(m_direct, via, len, static_cast<off_t>(offset));
      if (n < 0 && errno == EINVAL) {  // not the alignment it wants after all
        ::close(m_direct);
        m_direct = -1;
        continue;
      }
      if (n > 0 && via != dst) std::memcpy(dst, via, static_cast<std::size_t>(n));
    } else {
      n = ::pread(m_fd, dst, size, static_cast<off_t>(offset));
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return op_error(path.string() + ": cannot read: " + errno_message());
    if (n == 0) return op_error(path.string() + ": short read (the store changed under us?)");
    dst += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return {};
}

}  // namespace gb::bundles::detail
