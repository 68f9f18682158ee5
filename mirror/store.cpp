#include "mirror/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/log.hpp"
#include "common/parallel.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "recipes/chart_source.hpp"

namespace gb::mirror {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::string_view k_partial_suffix = ".partial";

bool is_partial_name(std::string_view name) {
  return name.size() > k_partial_suffix.size() && name.substr(name.size() - k_partial_suffix.size()) == k_partial_suffix;
}

// Feeds the first `len` bytes of fd to each hasher.
Result<void> hash_prefix(int fd, std::uint64_t len, const fs::path& path, std::initializer_list<signing::Sha256*> hashers) {
  std::string buf(1 << 16, '\0');
  std::uint64_t off = 0;
  while (off < len) {
    ssize_t n = ::pread(fd, buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), len - off)),
                        static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return op_error(path.string() + ": cannot read back: " + (n < 0 ? std::strerror(errno) : "short file"));
    for (auto* h : hashers) h->update(buf.data(), static_cast<std::size_t>(n));
    off += static_cast<std::uint64_t>(n);
  }
  return {};
}

bool wanted_platform(const oci::Platform& p, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  for (const auto& w : wanted)
    if (p.matches(w)) return true;
  return false;
}

Result<json> load_index(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  try {
    json j = json::parse(*text);
    if (!j.is_object() || !j.contains("manifests") || !j["manifests"].is_array())
      return op_error(path.string() + ": not an OCI index (no manifests array)");
    return j;
  } catch (const std::exception& e) {
    return op_error(path.string() + ": not valid JSON: " + e.what());
  }
}

StoredImage entry_to_image(const json& m) {
  StoredImage s;
  s.media_type = m.value("mediaType", "");
  s.digest = m.value("digest", "");
  s.size = m.value("size", std::uint64_t{0});
  if (m.contains("annotations") && m["annotations"].is_object()) {
    const auto& a = m["annotations"];
    s.ref = a.value(std::string(k_ref_name_annotation), "");
    // The served media type, when index.json had to carry the OCI equivalent.
    s.media_type = a.value(std::string(k_media_type_annotation), s.media_type);
    auto p = a.value(std::string(k_platforms_annotation), "");
    if (!p.empty()) s.platforms = split(p, ',');
  }
  return s;
}

// The image manifests of a publication: the top one, or an index's children.
std::vector<const oci::Manifest*> image_manifests(const Publication& p) {
  std::vector<const oci::Manifest*> out;
  if (!p.top.index()) out.push_back(&p.top);
  for (const auto& c : p.children) out.push_back(&c);
  return out;
}

// Walks what one index.json entry reaches; records present digests in `seen`
// and problems (when non-null) one per line.
void walk(const Store& store, const std::string& ref, const std::string& digest, std::uint64_t size, const std::string& media_type,
          const std::vector<std::string>& platforms, bool required, std::set<std::string>& seen, std::vector<std::string>* problems) {
  auto report = [&](const std::string& p) {
    if (problems) problems->push_back(ref + ": " + p);
  };
  if (!store.has_blob(digest)) {
    if (required) report(media_type + " " + digest + " is missing");
    return;
  }
  if (size && !store.has_blob(digest, size)) report(digest + " has the wrong size (expected " + std::to_string(size) + ")");
  bool first = seen.insert(digest).second;
  if (!first && !problems) return;
  if (!oci::is_index(media_type) && !oci::is_manifest(media_type)) return;  // a config or layer
  auto bytes = store.read_blob(digest);
  if (!bytes) {
    report(bytes.error().message);
    return;
  }
  auto m = oci::parse_manifest(std::move(bytes).value(), media_type);
  if (!m) {
    report("manifest " + digest + " does not parse: " + m.error().message);
    return;
  }
  if (m->index()) {
    for (const auto& c : m->manifests) {
      bool want = wanted_platform(c.platform, platforms) && c.platform.os != "unknown";
      walk(store, ref, c.digest, c.size, c.media_type, platforms, want, seen, problems);
    }
  } else {
    walk(store, ref, m->config.digest, m->config.size, "config", platforms, true, seen, problems);
    for (const auto& l : m->layers) walk(store, ref, l.digest, l.size, "layer", platforms, true, seen, problems);
  }
}

}  // namespace

// ---- BlobWriter ----

