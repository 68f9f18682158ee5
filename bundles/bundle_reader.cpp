#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "common/archive_raii.hpp"
#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "bundles/zstd_decode.hpp"
#include "common/parallel.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "mirror/registry.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

namespace gb::bundles {

namespace {

constexpr std::size_t k_walk_block = 64 << 10;  // header walk: entry data is skipped (a seek)
constexpr std::size_t k_chunk = 1 << 20;        // hashing: one pread
constexpr la_int64_t k_max_manifest = static_cast<la_int64_t>(k_max_manifest_bytes);
constexpr la_int64_t k_max_signature = static_cast<la_int64_t>(k_max_signature_bytes);
constexpr std::size_t k_keep_json = mirror::oci::k_max_manifest_bytes;  // manifests kept for the closure check
constexpr std::size_t k_max_path = k_max_bundle_path;
constexpr std::size_t k_max_problems = 100;  // lines kept; a hostile volume could make millions

// Why an entry may not be in a bundle, or "" when it may.
std::string unsafe_reason(archive_entry* e) {
  if (archive_entry_hardlink(e)) return "is a hard link";
  switch (archive_entry_filetype(e)) {
    case AE_IFREG: break;
    case AE_IFLNK: return "is a symbolic link";
    case AE_IFDIR: return "is a folder";
    case AE_IFCHR:
    case AE_IFBLK: return "is a device";
    case AE_IFIFO: return "is a FIFO";
    default: return "is not a regular file";
  }
  const char* p = archive_entry_pathname(e);
  std::string path = p ? p : "";
  if (path.empty()) return "has an empty name";
  if (path.size() > k_max_path) return "has a name longer than " + std::to_string(k_max_path) + " bytes";
  if (path.front() == '/') return "has an absolute path";
  if (path.find('\\') != std::string::npos) return "has a backslash in its name";
  for (const auto& part : split(path, '/')) {
    if (part == "..") return "has a '..' component";
    if (part.empty() || part == ".") return "has an empty or '.' path component";
  }
  if (archive_entry_xattr_count(e) > 0) return "carries extended attributes";
  if (archive_entry_size(e) < 0) return "has a negative size";
  return "";
}

std::uint64_t tar_number(const unsigned char* field, size_t len) {
  if (field[0] & 0x80) {  // base-256, for sizes past 8 GiB
    std::uint64_t v = field[0] & 0x7f;
    for (size_t i = 1; i < len; ++i) v = (v << 8) | field[i];
    return v;
  }
  std::uint64_t v = 0;
  for (size_t i = 0; i < len && field[i] >= '0' && field[i] <= '7'; ++i) v = v * 8 + static_cast<std::uint64_t>(field[i] - '0');
  return v;
}

// The data of the entry whose headers start at `pos` begins after its ustar
// header, past any pax or GNU extension headers in front of it.
std::optional<std::uint64_t> tar_data_offset(int fd, std::uint64_t pos) {
  for (int i = 0; i < 4; ++i) {
    unsigned char h[512];
    if (::pread(fd, h, sizeof h, static_cast<off_t>(pos)) != static_cast<ssize_t>(sizeof h)) return std::nullopt;
    char type = static_cast<char>(h[156]);
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      pos += 512 + (tar_number(h + 124, 12) + 511) / 512 * 512;
      continue;
    }
    return pos + 512;
  }
  return std::nullopt;
}

// An entry whose header checked out, and where its data is.
struct Placed {
  const BundleFile* file;
  EntryLocation at;
};

// One stream to hash: an entry, or every part of a blob in part order, so
// that the blob's content hash (and zstd decode) runs across its parts in the
// same pass that checks each part's own sha256.
struct HashJob {
  std::vector<Placed> pieces;
  bool whole = false;  // the pieces hold a whole blob: its content digest is checked too
  std::uint64_t size() const {
    std::uint64_t n = 0;
    for (const auto& p : pieces) n += p.file->size;
    return n;
  }
};

struct Hashed {
  std::vector<std::string> problems;
  std::string json;  // the content, while the blob may be a manifest (for the closure check)
  std::uint64_t bytes = 0;
};

// Reads the whole current entry into `out` (bounded by the caller).
bool read_all(archive* a, std::string& out) {
  la_ssize_t n;
  char buf[65536];
  while ((n = archive_read_data(a, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return n == 0;
}

std::string where(const Placed& p) { return p.at.volume.filename().string() + ": entry " + p.file->path + ": "; }

Hashed hash(const HashJob& job) {
  Hashed out;
  const BundleFile& head = *job.pieces.front().file;
  const bool joined = head.parts > 0;
  std::optional<detail::ZstdDecoder> zstd;
  if (job.whole && head.encoding == "zstd") zstd.emplace();
  // A whole plain entry's stored hash is its content hash; otherwise the content has its own.
  const bool own_content = job.whole && (zstd || joined);
  signing::Sha256 content;
  bool keep = job.whole && (zstd || job.size() <= k_keep_json);
  auto decoded = [&](std::string_view chunk) -> Result<void> {
    if (own_content) content.update(chunk);
    if (keep && !chunk.empty()) {
      keep = (!out.json.empty() || chunk.front() == '{') && out.json.size() + chunk.size() <= k_keep_json;
      if (keep) out.json.append(chunk);
      else out.json = {};
    }
    return {};
  };
  BundleBlob stored;
  for (const auto& p : job.pieces) stored.segments.push_back({p.at.volume, p.at.offset, p.file->size});
  auto src = BundleBlobs::source(stored, nullptr);
  thread_local std::unique_ptr<char[]> buf(new char[k_chunk]);  // one per thread, reused: no page faults per job
  std::string decode_error, stored_hex;
  std::uint64_t at = 0;
  for (const auto& p : job.pieces) {
    signing::Sha256 hash;
    for (const std::uint64_t end = at + p.file->size; at < end;) {
      auto n = src->read(at, buf.get(), static_cast<std::size_t>(std::min<std::uint64_t>(k_chunk, end - at)));
      if (!n) {
        out.problems.push_back(where(p) + "truncated or damaged: " + n.error().message);
        return out;
      }
      std::string_view chunk(buf.get(), *n);
      hash.update(chunk);
      at += *n;
      out.bytes += *n;
      if (job.whole && decode_error.empty())
        if (auto r = zstd ? zstd->feed(chunk, decoded) : decoded(chunk); !r) decode_error = r.error().message;
    }
    stored_hex = hash.hex();
    if (stored_hex != p.file->sha256) out.problems.push_back(where(p) + "sha256 " + stored_hex + ", manifest says " + p.file->sha256);
  }
  if (!job.whole || !out.problems.empty()) return out;
  if (zstd && decode_error.empty())
    if (auto r = zstd->finish(decoded); !r) decode_error = r.error().message;
  std::string blob_hex = own_content ? content.hex() : stored_hex;
  std::string why = !decode_error.empty()      ? decode_error
                    : blob_hex == signing::digest_hex(head.blob) ? std::string()
                    : joined                   ? "content does not match its digest"
                                               : "content sha256 " + blob_hex + " does not match blob " + head.blob;
  if (!why.empty())
    out.problems.push_back(joined ? "blob " + head.blob + ": " + why + " (joined from its " + std::to_string(job.pieces.size()) + " parts)"
                                  : where(job.pieces.front()) + why);
  if (!keep || !out.problems.empty()) out.json = {};
  return out;
}

// Jobs for these entries: each entry on its own, except the parts of a blob
// when all of them are here, which hash as one stream in part order.
std::vector<HashJob> make_jobs(const std::vector<Placed>& placed) {
  std::vector<HashJob> jobs;
  std::map<std::string, std::vector<Placed>> parts;  // blob -> its parts here
  for (const auto& p : placed) {
    if (p.file->parts && !p.file->blob.empty()) parts[p.file->blob].push_back(p);
    else jobs.push_back({{p}, !p.file->blob.empty()});
  }
  for (auto& [blob, ps] : parts) {
    std::sort(ps.begin(), ps.end(), [](const Placed& a, const Placed& b) { return a.file->part < b.file->part; });
    // The manifest parser let each of parts 1..N in once, so N of them are all of them.
    if (static_cast<int>(ps.size()) == ps.front().file->parts) jobs.push_back({std::move(ps), true});
    else
      for (auto& p : ps) jobs.push_back({{p}, false});
  }
  return jobs;
}

// Runs the jobs on every core, largest first so that none is left alone at
// the end; the results come back in the jobs' order.
std::vector<Hashed> hash_all(const std::vector<HashJob>& jobs) {
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return jobs[a].size() > jobs[b].size(); });
  std::vector<Hashed> out(jobs.size());
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  parallel_for(order.size(), threads, [&](std::size_t i) { out[order[i]] = hash(jobs[order[i]]); });
  return out;
}

// Three phases: the headers of every volume (signature, manifest, each
// entry's name, type, size, place), then the entries' bytes hashed on every
// core, then completeness and the OCI closure.
class Verifier {
public:
  Verifier(const VerifyOptions& o, VerifyReport& report) : m_o(o), m_report(report) {}

  void run(const std::vector<std::filesystem::path>& volumes) {
    if (volumes.size() > static_cast<std::size_t>(k_max_volumes)) {
      problem(std::to_string(volumes.size()) + " volumes given; a bundle has at most " + std::to_string(k_max_volumes));
      return;
    }
    for (const auto& v : volumes) volume(v);
    std::vector<Placed> now;
    for (const auto& p : m_placed) {
      if (m_o.defer_blobs && !p.file->blob.empty()) m_report.unhashed[p.file->path] = p.at;
      else now.push_back(p);
    }
    hash_jobs(make_jobs(now));
    finish(volumes.size());
    close();
  }

  // hash_blobs(): the deferred entries of these blobs.
  void hash_deferred(const std::set<std::string>& digests) {
    hash_jobs(make_jobs(deferred([&](const BundleFile& f) { return digests.count(f.blob) > 0; })));
    close();
  }

private:
  void problem(const std::string& line) {
    if (m_report.problems.size() < k_max_problems) m_report.problems.push_back(line);
    else ++m_dropped;
  }
  void close() {
    if (m_dropped) m_report.problems.push_back("... and " + std::to_string(m_dropped) + " more problem(s)");
    m_dropped = 0;
  }

  void volume(const std::filesystem::path& path) {
    std::string label = path.filename().string();
    gb::detail::ArchiveReader a(archive_read_new());
    archive_read_support_format_tar(a.get());  // tar (ustar, pax, gnu) only; no filters: bundles are never compressed outside
    if (archive_read_open_filename(a.get(), path.c_str(), k_walk_block) != ARCHIVE_OK) {
      problem(label + ": cannot open: " + gb::detail::archive_error(a.get()));
      return;
    }
    archive_entry* e = nullptr;
    // 1. The manifest and its signature come first.
    std::string manifest_text, signature_text;
    for (auto [name, out, limit] : {std::tuple{k_volume_manifest, &manifest_text, k_max_manifest},
                                    std::tuple{k_volume_signature, &signature_text, k_max_signature}}) {
      int rc = archive_read_next_header(a.get(), &e);
      if (rc != ARCHIVE_OK) {
        problem(label + ": not a gpubundle volume: " + (rc == ARCHIVE_EOF ? "empty" : gb::detail::archive_error(a.get())));
        return;
      }
      std::string why = unsafe_reason(e);
      if (!why.empty() || archive_entry_pathname(e) != std::string(name)) {
        problem(label + ": not a gpubundle volume: first entries must be " + std::string(k_volume_manifest) + " and " +
                std::string(k_volume_signature) + ", found " + archive_entry_pathname(e) + (why.empty() ? "" : " (" + why + ")"));
        return;
      }
      if (archive_entry_size(e) > limit) {
        problem(label + ": " + std::string(name) + " is larger than " + std::to_string(limit) + " bytes");
        return;
      }
      if (!read_all(a.get(), *out)) {
        problem(label + ": truncated in " + std::string(name) + ": " + gb::detail::archive_error(a.get()));
        return;
      }
      m_report.bytes += out->size();
    }
    if (m_o.trusted) {
      auto signer = signing::verify_detached(*m_o.trusted, manifest_text, signature_text);
      if (!signer) {
        const std::string& why = signer.error().message;  // signing/ names the signature already
        problem(label + ": " + (starts_with(why, "signature: ") ? why : "signature: " + why));
        return;  // nothing after an untrusted manifest can be trusted
      }
      if (!m_report.signer.empty() && m_report.signer != signer.value())
        problem(label + ": signed by key " + signer.value() + ", other volumes by " + m_report.signer);
      m_report.signer = signer.value();
    }
    auto parsed = parse_volume_manifest(manifest_text, label);
    if (!parsed) {
      // Every volume carries the whole manifest: say what is wrong with it once.
      const std::string& why = parsed.error().message;
      if (m_bad_manifests.insert(starts_with(why, label) ? why.substr(label.size()) : why).second) problem(why);
      return;
    }
    VolumeManifest m = std::move(parsed.value());
    if (m_report.bundle_id.empty()) {
      m_report.bundle_id = m.bundle_id;
      m_report.manifest = m;
    } else if (m.bundle_id != m_report.bundle_id) {
      problem(label + ": belongs to bundle " + m.bundle_id + ", not " + m_report.bundle_id);
      return;
    } else if (m.volumes != m_report.manifest.volumes || layout_of(m) != first_layout()) {
      if (!m_mixed)  // once: the other volumes of that write would say the same
        problem(label + ": its manifest lists other files or volumes than " + m_first + "'s: volumes of two writes of bundle " +
                m.bundle_id + " are mixed");
      m_mixed = true;
      return;
    }
    if (m_first.empty()) m_first = label;
    if (!m_report.volumes_seen.insert(m.volume).second) {
      problem(label + ": volume " + std::to_string(m.volume) + " given twice");
      return;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // where each entry's data is
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) problem(label + ": cannot open: " + std::strerror(errno));
    else entries(a.get(), m.volume, label, path, fd, static_cast<std::uint64_t>(st.st_size));
    if (fd >= 0) ::close(fd);
  }

  // The header walk: the data is skipped (a seek) and hashed later from the
  // place recorded here; only a zstd entry's frame header is read now. The
  // files are the first volume's: every volume's manifest lists the same.
  void entries(archive* a, int index, const std::string& label, const std::filesystem::path& volume, int fd, std::uint64_t file_size) {
    std::map<std::string, const BundleFile*> expected;
    for (const auto& f : m_report.manifest.files)
      if (f.volume == index) expected[f.path] = &f;
    std::set<std::string> names;
    archive_entry* e = nullptr;
    int rc;
    std::size_t seen = 0;
    while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
      if (++seen > k_max_bundle_entries) {
        problem(label + ": more than " + std::to_string(k_max_bundle_entries) + " entries; a bundle volume has at most that many");
        return;
      }
      std::string path = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
      std::string why = unsafe_reason(e);
      if (!why.empty()) {
        problem(label + ": entry " + path + " " + why);
        continue;
      }
      if (!names.insert(path).second || path == k_volume_manifest || path == k_volume_signature) {
        problem(label + ": entry " + path + " appears twice");
        continue;
      }
      auto it = expected.find(path);
      if (it == expected.end()) {
        problem(label + ": entry " + path + " is not in the signed manifest (appended?)");
        continue;
      }
      const BundleFile& f = *it->second;
      if (static_cast<std::uint64_t>(archive_entry_size(e)) != f.size) {
        problem(label + ": entry " + path + ": size " + std::to_string(archive_entry_size(e)) + ", manifest says " +
                std::to_string(f.size));
        continue;
      }
      ++m_report.entries;
      auto offset = tar_data_offset(fd, static_cast<std::uint64_t>(archive_read_header_position(a)));
      if (!offset) {
        problem(label + ": entry " + path + ": cannot locate its data");
        continue;
      }
      if (*offset > file_size || f.size > file_size - *offset) {
        problem(label + ": entry " + path + ": truncated or damaged: the volume ends " + std::to_string(*offset + f.size - file_size) +
                " bytes short of its end");
        return;  // nothing follows
      }
      if (f.encoding == "zstd" && f.part <= 1) {  // the frame header too: a bomb is refused before anything decodes it
        std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(detail::k_zstd_frame_header_max, f.size)), '\0');
        auto size = ::pread(fd, head.data(), head.size(), static_cast<off_t>(*offset)) == static_cast<ssize_t>(head.size())
                        ? detail::ZstdDecoder::declared_size(head)
                        : Result<std::uint64_t>(op_error("cannot read its frame header"));
        if (!size) {
          problem(label + ": entry " + path + ": " + size.error().message);
          continue;
        }
      }
      m_placed.push_back({&f, {volume, *offset}});
    }
    if (rc != ARCHIVE_EOF) problem(label + ": truncated or damaged after " + std::to_string(names.size()) + " entries: " + gb::detail::archive_error(a));
    std::vector<std::string> missing;
    for (const auto& [path, f] : expected)
      if (!names.count(path)) missing.push_back(path);
    if (!missing.empty())
      problem(label + ": truncated: " + std::to_string(missing.size()) + " entr" + (missing.size() == 1 ? "y" : "ies") +
              " of the manifest missing, first " + missing.front());
  }

  // Volumes of one write list the same files; only "volume.index" differs.
  static std::string layout_of(VolumeManifest m) {
    m.volume = 1;
    return manifest_to_json(m);
  }
  // Made when a second volume comes: a bundle of one volume never needs it.
  const std::string& first_layout() {
    if (m_layout.empty()) m_layout = layout_of(m_report.manifest);
    return m_layout;
  }

  // The deferred entries `want` picks.
  std::vector<Placed> deferred(const std::function<bool(const BundleFile&)>& want) const {
    std::vector<Placed> out;
    for (const auto& f : m_report.manifest.files)
      if (auto at = m_report.unhashed.find(f.path); at != m_report.unhashed.end() && want(f)) out.push_back({&f, at->second});
    return out;
  }

  // Hashes the jobs and records each: its problems, or its entries' places
  // (now readable) and, for a whole blob, that it is here and its JSON.
  void hash_jobs(const std::vector<HashJob>& jobs) {
    auto results = hash_all(jobs);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const HashJob& job = jobs[i];
      Hashed& h = results[i];
      m_report.bytes += h.bytes;
      const std::string& blob = job.pieces.front().file->blob;
      for (const auto& p : h.problems) problem(p);
      if (!h.problems.empty()) {
        if (job.whole) m_failed.insert(blob);
        continue;
      }
      for (const auto& p : job.pieces) {
        m_report.unhashed.erase(p.file->path);
        m_report.locations[p.file->path] = p.at;
      }
      if (!job.whole) continue;
      m_hashed.insert(blob);
      if (!h.json.empty()) m_json[blob] = std::move(h.json);
    }
  }

  // A manifest's text for the closure check; a deferred one is hashed now.
  const std::string* manifest_text(const std::string& digest) {
    if (m_o.defer_blobs && !m_hashed.count(digest) && !m_failed.count(digest))
      hash_jobs(make_jobs(deferred([&](const BundleFile& f) { return f.blob == digest; })));
    auto it = m_json.find(digest);
    return it == m_json.end() ? nullptr : &it->second;
  }

  void finish(std::size_t given) {
    if (m_report.bundle_id.empty() || m_mixed) return;
    const VolumeManifest& m = m_report.manifest;
    if (static_cast<int>(m_report.volumes_seen.size()) < m.volumes) {
      if (given >= static_cast<std::size_t>(m.volumes) || m_report.problems.empty()) {
        std::vector<std::string> absent;  // the first few: count is bounded, but still large
        int missing = m.volumes - static_cast<int>(m_report.volumes_seen.size());
        for (int v = 1; v <= m.volumes && absent.size() < 10; ++v)
          if (!m_report.volumes_seen.count(v)) absent.push_back(std::to_string(v));
        if (missing > static_cast<int>(absent.size())) absent.push_back("... (" + std::to_string(missing) + " in all)");
        problem("bundle " + m.bundle_id + ": volume(s) " + join(absent, ", ") + " of " + std::to_string(m.volumes) +
                " not given; completeness and the image closure are unchecked");
      }
      return;
    }
    // Every blob of every volume arrived intact: hashed, or when hashing is
    // deferred, each of its entries past the header walk.
    std::set<std::string> present = m_hashed;
    if (m_o.defer_blobs) {
      std::map<std::string, int> waiting;  // blob -> its entries not (yet) hashed
      for (const auto& f : m.files)
        if (!f.blob.empty()) waiting[f.blob] += !m_report.unhashed.count(f.path);
      for (const auto& [blob, n] : waiting)
        if (n == 0) present.insert(blob);
    }
    std::set<std::string> omitted(m.omitted.begin(), m.omitted.end());
    // An image whose closure is broken is reported once, for that: what
    // follows would only restate it.
    bool intact = true;
    for (const auto& img : m.images) {
      std::size_t before = m_report.problems.size() + m_dropped;
      closure(img, present, omitted);
      if (m_report.problems.size() + m_dropped != before) {
        intact = false;
        continue;
      }
      if (!img.upstream_digest.empty()) filtered(img, present);
    }
    if (intact) agrees_with_lock(m);
  }

  // A filtered index must be what its upstream index and platforms make
  // (mirror/oci.hpp site_index): the site can then trust its children by
  // their upstream digests, and the index by the signature over both.
  void filtered(const BundleImage& img, const std::set<std::string>& present) {
    const std::string& up = img.upstream_digest;
    if (!present.count(up)) {
      problem("image " + img.ref + ": upstream index " + up + " is missing from the bundle");
      return;
    }
    const std::string* json = manifest_text(up);
    if (!json) {
      if (!m_failed.count(up)) problem("image " + img.ref + ": upstream index " + up + " could not be read");
      return;
    }
    auto upstream = mirror::oci::parse_manifest(*json, "");  // its own mediaType: the filtered index keeps it
    if (!upstream || !upstream->index()) {
      problem("image " + img.ref + ": upstream " + up + " is not an index" + (upstream ? "" : ": " + upstream.error().message));
      return;
    }
    auto site = mirror::oci::site_index(*upstream, img.platforms);
    if (!site) problem("image " + img.ref + ": " + site.error().message);
    else if (!*site || (*site)->digest != img.digest)
      problem("image " + img.ref + ": index " + img.digest + " is not what upstream index " + up + " filtered to " +
              join(img.platforms, ", ") + " gives (" + (*site ? (*site)->digest : "the whole index") + ")");
  }

  // The signed lock and the images list name the same digests: the lock's
  // digest upstream, its siteDigest (or digest) what the bundle pushes.
  void agrees_with_lock(const VolumeManifest& m) {
    auto lock = recipes::parse_lock(m.lock_json, "bundle lock");
    if (!lock) {
      problem("bundle " + m.bundle_id + ": " + lock.error().message);
      return;
    }
    for (const auto& img : m.images) {
      const recipes::LockImage* li = lock->find(img.ref);
      if (!li) {
        problem("image " + img.ref + " is not in the bundle's lock");
        continue;
      }
      const std::string& upstream = img.upstream_digest.empty() ? img.digest : img.upstream_digest;
      if (li->at_site() != img.digest || li->digest != upstream)
        problem("image " + img.ref + ": the bundle carries " + img.digest + (img.upstream_digest.empty() ? "" : " filtered from " + upstream) +
                " but its lock says " + li->at_site() + (li->site_digest.empty() ? "" : " filtered from " + li->digest));
    }
  }

  // Walks an image's manifests without recursion: nesting is bounded by
  // oci::k_max_index_depth, and each manifest is read once.
  void closure(const BundleImage& img, const std::set<std::string>& present, const std::set<std::string>& omitted) {
    struct Todo {
      std::string digest, media_type;
      int depth;
    };
    std::vector<Todo> todo{{img.digest, img.media_type, 0}};
    std::set<std::string> visited;
    std::set<std::string> listed(img.blobs.begin(), img.blobs.end());
    while (!todo.empty()) {
      Todo t = std::move(todo.back());
      todo.pop_back();
      if (!visited.insert(t.digest).second) continue;
      if (!present.count(t.digest)) {
        problem("image " + img.ref + ": manifest " + t.digest + " is missing from the bundle");
        continue;
      }
      const std::string* json = manifest_text(t.digest);
      if (!json) {
        if (!m_failed.count(t.digest)) problem("image " + img.ref + ": manifest " + t.digest + " could not be read");
        continue;
      }
      auto parsed = mirror::oci::parse_manifest(*json, t.media_type);
      if (!parsed) {
        problem("image " + img.ref + ": " + parsed.error().message);
        continue;
      }
      if (parsed->index()) {
        if (t.depth >= mirror::oci::k_max_index_depth) {
          problem("image " + img.ref + ": index " + t.digest + " nests deeper than " + std::to_string(mirror::oci::k_max_index_depth) + " levels");
          return;
        }
        bool any = false;
        for (const auto& child : parsed->manifests) {
          if (!listed.count(child.digest)) {
            // A filtered index names only what travels; an upstream one may be sparse.
            if (t.digest == img.digest && !img.upstream_digest.empty())
              problem("image " + img.ref + ": index " + t.digest + " names " + child.digest + ", which the bundle does not list");
            continue;
          }
          any = true;
          todo.push_back({child.digest, child.media_type, t.depth + 1});
        }
        if (!any) problem("image " + img.ref + ": index " + t.digest + " has none of its platforms in the bundle");
        continue;
      }
      std::vector<mirror::oci::Descriptor> refs = parsed->layers;
      refs.insert(refs.begin(), parsed->config);
      for (const auto& d : refs)
        if (!present.count(d.digest) && !omitted.count(d.digest))
          problem("image " + img.ref + ": blob " + d.digest + " is missing from the bundle");
    }
  }

  const VerifyOptions& m_o;
  VerifyReport& m_report;
  std::vector<Placed> m_placed;               // entries past the header walk, in order
  std::set<std::string> m_hashed, m_failed;   // whole blobs hashed, and those that failed
  std::map<std::string, std::string> m_json;  // small JSON blobs, for the closure
  std::string m_layout;  // the first volume's manifest, its index left out (first_layout())
  std::string m_first;   // and that volume's name
  bool m_mixed = false;
  std::size_t m_dropped = 0;
  std::set<std::string> m_bad_manifests;  // why manifests were refused, without the volume's name
};

}  // namespace

