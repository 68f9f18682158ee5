#include <algorithm>
#include <set>
#include <array>
#include <optional>
#include <nlohmann/json.hpp>
#include <zstd.h>

#include "common/archive_raii.hpp"
#include "bundles/bundle.hpp"
#include "bundles/closure.hpp"
#include "bundles/volume_stream.hpp"
#include "common/files.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

namespace gb::bundles {

namespace {

constexpr std::uint64_t k_zstd_budget = 64 << 20;     // compressed bytes held in memory at most
constexpr std::uint64_t k_zstd_min_blob = 4096;       // below this a tar block eats the gain
constexpr int k_zstd_level = 3;
constexpr std::uint64_t k_min_volume_data = 64 << 10;  // least payload room a volume must have

std::uint64_t round512(std::uint64_t n) { return (n + 511) / 512 * 512; }
// Tar bytes an entry takes: header, data padded to blocks, room for a pax header.
std::uint64_t tar_cost(std::uint64_t size) { return 512 + round512(size) + 1024; }

// libarchive's reason, which may be null (a failed write callback sets none).
Failure tar_error(archive* a) {
  const char* why = archive_error_string(a);
  return op_error(std::string("tar: ") + (why ? why : "write failed"));
}

bool compressible(const std::string& media_type) {
  // JSON documents and uncompressed layers (OCI "...tar", Docker "rootfs.diff.tar").
  return media_type.find("json") != std::string::npos || ends_with(media_type, ".tar");
}

struct Entry {
  BundleFile file;        // file.size/sha256: the stored bytes of this entry (or part)
  std::string memory;     // stored bytes held in memory (generated or compressed)
  std::filesystem::path disk;  // or read from this file
  std::uint64_t offset = 0;    // slice of the source, for parts
  bool from_memory = false;
};

class Writer {
public:
  Writer(const mirror::Store& store, const recipes::Lock& lock, const signing::PrivateKey& key, const CreateOptions& o, Progress& p)
      : m_store(store), m_lock(lock), m_key(key), m_o(o), m_progress(p) {}

  Result<CreateReport> run() {
    if (auto r = collect(); !r) return r.error();
    if (auto r = plan_entries(); !r) return r.error();
    if (auto r = assign_volumes(); !r) return r.error();
    return write_all();
  }

private:
  Result<void> collect() {
    // A conventional recipe with packages.sources: without its repository the
    // driver pods at the site would find no kernel packages.
    for (const auto& li : m_lock.images)
      if (std::find(li.components.begin(), li.components.end(), recipes::k_package_server_component) != li.components.end() &&
          !m_lock.package_repo)
        return input_error("lock lists the package server image " + li.source +
                           " but no site package repository: make it with `gpubundle build` from the recipe");
    for (const auto& li : m_lock.images) {
      if (li.digest.empty())
        return op_error("lock image " + li.source + " has no digest: run `gpubundle mirror` first");
      auto site = site_image_closure(m_store, m_lock, li, m_blobs);
      if (!site) return site.error();
      auto& blobs = site->blobs;
      // A node overlay is exported from this bundle alone (node-image export): a delta never leaves its blobs out.
      if (std::find(li.components.begin(), li.components.end(), recipes::k_node_overlay_component) != li.components.end())
        m_whole.insert(blobs.begin(), blobs.end());
      if (!site->index_bytes.empty()) m_made[site->digest] = std::move(site->index_bytes);
      BundleImage image{li.source, site->media_type, site->digest, m_lock.platforms_of(li), std::move(blobs), li.site_digest.empty() ? "" : li.digest};
      std::sort(image.blobs.begin(), image.blobs.end());
      m_images.push_back(std::move(image));
    }
    std::sort(m_images.begin(), m_images.end(), [](const auto& a, const auto& b) { return a.ref < b.ref; });
    return {};
  }

  void add_memory(const std::string& path, std::string bytes) {
    Entry e;
    e.file.path = path;
    e.file.size = bytes.size();
    e.file.sha256 = signing::sha256_hex(bytes);
    e.memory = std::move(bytes);
    e.from_memory = true;
    m_entries.push_back(std::move(e));
  }

