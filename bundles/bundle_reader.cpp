#include <algorithm>
#include <fcntl.h>
#include <optional>
#include <unistd.h>

#include "common/archive_raii.hpp"
#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "bundles/zstd_decode.hpp"
#include "common/strings.hpp"
#include "mirror/oci.hpp"
#include "signing/digest.hpp"
#include "signing/keys.hpp"
#include "signing/signature.hpp"

namespace gb {

namespace {

constexpr std::size_t k_block = 1 << 20;
constexpr la_int64_t k_max_manifest = static_cast<la_int64_t>(k_max_manifest_bytes);
constexpr la_int64_t k_max_signature = static_cast<la_int64_t>(k_max_signature_bytes);
constexpr std::size_t k_keep_json = oci::k_max_manifest_bytes;  // manifests kept for the closure check
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

std::string hex_of(const std::string& digest) { return digest.substr(digest.find(':') + 1); }

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

struct Seen {
  bool ok = false;
};

class Verifier {
public:
  explicit Verifier(const VerifyOptions& o) : m_o(o) {}

  VerifyReport run(const std::vector<std::filesystem::path>& volumes) {
    if (volumes.size() > static_cast<std::size_t>(k_max_volumes)) {
      problem(std::to_string(volumes.size()) + " volumes given; a bundle has at most " + std::to_string(k_max_volumes));
      return std::move(m_report);
    }
    for (const auto& v : volumes) volume(v);
    finish(volumes.size());
    if (m_dropped) m_report.problems.push_back("... and " + std::to_string(m_dropped) + " more problem(s)");
    return std::move(m_report);
  }

private:
  void problem(const std::string& line) {
    if (m_report.problems.size() < k_max_problems) m_report.problems.push_back(line);
    else ++m_dropped;
  }

  // Reads the whole current entry into `out` (bounded by the caller).
  bool read_all(archive* a, std::string& out) {
    la_ssize_t n;
    char buf[65536];
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return n == 0;
  }

