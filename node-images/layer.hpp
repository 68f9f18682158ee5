#pragma once
// A deterministic root filesystem layer: the same inputs give the same bytes.
//
// The tar is POSIX pax (restricted: plain ustar headers unless a field needs
// an extension), entries sorted by path, every parent folder present, mtime
// SOURCE_DATE_EPOCH (or 0), uid/gid 0 with names root/root, modes as given
// (no umask), no atime/ctime/xattrs. Paths have no leading "/" or "./".
// Names are UTF-8 bytes; a name that is not ASCII goes in a pax "path"
// record, the same whatever the locale.
// The gzip form has no timestamp or file name in its header, so the
// compressed digest is stable too.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace gb::node_images {

struct LayerEntry {
  enum class Kind { File, Dir, Symlink };
  Kind kind = Kind::File;
  unsigned mode = 0644;
  std::filesystem::path source;  // File: read from here when set
  std::string data;              // File: else these bytes
  std::string link;              // Symlink target
};

struct LayerFileRecord {
  std::string path;
  std::string type;  // file | dir | symlink
  unsigned mode = 0;
  std::uint64_t size = 0;
  std::string sha256;  // files only
  std::string link;
};

struct LayerBlob {
  std::filesystem::path file;
  std::string sha256;  // hex
  std::uint64_t size = 0;
};

class LayerBuilder {
public:
  void add_dir(const std::string& path, unsigned mode = 0755);
  void add_file(const std::string& path, const std::filesystem::path& source, unsigned mode);
  void add_data(const std::string& path, std::string data, unsigned mode = 0644);
  void add_symlink(const std::string& path, const std::string& target);
  bool has(const std::string& path) const { return m_entries.count(normalise(path)) > 0; }
  const std::map<std::string, LayerEntry>& entries() const { return m_entries; }

  // Writes the tar to `out` (atomically) and returns its digest; fills
  // `records` with one row per entry, in tar order.
  Result<LayerBlob> write_tar(const std::filesystem::path& out, std::vector<LayerFileRecord>* records = nullptr) const;

  static std::string normalise(const std::string& path);

private:
  void put(const std::string& path, LayerEntry e);  // at normalise(path), its missing parents as folders
  std::map<std::string, LayerEntry> m_entries;
};

// Deterministic gzip of `tar` into `out`.
Result<LayerBlob> gzip_layer(const std::filesystem::path& tar, const std::filesystem::path& out);

}  // namespace gb::node_images
