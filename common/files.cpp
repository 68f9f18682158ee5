#include "common/files.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace gb {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

Result<std::string> read_file(const fs::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return input_error(path.string() + ": cannot read: " + errno_text());
  auto too_large = [&] { return input_error(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes"); };
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) > max_bytes && !ec) return too_large();
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (out.size() + static_cast<size_t>(in.gcount()) > max_bytes) return too_large();
    out.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return op_error(path.string() + ": read failed");
  return out;
}

Result<AtomicFile> AtomicFile::create(const fs::path& final_path, int mode) {
  fs::path dir = final_path.parent_path().empty() ? fs::path(".") : final_path.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return op_error(dir.string() + ": cannot create folder: " + ec.message());
  std::string tmpl = (dir / (final_path.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return op_error(final_path.string() + ": cannot create temp file: " + errno_text());
  ::fchmod(fd, static_cast<mode_t>(mode));
  return AtomicFile(final_path, fs::path(tmpl), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_final(std::move(other.m_final)), m_temp(std::move(other.m_temp)), m_fd(other.m_fd) {
  other.m_fd = -1;
  other.m_temp.clear();
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) ::close(m_fd);
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
}

Result<void> AtomicFile::write(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(m_fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return op_error(m_temp.string() + ": write failed: " + errno_text());
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Result<void> AtomicFile::commit() {
  if (::fsync(m_fd) != 0) return op_error(m_temp.string() + ": fsync failed: " + errno_text());
  ::close(m_fd);
  m_fd = -1;
  if (::rename(m_temp.c_str(), m_final.c_str()) != 0)
    return op_error(m_final.string() + ": rename failed: " + errno_text());
  m_temp.clear();
  return fsync_dir(m_final.parent_path().empty() ? fs::path(".") : m_final.parent_path());
}

Result<void> fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return op_error(dir.string() + ": cannot open folder: " + errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return op_error(dir.string() + ": fsync failed: " + errno_text());
  return {};
}

Result<void> write_atomic(const fs::path& path, std::string_view data, int mode) {
  auto file = AtomicFile::create(path, mode);
  if (!file) return file.error();
  if (auto r = file->write(data); !r) return r;
  return file->commit();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

bool is_temp_name(std::string_view filename) {
  auto pos = filename.rfind(".tmp.");
  return pos != std::string_view::npos && filename.size() - pos == 11;
}

}  // namespace gb