VerifyReport verify_bundle(const std::vector<std::filesystem::path>& volumes, const VerifyOptions& options) {
  VerifyReport report;
  Verifier(options, report).run(volumes);
  return report;
}

void hash_blobs(VerifyReport& report, const std::set<std::string>& digests) {
  VerifyOptions options;
  Verifier(options, report).hash_deferred(digests);
}

Result<void> require_volume_files(const std::vector<std::filesystem::path>& volumes) {
  for (const auto& v : volumes) {
    std::error_code ec;
    auto st = std::filesystem::status(v, ec);
    if (ec || !std::filesystem::exists(st)) return input_error(v.string() + ": no such file");
    if (!std::filesystem::is_regular_file(st)) return input_error(v.string() + ": not a file");
    if (::access(v.c_str(), R_OK) != 0) return input_error(v.string() + ": cannot read it");
  }
  return {};
}

Result<VolumeManifest> read_volume_manifest(const std::filesystem::path& volume, std::string* signer) {
  if (auto r = require_volume_files({volume}); !r) return r.error();
  gb::detail::ArchiveReader a(archive_read_new());
  archive_read_support_format_tar(a.get());
  std::string label = volume.filename().string();
  if (archive_read_open_filename(a.get(), volume.c_str(), k_walk_block) != ARCHIVE_OK)
    return input_error(volume.string() + ": cannot open: " + gb::detail::archive_error(a.get()));
  archive_entry* e = nullptr;
  std::string texts[2];
  for (int i = 0; i < 2; ++i) {
    std::string want(i == 0 ? k_volume_manifest : k_volume_signature);
    if (archive_read_next_header(a.get(), &e) != ARCHIVE_OK || archive_entry_pathname(e) != want ||
        archive_entry_size(e) > (i == 0 ? k_max_manifest : k_max_signature))
      return op_error(label + ": not a gpubundle volume (no " + want + " at its start)");
    if (!read_all(a.get(), texts[i])) return op_error(label + ": truncated in " + want);
  }
  if (signer) {
    auto sig = signing::parse_signature(texts[1]);
    *signer = sig ? sig->key_id : "";
  }
  return parse_volume_manifest(texts[0], label);
}

}  // namespace gb::bundles