  Result<void> add_disk(const std::string& path, const std::filesystem::path& file) {
    std::error_code ec;
    auto size = std::filesystem::file_size(file, ec);
    if (ec) return input_error(file.string() + ": cannot read: " + ec.message());
    auto hex = signing::sha256_file_hex(file);
    if (!hex) return hex.error();
    Entry e;
    e.file.path = path;
    e.file.size = size;
    e.file.sha256 = hex.value();
    e.disk = file;
    m_entries.push_back(std::move(e));
    return {};
  }

  Result<void> plan_entries() {
    // The lock, the chart, extra files, and the bundle's own OCI layout.
    add_memory("lock.json", recipes::lock_to_json(m_lock));
    auto add_chart = [&](const recipes::LockChart& c) -> Result<void> {
      auto chart = m_store.chart_path(c.name, c.version);
      if (!std::filesystem::exists(chart))
        return op_error("chart " + c.name + " " + c.version + " is not in the store (" + chart.string() + "): run `gpubundle mirror`");
      return add_disk("charts/" + chart.filename().string(), chart);
    };
    if (auto r = add_chart(m_lock.chart); !r) return r;
    if (m_lock.network)  // the Network Operator's chart rides along the same way
      if (auto r = add_chart(m_lock.network->chart); !r) return r;
    for (const auto& [path, file] : m_o.extra)
      if (auto r = add_disk(path, file); !r) return r;
    add_memory("oci/oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
    nlohmann::json index = {{"schemaVersion", 2}, {"mediaType", std::string(mirror::oci::k_oci_index)}, {"manifests", nlohmann::json::array()}};
    for (const auto& img : m_images) {
      index["manifests"].push_back({{"mediaType", img.media_type},
                                    {"digest", img.digest},
                                    {"size", m_blobs.at(img.digest).size},
                                    {"annotations", {{std::string(mirror::k_ref_name_annotation), img.ref}}}});
    }
    add_memory("oci/index.json", index.dump() + "\n");

    std::uint64_t zstd_held = 0;
    for (const auto& [digest, info] : m_blobs) {
      bool manifest = info.manifest;
      if (!manifest && !m_whole.count(digest) && m_o.have_blobs.count(digest)) {  // delta: the site has it
        m_omitted.push_back(digest);
        continue;
      }
      Entry e;
      e.file.path = "oci/blobs/sha256/" + signing::digest_hex(digest);
      e.file.blob = digest;
      e.file.size = info.size;
      e.file.sha256 = signing::digest_hex(digest);
      e.disk = m_store.blob_path(digest);
      m_report.blob_bytes += info.size;
      ++m_report.blobs;
      if (auto made = m_made.find(digest); made != m_made.end()) {  // a filtered index: in no store
        e.memory = made->second;
        e.from_memory = true;
        e.disk.clear();
      } else if (m_o.compress && compressible(info.media_type) && info.size >= k_zstd_min_blob && info.size <= k_max_zstd_content &&
          zstd_held + info.size <= k_zstd_budget) {
        auto raw = m_store.read_blob(digest);
        if (!raw) return raw.error();
        if (signing::sha256_digest(raw.value()) != digest) return op_error("store blob " + digest + " is corrupt: run `gpubundle store fsck`");
        std::string out(ZSTD_compressBound(raw->size()), '\0');
        size_t n = ZSTD_compress(out.data(), out.size(), raw->data(), raw->size(), k_zstd_level);
        // Keep it only when it saves at least a tar block and a tenth.
        if (!ZSTD_isError(n) && n + 512 < raw->size() && n * 10 < raw->size() * 9) {
          out.resize(n);
          m_report.bytes_saved_by_zstd += raw->size() - n;
          zstd_held += n;
          e.file.path += ".zst";
          e.file.encoding = "zstd";
          e.file.size = n;
          e.file.sha256 = signing::sha256_hex(out);
          e.memory = std::move(out);
          e.from_memory = true;
          e.disk.clear();
        }
      }
      m_entries.push_back(std::move(e));
    }
    m_report.blobs_omitted = m_omitted.size();
    std::sort(m_entries.begin(), m_entries.end(), [](const Entry& a, const Entry& b) { return a.file.path < b.file.path; });

    // The id names the content, whatever the split or the compression.
    signing::Sha256 id;
    for (const auto& e : m_entries) id.update((e.file.blob.empty() ? e.file.path + " " + e.file.sha256 : e.file.blob) + "\n");
    for (const auto& d : m_omitted) id.update("omitted " + d + "\n");
    m_report.bundle_id = id.hex().substr(0, 16);
    return {};
  }

  VolumeManifest manifest_for(int volume) const {
    VolumeManifest m;
    m.tool = std::string("gpubundle ") + GPUBUNDLE_VERSION;
    m.bundle_id = m_report.bundle_id;
    m.created = m_o.created;
    m.volume = volume;
    m.volumes = m_volumes;
    m.delta = !m_o.have_blobs.empty();
    m.delta_base = m_o.delta_base;
    m.omitted = m_omitted;
    m.lock_json = recipes::lock_to_json(m_lock);
    m.images = m_images;
    for (const auto& e : m_entries) m.files.push_back(e.file);
    return m;
  }

  // Cuts entries into volumes at entry boundaries; an entry larger than a
  // volume is cut into parts.
  Result<void> assign_volumes() {
    if (m_o.split_bytes == 0) return {};
    const std::uint64_t S = m_o.split_bytes;
    std::vector<Entry> whole = std::move(m_entries);
    std::uint64_t reserve = 64 << 10;
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (S < reserve + k_min_volume_data)
        return input_error("--split " + std::to_string(S) + " bytes is too small: each volume needs " + human_bytes(reserve + k_min_volume_data) +
                           " at least for its signed manifest and data");
      m_entries.clear();
      int vol = 1;
      std::uint64_t used = reserve;
      // Starts the next volume; the payload room a part has there.
      auto next_volume = [&] {
        ++vol;
        used = reserve;
        return (S - reserve - 1536) / 512 * 512;
      };
      for (const auto& w : whole) {
        std::uint64_t c = tar_cost(w.file.size);
        if (used + c <= S || c <= S - reserve) {  // whole, in this volume or the next
          if (used + c > S) next_volume();
          used += c;
          m_entries.push_back(w);
          m_entries.back().file.volume = vol;
          continue;
        }
        // Parts: fill this volume, then whole volumes.
        std::vector<std::pair<int, std::uint64_t>> parts;
        std::uint64_t left = w.file.size;
        std::uint64_t avail = used + 1536 + k_min_volume_data <= S ? (S - used - 1536) / 512 * 512 : next_volume();
        while (left > 0) {
          std::uint64_t n = std::min(left, avail);
          parts.push_back({vol, n});
          left -= n;
          used += tar_cost(n);
          if (left > 0) avail = next_volume();
        }
        std::uint64_t offset = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
          Entry p = w;
          char suffix[32];
          std::snprintf(suffix, sizeof suffix, ".part%04zu", i + 1);
          p.file.path += suffix;
          p.file.volume = parts[i].first;
          p.file.size = parts[i].second;
          p.file.part = static_cast<int>(i + 1);
          p.file.parts = static_cast<int>(parts.size());
          p.offset = w.offset + offset;
          offset += parts[i].second;
          m_entries.push_back(std::move(p));
        }
      }
      m_volumes = vol;
      // Is the reserve enough for the largest manifest and its signature?
      std::uint64_t need = 3 * 512 + round512(manifest_to_json(manifest_for(m_volumes)).size()) + 2048 + 1024 + 4096;
      if (need <= reserve) return hash_parts();
      reserve = need + (16 << 10);
    }
    return op_error("cannot plan volumes: the manifest keeps growing");
  }