  void volume(const std::filesystem::path& path) {
    std::string label = path.filename().string();
    detail::ArchiveReader a(archive_read_new());
    archive_read_support_format_tar(a.get());  // tar (ustar, pax, gnu) only; no filters: bundles are never compressed outside
    if (archive_read_open_filename(a.get(), path.c_str(), k_block) != ARCHIVE_OK) {
      problem(label + ": cannot open: " + archive_error_string(a.get()));
      return;
    }
    archive_entry* e = nullptr;
    // 1. The manifest and its signature come first.
    std::string manifest_text, signature_text;
    for (auto [name, out, limit] : {std::tuple{k_volume_manifest, &manifest_text, k_max_manifest},
                                    std::tuple{k_volume_signature, &signature_text, k_max_signature}}) {
      int rc = archive_read_next_header(a.get(), &e);
      if (rc != ARCHIVE_OK) {
        problem(label + ": not a gpubundle volume: " + (rc == ARCHIVE_EOF ? "empty" : archive_error_string(a.get())));
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
        problem(label + ": truncated in " + std::string(name) + ": " + archive_error_string(a.get()));
        return;
      }
      m_report.bytes += out->size();
    }
    if (m_o.trusted) {
      auto signer = verify_detached(*m_o.trusted, manifest_text, signature_text);
      if (!signer) {
        problem(label + ": signature: " + signer.error().message);
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
    } else if (m.volumes != m_report.manifest.volumes || layout_of(m) != m_layout) {
      if (!m_mixed)  // once: the other volumes of that write would say the same
        problem(label + ": its manifest lists other files or volumes than " + m_first + "'s: volumes of two writes of bundle " +
                m.bundle_id + " are mixed");
      m_mixed = true;
      return;
    }
    if (m_layout.empty()) {
      m_layout = layout_of(m);
      m_first = label;
    }
    if (!m_report.volumes_seen.insert(m.volume).second) {
      problem(label + ": volume " + std::to_string(m.volume) + " given twice");
      return;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // entry offsets, for the parts check and for readers
    entries(a.get(), m, label, path, fd);
    if (fd >= 0) ::close(fd);
  }

  void entries(archive* a, const VolumeManifest& m, const std::string& label, const std::filesystem::path& volume, int fd) {
    std::map<std::string, const BundleFile*> expected;
    for (const auto& f : m.files)
      if (f.volume == m.volume) expected[f.path] = &f;
    std::set<std::string> names;
    archive_entry* e = nullptr;
    std::vector<char> buf(k_block);
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
        if (m_o.stop_at_first) return;
        continue;
      }
      if (!names.insert(path).second || path == k_volume_manifest || path == k_volume_signature) {
        problem(label + ": entry " + path + " appears twice");
        if (m_o.stop_at_first) return;
        continue;
      }
      auto it = expected.find(path);
      if (it == expected.end()) {
        problem(label + ": entry " + path + " is not in the signed manifest (appended?)");
        if (m_o.stop_at_first) return;
        continue;
      }
      const BundleFile& f = *it->second;
      if (static_cast<std::uint64_t>(archive_entry_size(e)) != f.size) {
        problem(label + ": entry " + path + ": size " + std::to_string(archive_entry_size(e)) + ", manifest says " +
                std::to_string(f.size));
        if (m_o.stop_at_first) return;
        continue;
      }
      if (!entry_data(a, f, label, buf)) {
        if (m_o.stop_at_first || m_truncated) return;
        continue;
      }
      m_ok.insert(path);
      if (fd >= 0) {
        auto offset = tar_data_offset(fd, static_cast<std::uint64_t>(archive_read_header_position(a)));
        if (!offset) problem(label + ": entry " + path + ": cannot locate its data");
        else m_report.locations[path] = {volume, *offset};
      }
    }
    if (rc != ARCHIVE_EOF) problem(label + ": truncated or damaged after " + std::to_string(names.size()) + " entries: " + archive_error_string(a));
    std::vector<std::string> missing;
    for (const auto& [path, f] : expected)
      if (!names.count(path)) missing.push_back(path);
    if (!missing.empty())
      problem(label + ": truncated: " + std::to_string(missing.size()) + " entr" + (missing.size() == 1 ? "y" : "ies") +
              " of the manifest missing, first " + missing.front());
  }

