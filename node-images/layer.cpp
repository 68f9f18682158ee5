#include "node-images/layer.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>

#include "common/archive_raii.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;

namespace {

// Sink that hashes and counts what libarchive writes into an AtomicFile.
struct HashingSink {
  AtomicFile* file = nullptr;
  signing::Sha256 hash;
  std::uint64_t size = 0;
  std::string error;
};

la_ssize_t sink_write(archive*, void* data, const void* buf, size_t n) {
  auto* s = static_cast<HashingSink*>(data);
  auto r = s->file->write(std::string_view(static_cast<const char*>(buf), n));
  if (!r) {
    s->error = r.error().message;
    return -1;
  }
  s->hash.update(buf, n);
  s->size += n;
  return static_cast<la_ssize_t>(n);
}

// libarchive turns a name into the pax header's UTF-8 through the thread's
// LC_CTYPE. A layer's names are UTF-8 bytes (Debian's ca-certificates ships
// some that are not ASCII), so they are written under C.UTF-8 whatever the
// caller's locale: in "C" they would fail, in another charset change. ASCII
// names need no conversion and come out the same either way.
class Utf8Names {
public:
  Utf8Names() : m_utf8(::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr))) {
    if (m_utf8) m_old = ::uselocale(m_utf8);
  }
  ~Utf8Names() {
    if (!m_utf8) return;
    ::uselocale(m_old);
    ::freelocale(m_utf8);
  }
  Utf8Names(const Utf8Names&) = delete;
  Utf8Names& operator=(const Utf8Names&) = delete;

private:
  locale_t m_utf8;
  locale_t m_old = LC_GLOBAL_LOCALE;
};

}  // namespace

std::string LayerBuilder::normalise(const std::string& path) {
  std::string p = path;
  while (starts_with(p, "/") || starts_with(p, "./")) p = p.substr(p[0] == '/' ? 1 : 2);
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}

void LayerBuilder::put(const std::string& path, LayerEntry e) {
  auto p = normalise(path);
  for (auto slash = p.rfind('/'); slash != std::string::npos && slash > 0; slash = p.rfind('/', slash - 1))
    m_entries.try_emplace(p.substr(0, slash), LayerEntry{LayerEntry::Kind::Dir, 0755, {}, {}, {}});
  m_entries[p] = std::move(e);
}

void LayerBuilder::add_dir(const std::string& path, unsigned mode) { put(path, {LayerEntry::Kind::Dir, mode, {}, {}, {}}); }
void LayerBuilder::add_file(const std::string& path, const fs::path& source, unsigned mode) {
  put(path, {LayerEntry::Kind::File, mode, source, {}, {}});
}
void LayerBuilder::add_data(const std::string& path, std::string data, unsigned mode) {
  put(path, {LayerEntry::Kind::File, mode, {}, std::move(data), {}});
}
void LayerBuilder::add_symlink(const std::string& path, const std::string& target) {
  put(path, {LayerEntry::Kind::Symlink, 0777, {}, {}, target});
}