  // Parts need their own digests before the manifest is written; this pass
  // also re-checks the whole blob against its digest.
  Result<void> hash_parts() {
    for (size_t i = 0; i < m_entries.size();) {
      Entry& first = m_entries[i];
      if (first.file.parts == 0) {
        ++i;
        continue;
      }
      size_t count = static_cast<size_t>(first.file.parts);
      signing::Sha256 whole;
      for (size_t k = i; k < i + count; ++k) {
        Entry& p = m_entries[k];
        signing::Sha256 h;
        auto r = read_slice(p, [&](std::string_view chunk) {
          h.update(chunk);
          whole.update(chunk);
          return Result<void>();
        });
        if (!r) return r;
        p.file.sha256 = h.hex();
      }
      std::string expect = first.file.encoding.empty() && !first.file.blob.empty() ? signing::digest_hex(first.file.blob) : "";
      if (!expect.empty() && whole.hex() != expect)
        return op_error("store blob " + first.file.blob + " is corrupt: run `gpubundle store fsck`");
      i += count;
    }
    return {};
  }

  template <typename F>
  Result<void> read_slice(const Entry& e, F&& sink) {
    if (e.from_memory) return sink(std::string_view(e.memory).substr(e.offset, e.file.size));
    std::uint64_t left = e.file.size;
    std::uint64_t pos = e.offset;
    while (left > 0) {
      auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, detail::VolumeStream::k_chunk));
      if (auto r = m_reader.read(e.disk, pos, m_buf.get(), n); !r) return r;
      if (auto r = sink(std::string_view(m_buf.get(), n)); !r) return r;
      left -= n;
      pos += n;
    }
    return {};
  }

  // A volume being written: its temp file, the stream into it while it is
  // written, and the first error of a write, which libarchive would reduce
  // to "write failed".
  struct VolumeOut {
    std::filesystem::path path;
    AtomicFile file;
    std::optional<Failure> error;
    detail::VolumeStream* stream = nullptr;
    // An error naming the volume file rather than its temp name.
    Failure named(const Failure& f) const {
      std::string temp = file.temp_path().string();
      if (starts_with(f.message, temp)) return op_error(path.string() + f.message.substr(temp.size()));
      if (starts_with(f.message, path.string())) return f;
      return op_error(path.string() + ": " + f.message);
    }
    // A failed write names the volume; anything else (a store blob that
    // fails its digest, a short read) says what it is about alone.
    Failure reason(const Failure& f) const { return starts_with(f.message, file.temp_path().string()) ? named(f) : f; }
  };

  static la_ssize_t write_cb(archive*, void* self, const void* buf, size_t len) {
    auto* out = static_cast<VolumeOut*>(self);
    if (auto r = out->stream->append(static_cast<const char*>(buf), len); !r) {
      if (!out->error) out->error = out->reason(r.error());
      return -1;
    }
    return static_cast<la_ssize_t>(len);
  }

  Result<void> add_entry(archive* a, const std::string& path, std::uint64_t size) {
    gb::detail::ArchiveEntry e(archive_entry_new());
    archive_entry_set_pathname(e.get(), path.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e.get(), m_mtime, 0);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    if (archive_write_header(a, e.get()) != ARCHIVE_OK) return tar_error(a);
    return {};
  }

  Result<void> write_data(archive* a, std::string_view data) {
    if (archive_write_data(a, data.data(), data.size()) != static_cast<la_ssize_t>(data.size()))
      return tar_error(a);
    m_report.bytes_written += data.size();
    m_progress.advance(data.size());
    return {};
  }

  Result<void> write_volume(int v, VolumeOut& out) {
    detail::VolumeStream stream(out.file.fd(), out.file.temp_path().string());
    out.stream = &stream;
    gb::detail::ArchiveWriter a(archive_write_new());
    auto r = write_tar(v, a.get(), out, stream);
    // A failed volume is thrown away: libarchive must not fill the entry it
    // stopped in with zeros (gigabytes for a layer) when it is freed.
    if (!r) archive_write_fail(a.get());
    a.reset();
    out.stream = nullptr;
    if (!r) return out.error ? *out.error : out.reason(r.error());  // the disk's reason, not libarchive's
    if (auto done = stream.finish(); !done) return out.reason(done.error());
    return {};
  }

  // The tar stream of volume v into `stream`. libarchive makes every header,
  // padding and the end; unblocked, it hands each write straight to write_cb,
  // so a store blob read into its place in the stream is not copied again.
  Result<void> write_tar(int v, archive* a, VolumeOut& out, detail::VolumeStream& stream) {
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_per_block(a, 0);
    if (archive_write_open(a, &out, nullptr, write_cb, nullptr) != ARCHIVE_OK)
      return tar_error(a);
    std::string manifest = manifest_to_json(manifest_for(v));
    auto sig = signing::sign_detached(m_key, manifest);
    if (!sig) return sig.error();
    for (auto [path, bytes] : {std::pair{std::string(k_volume_manifest), &manifest}, std::pair{std::string(k_volume_signature), &sig.value()}}) {
      if (auto r = add_entry(a, path, bytes->size()); !r) return r;
      if (auto r = write_data(a, *bytes); !r) return r;
    }
    for (const auto& e : m_entries) {
      if (e.file.volume != v) continue;
      if (auto r = add_entry(a, e.file.path, e.file.size); !r) return r;
      if (e.from_memory) {
        if (auto r = write_data(a, std::string_view(e.memory).substr(e.offset, e.file.size)); !r) return r;
        continue;
      }
      // A store file is read into the stream and re-hashed there, on the
      // stream's hasher thread, against the digest the manifest gives it.
      if (auto r = stream.expect(e.file.size, e.file.sha256,
                                 "store blob " + (e.file.blob.empty() ? e.disk.string() : e.file.blob) +
                                     " does not match its digest: run `gpubundle store fsck`");
          !r)
        return r;
      for (std::uint64_t pos = 0; pos < e.file.size;) {
        auto room = stream.room();
        if (!room) return room.error();
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(e.file.size - pos, room->size()));
        if (auto r = m_reader.read(e.disk, e.offset + pos, room->data(), n); !r) return r;
        if (auto r = write_data(a, std::string_view(room->data(), n)); !r) return r;
        pos += n;
      }
    }
    if (archive_write_close(a) != ARCHIVE_OK) return tar_error(a);
    return {};
  }

  Result<CreateReport> write_all() {
    m_mtime = m_o.mtime;
    std::uint64_t total = 0;
    for (const auto& e : m_entries) total += e.file.size;
    m_progress.begin("bundle", total);
    std::vector<std::unique_ptr<VolumeOut>> files;  // stable addresses: libarchive holds one
    for (int v = 1; v <= m_volumes; ++v) {
      auto path = volume_path(m_o.output, v, m_volumes);
      auto file = AtomicFile::create(path, 0644);
      if (!file) return file.error();
      files.push_back(std::make_unique<VolumeOut>(VolumeOut{path, std::move(file.value()), std::nullopt}));
      if (auto r = write_volume(v, *files.back()); !r) return r.error();
      m_report.volumes.push_back(path);
    }
    // Publish only when every volume is complete, the first volume (the name
    // users pass on) last: a run killed here leaves no volume 1 beside a
    // partial set.
    for (auto it = files.rbegin(); it != files.rend(); ++it)
      if (auto r = (*it)->file.commit(); !r) return (*it)->named(r.error());
    std::error_code ec;
    for (int v = m_volumes == 1 ? 1 : m_volumes + 1;; ++v) {  // volumes left over from another bundle at this name
      auto stale = volume_path(m_o.output, v, 2);
      if (!std::filesystem::exists(stale, ec)) break;
      std::filesystem::remove(stale, ec);
    }
    remove_stale_temps();
    m_progress.end(std::to_string(m_volumes) + " volume(s), " + human_bytes(m_report.bytes_written));
    return m_report;
  }

  // Temp volumes that killed runs left at this name (AtomicFile names them
  // "<volume>.tmp.XXXXXX"); a finished run removes them.
  void remove_stale_temps() const {
    std::error_code ec;
    auto dir = m_o.output.parent_path().empty() ? std::filesystem::path(".") : m_o.output.parent_path();
    std::string stem = m_o.output.filename().string();
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (!is_temp_name(name) || !starts_with(name, stem)) continue;
      std::string rest = name.substr(stem.size(), name.size() - stem.size() - 11);  // "" or ".NNN"
      bool volume_suffix = rest.size() >= 2 && rest[0] == '.' &&
                           std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (rest.empty() || volume_suffix) std::filesystem::remove(e.path(), ec);
    }
  }

  const mirror::Store& m_store;
  const recipes::Lock& m_lock;
  const signing::PrivateKey& m_key;
  const CreateOptions& m_o;
  Progress& m_progress;
  std::vector<BundleImage> m_images;
  std::map<std::string, ClosureBlob> m_blobs;
  std::vector<std::string> m_omitted;
  std::set<std::string> m_whole;  // blobs a delta still carries
  std::map<std::string, std::string> m_made;  // filtered indexes, by digest (bundles/closure.hpp)
  std::vector<Entry> m_entries;
  int m_volumes = 1;
  std::int64_t m_mtime = 0;
  CreateReport m_report;
  detail::DirectReader m_reader;
  detail::AlignedBuffer m_buf = detail::aligned_buffer(detail::VolumeStream::k_chunk);
};

}  // namespace

Result<CreateReport> create_bundle(const mirror::Store& store, const recipes::Lock& lock, const signing::PrivateKey& key, const CreateOptions& options,
                                   Progress& progress) {
  return Writer(store, lock, key, options, progress).run();
}

}  // namespace gb::bundles
