#pragma once
// Small file helpers. write_atomic() is how every file the tool owns reaches
// disk: a temp file in the same folder ("NAME.tmp.XXXXXX"), fsync, rename,
// fsync of the folder. A crash leaves either the old file or the new one.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace gb {

namespace fs = std::filesystem;

// With a size limit, for input: a larger file is refused before it is read
// ("FILE: larger than N bytes"), and so is one that grows past it.
Result<std::string> read_file(const fs::path& path, size_t max_bytes = SIZE_MAX);
Result<void> write_atomic(const fs::path& path, std::string_view data, int mode = 0644);

// A file being written under a temporary name beside its final path. The
// destructor removes it unless commit() published it.
class AtomicFile {
public:
  static Result<AtomicFile> create(const fs::path& final_path, int mode = 0644);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  Result<void> write(std::string_view data);
  // fsync, rename onto the final path, fsync the folder.
  Result<void> commit();
  const fs::path& temp_path() const { return m_temp; }
  int fd() const { return m_fd; }

private:
  AtomicFile(fs::path final_path, fs::path temp, int fd) : m_final(std::move(final_path)), m_temp(std::move(temp)), m_fd(fd) {}
  fs::path m_final;
  fs::path m_temp;
  int m_fd = -1;
};

// A folder removed, with everything in it, when the object dies (scratch
// space for files that only live while a command runs).
class ScratchDir {
public:
  explicit ScratchDir(fs::path path) : m_path(std::move(path)) {}
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

// True for names AtomicFile leaves behind after a crash ("x.tmp.AbC123").
bool is_temp_name(std::string_view filename);

Result<void> fsync_dir(const fs::path& dir);

}  // namespace gb