Result<LayerBlob> LayerBuilder::write_tar(const fs::path& out, std::vector<LayerFileRecord>* records) const {
  Utf8Names utf8;  // before the writer exists: libarchive reads the charset once per archive
  auto file = AtomicFile::create(out, 0644);
  if (!file) return file.error();
  HashingSink sink;
  sink.file = &*file;
  gb::detail::ArchiveWriter a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open(a.get(), &sink, nullptr, sink_write, nullptr) != ARCHIVE_OK)
    return op_error(out.string() + ": " + gb::detail::archive_error(a.get()));
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  const std::int64_t mtime = epoch->value_or(0);
  for (const auto& [path, e] : m_entries) {
    gb::detail::ArchiveEntry ae(archive_entry_new());
    archive_entry_set_pathname(ae.get(), path.c_str());
    archive_entry_set_uid(ae.get(), 0);
    archive_entry_set_gid(ae.get(), 0);
    archive_entry_set_uname(ae.get(), "root");
    archive_entry_set_gname(ae.get(), "root");
    archive_entry_set_mtime(ae.get(), mtime, 0);
    LayerFileRecord rec{path, "", e.mode & 07777, 0, "", e.link};
    if (e.kind == LayerEntry::Kind::Dir) {
      archive_entry_set_filetype(ae.get(), AE_IFDIR);
      archive_entry_set_perm(ae.get(), e.mode & 07777);
      rec.type = "dir";
    } else if (e.kind == LayerEntry::Kind::Symlink) {
      archive_entry_set_filetype(ae.get(), AE_IFLNK);
      archive_entry_set_perm(ae.get(), 0777);
      archive_entry_set_symlink(ae.get(), e.link.c_str());
      rec.type = "symlink";
      rec.mode = 0777;
    } else {
      // Files on disk are streamed (driver libraries run to hundreds of MiB); data entries are small.
      std::error_code ec;
      std::uint64_t size = e.source.empty() ? e.data.size() : fs::file_size(e.source, ec);
      if (ec) return op_error(e.source.string() + ": " + ec.message());
      archive_entry_set_filetype(ae.get(), AE_IFREG);
      archive_entry_set_perm(ae.get(), e.mode & 07777);
      archive_entry_set_size(ae.get(), static_cast<la_int64_t>(size));
      rec.type = "file";
      rec.size = size;
      if (archive_write_header(a.get(), ae.get()) != ARCHIVE_OK)
        return op_error(out.string() + ": writing " + path + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
      signing::Sha256 hash;
      // Clang 14 cannot capture a structured binding: name the path explicitly.
      auto put = [&, &entry_path = path](const char* data, std::size_t n) -> Result<void> {
        hash.update(data, n);
        if (n && archive_write_data(a.get(), data, n) < 0)
          return op_error(out.string() + ": writing " + entry_path + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
        return {};
      };
      if (e.source.empty()) {
        if (auto r = put(e.data.data(), e.data.size()); !r) return r.error();
      } else {
        std::ifstream in(e.source, std::ios::binary);
        if (!in) return op_error(e.source.string() + ": cannot open");
        std::string buf(1 << 16, '\0');
        std::uint64_t done = 0;
        while (in && done < size) {
          in.read(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size(), size - done)));
          auto n = static_cast<std::size_t>(in.gcount());
          if (auto r = put(buf.data(), n); !r) return r.error();
          done += n;
        }
        if (in.bad() || done != size) return op_error(e.source.string() + ": changed or unreadable while it was being written");
      }
      rec.sha256 = hash.hex();
      if (records) records->push_back(std::move(rec));
      continue;
    }
    if (archive_write_header(a.get(), ae.get()) != ARCHIVE_OK)
      return op_error(out.string() + ": writing " + path + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
    if (records) records->push_back(std::move(rec));
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return op_error(out.string() + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
  if (auto r = file->commit(); !r) return r.error();
  return LayerBlob{out, sink.hash.hex(), sink.size};
}

Result<LayerBlob> gzip_layer(const fs::path& tar, const fs::path& out) {
  auto file = AtomicFile::create(out, 0644);
  if (!file) return file.error();
  HashingSink sink;
  sink.file = &*file;
  gb::detail::ArchiveWriter a(archive_write_new());
  archive_write_set_format_raw(a.get());
  archive_write_add_filter_gzip(a.get());
  // No timestamp in the gzip header: the same tar gives the same blob.
  if (archive_write_set_filter_option(a.get(), "gzip", "timestamp", nullptr) != ARCHIVE_OK)
    return op_error(std::string("libarchive gzip: cannot turn the timestamp off: ") + gb::detail::archive_error(a.get()));
  archive_write_set_bytes_per_block(a.get(), 0);
  if (archive_write_open(a.get(), &sink, nullptr, sink_write, nullptr) != ARCHIVE_OK)
    return op_error(out.string() + ": " + gb::detail::archive_error(a.get()));
  gb::detail::ArchiveEntry ae(archive_entry_new());
  archive_entry_set_filetype(ae.get(), AE_IFREG);
  archive_entry_set_pathname(ae.get(), "layer.tar");
  if (archive_write_header(a.get(), ae.get()) != ARCHIVE_OK) return op_error(out.string() + ": " + gb::detail::archive_error(a.get()));
  std::ifstream in(tar, std::ios::binary);
  if (!in) return op_error(tar.string() + ": cannot open");
  std::string buf(1 << 16, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    auto n = in.gcount();
    if (n > 0 && archive_write_data(a.get(), buf.data(), static_cast<size_t>(n)) < 0)
      return op_error(out.string() + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return op_error(out.string() + ": " + (sink.error.empty() ? gb::detail::archive_error(a.get()) : sink.error));
  if (auto r = file->commit(); !r) return r.error();
  return LayerBlob{out, sink.hash.hex(), sink.size};
}

}  // namespace gb::node_images