namespace detail {
// Complete, verified blobs waiting for Store::sync_blobs(): partial -> final;
// `named`: a blob got its name since the folder was last synced.
struct PendingBlobs {
  std::mutex mu;
  std::map<fs::path, fs::path> blobs;
  bool named = false;
  void add(fs::path partial, fs::path final_path) {
    std::lock_guard l(mu);
    blobs[std::move(final_path)] = std::move(partial);
  }
};
}  // namespace detail

BlobWriter::BlobWriter(std::string digest, std::uint64_t expected, fs::path final_path, int fd, detail::PendingBlobs& pending)
    : m_digest(std::move(digest)), m_expected(expected), m_final(std::move(final_path)), m_fd(fd), m_pending(pending) {
  m_partial = m_final;
  m_partial += k_partial_suffix;
}

BlobWriter::~BlobWriter() {
  (void)flush();  // what arrived is worth keeping for a resume
  if (m_fd >= 0) ::close(m_fd);
  // An empty partial is worth nothing to the next run.
  std::error_code ec;
  if (!m_partial.empty() && fs::file_size(m_partial, ec) == 0 && !ec) fs::remove(m_partial, ec);
}

// Writes `bytes` at the end of the file in pieces of k_write_piece. On a
// failure the file keeps only whole bytes, so that a resume starts right.
Result<void> BlobWriter::put(std::string_view bytes) {
  while (!bytes.empty() && m_fd >= 0) {
    ssize_t n = ::pwrite(m_fd, bytes.data(), std::min(bytes.size(), k_write_piece), static_cast<off_t>(m_flushed));
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      (void)::ftruncate(m_fd, static_cast<off_t>(m_flushed));
      m_written = m_flushed;
      m_buffer.clear();
      return op_error(m_partial.string() + ": write failed: " + std::strerror(e) +
                      (e == ENOSPC ? " (free space, then run the same command again: it resumes)" : ""));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
    m_flushed += static_cast<std::uint64_t>(n);
  }
  if (m_flushed - m_synced >= k_writeback_step) start_writeback();
  return {};
}

// Starts writing back what is in the file while the rest downloads:
// sync_blobs() then waits for little, and the disk works alongside the
// network, not after it.
void BlobWriter::start_writeback() {
  if (m_flushed > m_synced && m_fd >= 0)
    (void)::sync_file_range(m_fd, static_cast<off_t>(m_synced), static_cast<off_t>(m_flushed - m_synced), SYNC_FILE_RANGE_WRITE);
  m_synced = m_flushed;
}

Result<void> BlobWriter::flush() {
  auto r = put(m_buffer);
  m_buffer.clear();
  start_writeback();
  return r;
}

Result<void> BlobWriter::write(std::string_view chunk) {
  if (m_expected && m_written + chunk.size() > m_expected)
    return op_error(m_digest + ": more bytes than the expected " + std::to_string(m_expected));
  if (!m_hex.empty()) return op_error(m_digest + ": internal: written after its digest was taken");
  m_hash.update(chunk);
  m_written += chunk.size();
  // Whole pieces go to the file from the chunk itself; a smaller rest waits
  // in the buffer for the next chunk.
  if (!m_buffer.empty()) {
    std::size_t take = std::min(chunk.size(), k_write_piece - m_buffer.size());
    m_buffer.append(chunk.substr(0, take));
    chunk.remove_prefix(take);
    if (m_buffer.size() < k_write_piece) return {};
    if (auto r = put(m_buffer); !r) return r;
    m_buffer.clear();
  }
  std::size_t whole = chunk.size() - chunk.size() % k_write_piece;
  if (auto r = put(chunk.substr(0, whole)); !r) return r;
  if (whole < chunk.size()) {
    if (m_buffer.capacity() < k_write_piece) m_buffer.reserve(k_write_piece);
    m_buffer.append(chunk.substr(whole));
  }
  return {};
}

std::string BlobWriter::sha256_hex() {
  if (m_hex.empty()) m_hex = m_hash.hex();
  return m_hex;
}

Result<void> BlobWriter::truncate() {
  m_buffer.clear();
  m_hex.clear();
  if (::ftruncate(m_fd, 0) != 0) return op_error(m_partial.string() + ": cannot truncate: " + std::strerror(errno));
  m_hash = signing::Sha256();
  m_written = m_flushed = m_synced = 0;
  return {};
}