  bool entry_data(archive* a, const BundleFile& f, const std::string& label, std::vector<char>& buf) {
    if (m_o.consumer)
      if (auto r = m_o.consumer->begin(f); !r) {
        problem(label + ": entry " + f.path + ": " + r.error().message);
        return false;
      }
    Sha256 stored;
    Sha256 content;  // of the decoded blob, for zstd entries
    // A part is checked when its blob is joined (finish), not on its own.
    std::optional<detail::ZstdDecoder> zstd;
    if (f.encoding == "zstd" && f.parts == 0) zstd.emplace();
    std::string kept;
    bool keep = !f.blob.empty() && f.parts == 0 && (zstd || f.size <= k_keep_json);
    auto decoded = [&](std::string_view chunk) -> Result<void> {
      content.update(chunk);
      if (keep && kept.size() + chunk.size() <= k_keep_json) kept.append(chunk);
      else keep = false;
      return {};
    };
    Joining* join = nullptr;  // this part continues its blob's in-order hash
    if (f.parts && !f.blob.empty()) {
      Joining& j = m_joining[f.blob];
      if (!j.off && j.next == f.part) {
        join = &j;
        if (f.part == 1 && f.encoding == "zstd") j.zstd.emplace();
      } else {
        j.off = true;
      }
    }
    auto joined = [&](std::string_view chunk) { return join->take(chunk); };
    std::string error;
    la_ssize_t n;
    std::uint64_t total = 0;
    while ((n = archive_read_data(a, buf.data(), buf.size())) > 0) {
      std::string_view chunk(buf.data(), static_cast<size_t>(n));
      total += chunk.size();
      stored.update(chunk);
      if (m_o.consumer && error.empty())
        if (auto r = m_o.consumer->data(chunk); !r) error = r.error().message;
      if (join && !join->off)
        if (auto r = join->zstd ? join->zstd->feed(chunk, joined) : joined(chunk); !r) join->off = true;
      if (zstd && error.empty()) {
        if (auto r = zstd->feed(chunk, decoded); !r) error = r.error().message;
      } else if (keep) {
        kept.append(chunk);
      }
    }
    if (n == 0 && zstd && error.empty())
      if (auto r = zstd->finish(decoded); !r) error = r.error().message;
    m_report.bytes += total;
    ++m_report.entries;
    auto fail = [&](const std::string& why) {
      if (join) join->off = true;
      if (m_o.consumer) m_o.consumer->abort();
      problem(label + ": entry " + f.path + ": " + why);
      return false;
    };
    if (n < 0) {
      m_truncated = true;
      return fail(std::string("truncated or damaged: ") + archive_error_string(a));
    }
    if (!error.empty()) return fail(error);
    std::string got = stored.hex();
    if (got != f.sha256) return fail("sha256 " + got + ", manifest says " + f.sha256);
    if (!f.blob.empty() && f.parts == 0) {
      std::string blob_hex = zstd ? content.hex() : got;
      if (blob_hex != hex_of(f.blob)) return fail("content sha256 " + blob_hex + " does not match blob " + f.blob);
      if (keep && !kept.empty() && kept.front() == '{') m_json[f.blob] = std::move(kept);
    }
    if (m_o.consumer)
      if (auto r = m_o.consumer->end(); !r) return fail(r.error().message);
    if (join) ++join->next;
    return true;
  }

  // A blob in parts, hashed as the parts stream by while they come in order
  // (volumes given in order); otherwise join_parts reads them again.
  struct Joining {
    int next = 1;
    bool off = false;  // a part came out of order or failed
    Sha256 hash;
    std::optional<detail::ZstdDecoder> zstd;
    std::string kept;  // the content, while it may be a manifest
    bool keep = true;
    Result<void> take(std::string_view content) {
      hash.update(content);
      if (keep && kept.size() + content.size() <= k_keep_json) kept.append(content);
      else keep = false;
      return {};
    }
  };

  // Volumes of one write list the same files; only "volume.index" differs.
  static std::string layout_of(VolumeManifest m) {
    m.volume = 1;
    return manifest_to_json(m);
  }

