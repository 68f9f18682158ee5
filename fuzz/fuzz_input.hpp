#pragma once
// Shared by the fuzz targets: the input as text, and scratch files for
// readers that only take a path. Files live in one folder per process under
// $TMPDIR and are rewritten for every input.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace gbfuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Removed when the process exits normally; a crash leaves it for a look.
struct ScratchDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("gpubundle-fuzz." + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

// For targets that write whole trees per input: /dev/shm when there (no
// disk, no fsync cost), else scratch_dir().
struct MemoryScratchDir : ScratchDir {
  MemoryScratchDir() {
    std::error_code ec;
    if (!std::filesystem::is_directory("/dev/shm", ec)) return;
    std::filesystem::remove_all(path, ec);
    path = std::filesystem::path("/dev/shm") / path.filename();
    std::filesystem::create_directories(path);
  }
};

inline const std::filesystem::path& memory_scratch_dir() {
  static const MemoryScratchDir dir;
  return dir.path;
}

inline std::filesystem::path scratch_file(const std::string& name, std::string_view bytes) {
  auto p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

}  // namespace gbfuzz