Result<std::uint64_t> BlobWriter::resume(signing::Sha256& hasher) {
  if (auto r = flush(); !r) return r.error();
  struct stat st {};
  if (::fstat(m_fd, &st) != 0) return op_error(m_partial.string() + ": " + std::strerror(errno));
  auto held = static_cast<std::uint64_t>(st.st_size);
  if (held == 0 || (m_expected && held > m_expected)) {
    if (auto t = truncate(); !t) return t.error();
    return std::uint64_t{0};
  }
  m_hash = signing::Sha256();
  m_hex.clear();
  if (auto r = hash_prefix(m_fd, held, m_partial, {&m_hash, &hasher}); !r) return r.error();
  m_written = m_flushed = m_synced = held;
  return held;
}

Result<void> BlobWriter::publish(BlobSync when) {
  if (auto r = flush(); !r) return r;
  if (m_expected && m_written != m_expected)
    return op_error(m_digest + ": got " + std::to_string(m_written) + " bytes, expected " + std::to_string(m_expected));
  std::string got = "sha256:" + sha256_hex();
  if (got != m_digest) {
    (void)truncate();  // worthless to a resume
    return op_error(m_digest + ": content hashes to " + got + " (corrupted in transit?)");
  }
  if (when == BlobSync::Now) {
    // Durable bytes first, then the name; the folder is synced in sync_blobs().
    if (::fdatasync(m_fd) != 0) return op_error(m_partial.string() + ": fsync failed: " + std::strerror(errno));
    if (::rename(m_partial.c_str(), m_final.c_str()) != 0)
      return op_error(m_final.string() + ": rename failed: " + std::strerror(errno));
    std::lock_guard l(m_pending.mu);
    m_pending.named = true;
  } else {
    m_pending.add(m_partial, m_final);
  }
  m_partial.clear();  // the store's now
  return {};
}

// ---- Store ----

struct Store::Impl {
  fs::path root;
  StoreAccess access = StoreAccess::Read;
  int lock_fd = -1;
  std::optional<CatalogDb> catalog;
  GcReport swept;
  detail::PendingBlobs pending;
  ~Impl() {
    if (lock_fd >= 0) ::close(lock_fd);  // releases the flock
  }
  fs::path index_path() const { return root / "index.json"; }
};