  // A blob in parts must join into its digest: the manifest vouches for each
  // part, this for their order and their sum.
  bool join_parts(const std::string& digest, std::vector<const BundleFile*> parts) {
    Joining& j = m_joining[digest];
    auto take = [&j](std::string_view chunk) { return j.take(chunk); };
    Result<void> r;
    if (!j.off && j.next == static_cast<int>(parts.size()) + 1) {  // hashed in order already
      if (j.zstd) r = j.zstd->finish(take);
      if (r && "sha256:" + j.hash.hex() != digest) r = op_error("content does not match its digest");
      if (!r) r = op_error("blob " + digest + ": " + r.error().message);
    } else {
      std::sort(parts.begin(), parts.end(), [](const BundleFile* a, const BundleFile* b) { return a->part < b->part; });
      BundleBlob blob{parts.front()->encoding, {}};
      for (const BundleFile* p : parts) {
        const EntryLocation& loc = m_report.locations.at(p->path);
        blob.segments.push_back({loc.volume, loc.offset, p->size});
      }
      j = Joining{};
      r = BundleBlobs::stream_content(blob, digest, take);
    }
    if (!r) {
      problem(r.error().message + " (joined from its " + std::to_string(parts.size()) + " parts)");  // names the blob
      return false;
    }
    if (j.keep && !j.kept.empty() && j.kept.front() == '{') m_json[digest] = std::move(j.kept);
    return true;
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
    // Every file of every volume arrived intact?
    std::set<std::string> present;
    std::map<std::string, std::vector<const BundleFile*>> parts;
    for (const auto& f : m.files) {
      if (!m_ok.count(f.path)) continue;
      if (f.blob.empty()) continue;
      if (f.parts == 0) {
        present.insert(f.blob);
        continue;
      }
      auto& p = parts[f.blob];
      p.push_back(&f);
      if (static_cast<int>(p.size()) == f.parts && join_parts(f.blob, p)) present.insert(f.blob);
    }
    std::set<std::string> omitted(m.omitted.begin(), m.omitted.end());
    for (const auto& img : m.images) closure(img, present, omitted);
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
      auto json = m_json.find(t.digest);
      if (json == m_json.end()) {
        problem("image " + img.ref + ": manifest " + t.digest + " could not be read");
        continue;
      }
      auto parsed = oci::parse_manifest(json->second, t.media_type);
      if (!parsed) {
        problem("image " + img.ref + ": " + parsed.error().message);
        continue;
      }
      if (parsed->index()) {
        if (t.depth >= oci::k_max_index_depth) {
          problem("image " + img.ref + ": index " + t.digest + " nests deeper than " + std::to_string(oci::k_max_index_depth) + " levels");
          return;
        }
        bool any = false;
        for (const auto& child : parsed->manifests) {
          if (!listed.count(child.digest)) continue;  // a platform this bundle does not carry
          any = true;
          todo.push_back({child.digest, child.media_type, t.depth + 1});
        }
        if (!any) problem("image " + img.ref + ": index " + t.digest + " has none of its platforms in the bundle");
        continue;
      }
      std::vector<oci::Descriptor> refs = parsed->layers;
      refs.insert(refs.begin(), parsed->config);
      for (const auto& d : refs)
        if (!present.count(d.digest) && !omitted.count(d.digest))
          problem("image " + img.ref + ": blob " + d.digest + " is missing from the bundle");
    }
  }

  const VerifyOptions& m_o;
  VerifyReport m_report;
  std::set<std::string> m_ok;                    // entries that arrived intact
  std::map<std::string, std::string> m_json;     // small JSON blobs, for the closure
  bool m_truncated = false;
  std::string m_layout;  // the first volume's manifest, its index left out
  std::string m_first;   // and that volume's name
  bool m_mixed = false;
  std::size_t m_dropped = 0;
  std::map<std::string, Joining> m_joining;  // blob -> its parts so far
  std::set<std::string> m_bad_manifests;  // why manifests were refused, without the volume's name
};

}  // namespace

VerifyReport verify_bundle(const std::vector<std::filesystem::path>& volumes, const VerifyOptions& options) {
  return Verifier(options).run(volumes);
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
  detail::ArchiveReader a(archive_read_new());
  archive_read_support_format_tar(a.get());
  std::string label = volume.filename().string();
  if (archive_read_open_filename(a.get(), volume.c_str(), k_block) != ARCHIVE_OK)
    return input_error(volume.string() + ": cannot open: " + archive_error_string(a.get()));
  archive_entry* e = nullptr;
  std::string texts[2];
  for (int i = 0; i < 2; ++i) {
    std::string want(i == 0 ? k_volume_manifest : k_volume_signature);
    if (archive_read_next_header(a.get(), &e) != ARCHIVE_OK || archive_entry_pathname(e) != want ||
        archive_entry_size(e) > (i == 0 ? k_max_manifest : k_max_signature))
      return op_error(label + ": not a gpubundle volume (no " + want + " at its start)");
    la_ssize_t n;
    char buf[65536];
    while ((n = archive_read_data(a.get(), buf, sizeof buf)) > 0) texts[i].append(buf, static_cast<size_t>(n));
    if (n < 0) return op_error(label + ": truncated in " + want);
  }
  if (signer) {
    auto sig = parse_signature(texts[1]);
    *signer = sig ? sig->key_id : "";
  }
  return parse_volume_manifest(texts[0], label);
}

}  // namespace gb