Store::Store() : m_impl(std::make_unique<Impl>()) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Result<Store> Store::open(const fs::path& root, StoreAccess access, int wait_s) {
  Store s;
  s.m_impl->root = root;
  s.m_impl->access = access;
  std::error_code ec;
  bool exists = fs::exists(root / "oci-layout", ec);
  if (!exists && access != StoreAccess::Exclusive)
    return input_error(root.string() + ": no content store here (run `gpubundle mirror` first, or pass --store)");
  if (access == StoreAccess::Exclusive) {
    fs::create_directories(root / "blobs" / "sha256", ec);
    if (ec) return op_error(root.string() + ": cannot create store: " + ec.message());
  }
  if (access != StoreAccess::Read) {
    auto lock = root / ".lock";
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return op_error(lock.string() + ": cannot open lock: " + std::strerror(errno));
    s.m_impl->lock_fd = fd;
    int op = (access == StoreAccess::Exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    while (::flock(fd, op) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return op_error(lock.string() + ": flock failed: " + std::strerror(errno));
      if (std::chrono::steady_clock::now() >= deadline)
        return op_error(root.string() + ": store is in use by another gpubundle process (" + lock.string() + " held for " +
                        std::to_string(wait_s) + "s); try again when it has finished");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (access == StoreAccess::Exclusive) s.sweep();
  if (!exists) {
    if (auto r = write_atomic(root / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})"); !r) return r.error();
    if (!fs::exists(s.m_impl->index_path())) {
      if (auto r = write_atomic(s.m_impl->index_path(),
                                R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})");
          !r)
        return r.error();
    }
  }
  return s;
}

const fs::path& Store::root() const { return m_impl->root; }
const Store::GcReport& Store::swept() const { return m_impl->swept; }

void Store::sweep() {
  // Runs under the exclusive lock: every writer holds it, so no live process
  // owns a temp file. Partials are kept for resume unless their blob is complete.
  auto& rep = m_impl->swept;
  auto blobs = m_impl->root / "blobs" / "sha256";
  for (const auto& dir : {m_impl->root, blobs, m_impl->root / "charts"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      auto name = e.path().filename().string();
      bool stale = is_temp_name(name);
      if (!stale && dir == blobs && is_partial_name(name)) {
        std::error_code ec2;
        stale = fs::exists(blobs / name.substr(0, name.size() - k_partial_suffix.size()), ec2);
      }
      if (!stale) continue;
      std::error_code ec2;
      auto sz = e.file_size(ec2);
      if (fs::remove(e.path(), ec2)) {
        ++rep.temps_removed;
        rep.bytes_freed += ec2 ? 0 : sz;
      }
    }
  }
}

fs::path Store::blob_path(std::string_view digest) const { return m_impl->root / "blobs" / "sha256" / signing::digest_hex(digest); }

bool Store::has_blob(std::string_view digest, std::uint64_t size) const {
  if (!signing::is_sha256_digest(digest)) return false;  // never a path outside blobs/sha256
  std::error_code ec;
  auto sz = fs::file_size(blob_path(digest), ec);
  return !ec && (size == 0 || sz == size);
}

Result<std::string> Store::read_blob(std::string_view digest) const {
  if (!signing::is_sha256_digest(digest)) return op_error("not a sha256 digest: " + std::string(digest.substr(0, 80)));
  auto r = read_file(blob_path(digest));
  if (!r) return op_error(m_impl->root.string() + ": blob " + std::string(digest) + " is missing");
  return r;
}

Result<void> Store::stage_blob(std::string_view digest, std::string_view bytes) {
  if (!signing::is_sha256_digest(digest)) return op_error("not a sha256 digest: " + std::string(digest.substr(0, 80)));
  if (has_blob(digest, bytes.size())) {
    auto held = signing::sha256_file_hex(blob_path(digest));
    if (held && "sha256:" + *held == digest) return {};
    log_warn(blob_path(digest).string() + ": stored bytes do not match " + std::string(digest) + "; replacing them");
  }
  if (signing::sha256_digest(bytes) != digest) return op_error(std::string(digest) + ": content hashes to " + signing::sha256_digest(bytes));
  auto w = open_blob(std::string(digest), bytes.size());
  if (!w) return w.error();
  if (auto r = (*w)->truncate(); !r) return r;
  if (auto r = (*w)->write(bytes); !r) return r;
  return (*w)->publish();
}

Result<void> Store::put_blob(std::string_view digest, std::string_view bytes) {
  if (auto r = stage_blob(digest, bytes); !r) return r;
  return sync_blobs();
}

Result<void> Store::sync_blobs() {
  std::vector<std::pair<fs::path, fs::path>> batch;  // partial, final
  bool named = false;
  {
    std::lock_guard l(m_impl->pending.mu);
    for (auto& [final_path, partial] : m_impl->pending.blobs) batch.emplace_back(std::move(partial), final_path);
    m_impl->pending.blobs.clear();
    named = m_impl->pending.named;
  }
  if (batch.empty() && !named) return {};
  // fsyncs in parallel: the filesystem commits them together.
  auto synced = parallel_try(batch.size(), 8, [&](std::size_t i) -> Result<void> {
    const fs::path& p = batch[i].first;
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return op_error(p.string() + ": cannot open: " + std::strerror(errno));
    int rc = ::fsync(fd);
    int e = errno;
    ::close(fd);
    if (rc != 0) return op_error(p.string() + ": fsync failed: " + std::strerror(e));
    return {};
  });
  if (!synced) return synced;  // still partials: the next run finds them complete
  for (const auto& [partial, final_path] : batch)
    if (::rename(partial.c_str(), final_path.c_str()) != 0)
      return op_error(final_path.string() + ": rename failed: " + std::strerror(errno));
  if (auto r = fsync_dir(m_impl->root / "blobs" / "sha256"); !r) return r;
  std::lock_guard l(m_impl->pending.mu);
  m_impl->pending.named = false;  // transfers are over when this runs; none named since
  return {};
}

Result<std::unique_ptr<BlobWriter>> Store::open_blob(const std::string& digest, std::uint64_t size) {
  if (!signing::is_sha256_digest(digest)) return op_error("not a sha256 digest: " + digest.substr(0, 80));
  fs::path final_path = blob_path(digest);
  fs::path partial = final_path;
  partial += k_partial_suffix;
  std::error_code ec;
  fs::create_directories(final_path.parent_path(), ec);
  int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return op_error(partial.string() + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<BlobWriter> w(new BlobWriter(digest, size, final_path, fd, m_impl->pending));
  // Bytes a previous run left stay until the client resume()s them.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    if (auto r = hash_prefix(fd, static_cast<std::uint64_t>(st.st_size), partial, {&w->m_hash}); !r) return r.error();
    w->m_written = w->m_flushed = w->m_synced = static_cast<std::uint64_t>(st.st_size);
  }
  return w;
}

Result<void> Store::put_blob_file(const std::string& digest, std::uint64_t size, const fs::path& file) {
  if (has_blob(digest, size)) return {};
  auto w = open_blob(digest, size);
  if (!w) return w.error();
  if (auto t = (*w)->truncate(); !t) return t;
  std::ifstream in(file, std::ios::binary);
  if (!in) return op_error(file.string() + ": cannot open");
  std::string buf(1 << 16, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0)
      if (auto r = (*w)->write(std::string_view(buf.data(), static_cast<size_t>(in.gcount()))); !r) return r;
  }
  if (auto r = (*w)->publish(); !r) return r;
  return sync_blobs();
}

Result<std::vector<StoredImage>> Store::images() const {
  auto idx = load_index(m_impl->index_path());
  if (!idx) return idx.error();
  std::vector<StoredImage> out;
  for (const auto& m : (*idx)["manifests"]) out.push_back(entry_to_image(m));
  return out;
}

std::optional<StoredImage> Store::find_image(const std::string& ref) const {
  auto all = images();
  if (!all) return std::nullopt;
  for (auto& i : *all)
    if (i.ref == ref) return i;
  return std::nullopt;
}

Result<void> Store::add_images(const std::vector<StoredImage>& add) {
  auto idx = load_index(m_impl->index_path());
  if (!idx) return idx.error();
  std::map<std::string, json> by_ref;
  json keep = json::array();
  for (const auto& m : (*idx)["manifests"]) {
    auto s = entry_to_image(m);
    if (s.ref.empty()) keep.push_back(m);
    else by_ref[s.ref] = m;
  }
  for (const auto& i : add) {
    if (!has_blob(i.digest, i.size)) return op_error(i.ref + ": manifest " + i.digest + " is not in the store");
    json a = {{std::string(k_ref_name_annotation), i.ref}};
    if (!i.platforms.empty()) a[std::string(k_platforms_annotation)] = join(i.platforms, ",");
    std::string layout_type = i.media_type;
    if (i.media_type == oci::k_docker_list) layout_type = oci::k_oci_index;
    if (i.media_type == oci::k_docker_manifest) layout_type = oci::k_oci_manifest;
    if (layout_type != i.media_type) a[std::string(k_media_type_annotation)] = i.media_type;
    by_ref[i.ref] = json{{"mediaType", layout_type}, {"digest", i.digest}, {"size", i.size}, {"annotations", a}};
  }
  json out = {{"schemaVersion", 2}, {"mediaType", std::string(oci::k_oci_index)}};
  json list = keep;
  for (auto& [ref, m] : by_ref) list.push_back(m);
  out["manifests"] = list;
  return write_atomic(m_impl->index_path(), out.dump(2) + "\n");
}

std::uint64_t Publication::bytes() const {
  std::uint64_t n = top.bytes.size();
  for (const auto& c : children) n += c.bytes.size();
  for (const auto* m : image_manifests(*this)) {
    n += m->config.size;
    for (const auto& l : m->layers) n += l.size;
  }
  return n;
}

Result<void> Store::publish(const std::vector<Publication>& items) {
  if (auto r = sync_blobs(); !r) return r;
  // 1. what each manifest names is there, before anything is written
  for (const auto& p : items) {
    if (!oci::is_index(p.top.media_type) && !oci::is_manifest(p.top.media_type))
      return op_error(p.ref + ": " + p.top.media_type + " is not a manifest or index; nothing was published");
    if (!p.top.index() && !p.children.empty()) return op_error(p.ref + ": a manifest has no children; nothing was published");
    for (const auto& c : p.children)
      if (std::none_of(p.top.manifests.begin(), p.top.manifests.end(), [&](const oci::Descriptor& d) { return d.digest == c.digest; }))
        return op_error(p.ref + ": child " + c.digest + " is not listed by its index; nothing was published");
    for (const auto* m : image_manifests(p)) {
      if (m->config.digest.empty()) return op_error(p.ref + ": manifest " + m->digest + " has no config; nothing was published");
      auto missing = !has_blob(m->config.digest, m->config.size) ? &m->config : nullptr;
      for (const auto& l : m->layers)
        if (!missing && !has_blob(l.digest, l.size)) missing = &l;
      if (missing)
        return op_error(p.ref + ": blob " + missing->digest + " (" + std::to_string(missing->size) +
                        " bytes) is not in the store; nothing was published");
    }
  }
  // 2. manifests: children before the index that lists them
  for (const auto& p : items) {
    for (const auto& c : p.children)
      if (auto r = stage_blob(c.digest, c.bytes); !r) return r;
    if (auto r = stage_blob(p.top.digest, p.top.bytes); !r) return r;
  }
  if (auto r = sync_blobs(); !r) return r;
  // 3. index.json
  std::vector<StoredImage> entries;
  for (const auto& p : items) entries.push_back({p.ref, p.top.media_type, p.top.digest, p.top.bytes.size(), p.platforms});
  if (auto r = add_images(entries); !r) return r;
  // 4. catalog rows
  std::vector<ImageRow> rows;
  std::vector<BlobRow> blob_rows;
  const std::string now = rfc3339_utc_now();
  for (const auto& p : items) {
    rows.push_back({p.ref, p.top.digest, p.top.media_type, p.bytes(), p.source, join(p.platforms, ","), now});
    blob_rows.push_back({p.top.digest, p.top.bytes.size()});
    for (const auto& c : p.children) blob_rows.push_back({c.digest, c.bytes.size()});
    for (const auto* m : image_manifests(p)) {
      blob_rows.push_back({m->config.digest, m->config.size});
      for (const auto& l : m->layers) blob_rows.push_back({l.digest, l.size});
    }
  }
  auto cat = catalog();
  if (!cat) return cat.error();
  return (*cat)->record(rows, blob_rows);
}

fs::path Store::chart_path(const std::string& name, const std::string& version) const {
  return m_impl->root / "charts" / recipes::chart_file_name(name, version);
}

Result<void> Store::put_chart(const std::string& name, const std::string& version, std::string_view bytes, const std::string& source) {
  auto path = chart_path(name, version);
  if (auto r = write_atomic(path, bytes); !r) return r;
  auto cat = catalog();
  if (!cat) return cat.error();
  return (*cat)->record_chart({name, version, path.filename().string(), signing::sha256_hex(bytes), source, rfc3339_utc_now()});
}

Result<CatalogDb*> Store::catalog() {
  if (!m_impl->catalog) {
    auto c = CatalogDb::open(m_impl->root / "catalog.db");
    if (!c) return c.error();
    m_impl->catalog.emplace(std::move(c).value());
  }
  return &*m_impl->catalog;
}

Result<std::vector<std::string>> Store::reachable() {
  auto imgs = images();
  if (!imgs) return imgs.error();
  std::set<std::string> seen;
  for (const auto& i : *imgs) walk(*this, i.ref, i.digest, i.size, i.media_type, i.platforms, true, seen, nullptr);
  return std::vector<std::string>(seen.begin(), seen.end());
}

Result<Store::FsckReport> Store::fsck(bool repair) {
  FsckReport rep;
  if (repair && m_impl->access != StoreAccess::Exclusive)
    return op_error("internal: store fsck --repair needs the exclusive lock");
  auto root = m_impl->root;
  auto layout = read_file(root / "oci-layout");
  if (!layout || layout->find("imageLayoutVersion") == std::string::npos) rep.problems.push_back("oci-layout: missing or invalid");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "blobs" / "sha256", ec)) {
    auto name = e.path().filename().string();
    if (is_temp_name(name) || is_partial_name(name)) continue;  // a writer's (or a crash's) leftover; gc removes it
    if (!e.is_regular_file() || !signing::is_sha256_digest("sha256:" + name)) {
      rep.problems.push_back("blobs/sha256/" + name + ": not a blob");
      continue;
    }
    auto h = signing::sha256_file_hex(e.path());
    ++rep.blobs;
    rep.bytes += e.file_size(ec);
    if (!h) {
      rep.problems.push_back("blobs/sha256/" + name + ": " + h.error().message);
    } else if (*h != name && repair) {
      std::error_code rm;
      if (fs::remove(e.path(), rm)) rep.repaired.push_back("blobs/sha256/" + name);
      else rep.problems.push_back("blobs/sha256/" + name + ": corrupt, and cannot remove it: " + rm.message());
    } else if (*h != name) {
      rep.problems.push_back("blobs/sha256/" + name + ": content hashes to sha256:" + *h +
                             " (corrupt; `gpubundle store fsck --repair` removes it, then `gpubundle mirror` with a lock "
                             "that needs it fetches it again)");
    }
  }
  if (ec) rep.problems.push_back("blobs/sha256: " + ec.message());
  auto imgs = images();
  if (!imgs) {
    rep.problems.push_back(imgs.error().message);
    return rep;
  }
  std::set<std::string> seen;
  for (const auto& i : *imgs) {
    ++rep.images;
    std::string ref = i.ref.empty() ? "index.json entry " + i.digest : i.ref;
    if (!signing::is_sha256_digest(i.digest)) {
      rep.problems.push_back(ref + ": invalid digest '" + i.digest + "'");
      continue;
    }
    walk(*this, ref, i.digest, i.size, i.media_type, i.platforms, true, seen, &rep.problems);
  }
  return rep;
}

fs::path Store::packages_dir() const { return m_impl->root / "packages"; }
fs::path Store::keys_dir() const { return m_impl->root / "keys"; }

Result<Store::GcReport> Store::gc() {
  GcReport rep;
  auto live = reachable();
  if (!live) return live.error();
  std::set<std::string> keep;
  for (const auto& d : *live) keep.insert(signing::digest_hex(d));
  bool own_lock = m_impl->access == StoreAccess::Exclusive;
  auto now = fs::file_time_type::clock::now();
  auto is_stale_temp = [&](const fs::directory_entry& e) {
    auto name = e.path().filename().string();
    if (!is_temp_name(name) && !is_partial_name(name)) return false;
    if (own_lock) return true;
    std::error_code ec;
    auto t = e.last_write_time(ec);
    return !ec && now - t > std::chrono::hours(1);
  };
  auto remove = [&](const fs::directory_entry& e, std::size_t& counter) {
    std::error_code ec;
    auto sz = e.file_size(ec);
    if (fs::remove(e.path(), ec)) {
      ++counter;
      rep.bytes_freed += sz;
    }
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m_impl->root / "blobs" / "sha256", ec)) {
    auto name = e.path().filename().string();
    if (is_temp_name(name) || is_partial_name(name)) {
      if (is_stale_temp(e)) remove(e, rep.temps_removed);
    } else if (!keep.count(name)) {
      remove(e, rep.blobs_removed);
    }
  }
  for (auto dir : {m_impl->root, m_impl->root / "charts"}) {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (is_stale_temp(e)) remove(e, rep.temps_removed);
  }
  // A killed build's scratch: a hidden folder in packages/ (".site-repo.<pid>").
  // A plain file there is an earlier version's package cache (now the blobs).
  for (const auto& e : fs::directory_iterator(packages_dir(), ec)) {
    std::error_code dec;
    if (e.path().filename().string().front() != '.' && e.is_regular_file(dec) && !e.is_symlink(dec)) {
      remove(e, rep.temps_removed);
      continue;
    }
    if (e.path().filename().string().front() != '.' || !e.is_directory(dec) || e.is_symlink(dec)) continue;
    auto t = e.last_write_time(dec);
    if (!own_lock && (dec || now - t < std::chrono::hours(1))) continue;
    std::uint64_t bytes = 0;
    for (const auto& f : fs::recursive_directory_iterator(e.path(), dec))
      if (f.is_regular_file(dec) && !f.is_symlink(dec)) bytes += f.file_size(dec);
    if (fs::remove_all(e.path(), dec) > 0) {
      ++rep.temps_removed;
      rep.bytes_freed += bytes;
    }
  }
  auto cat = catalog();
  if (!cat) return cat.error();
  std::vector<std::string> refs;
  auto imgs = images();
  if (imgs)
    for (const auto& i : *imgs) refs.push_back(i.ref);
  if (auto r = (*cat)->prune(refs, *live); !r) return r.error();
  return rep;
}

}  // namespace gb::mirror
