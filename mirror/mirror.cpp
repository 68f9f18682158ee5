#include "mirror/mirror.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "common/parallel.hpp"
#include "common/strings.hpp"

namespace gb::mirror {

namespace {

// "REF: message", naming the reference once: a leading "REF: " or
// "NAME@DIGEST: " that the client already put in front is dropped.
std::string about(const std::string& ref, std::string_view message, const recipes::Reference* parsed = nullptr) {
  std::vector<std::string> heads = {ref + ": "};
  if (parsed) {
    heads.push_back(parsed->str() + ": ");
    heads.push_back(parsed->name() + ": ");
    if (!parsed->digest.empty()) heads.push_back(parsed->name() + "@" + parsed->digest + ": ");
  }
  for (const auto& h : heads)
    if (starts_with(message, h)) {
      message.remove_prefix(h.size());
      break;
    }
  return ref + ": " + std::string(message);
}

class RegistrySource final : public ImageSource {
public:
  RegistrySource(RegistryConfig config, ClientOptions options) : m_client(std::move(config), options) {}
  Result<oci::Manifest> get_manifest(const recipes::Reference& ref) override { return m_client.get_manifest(ref); }
  Result<std::optional<std::string>> head_manifest(const recipes::Reference& ref) override { return m_client.head_manifest(ref); }
  Result<void> fetch_blobs(std::vector<BlobRequest> requests, const std::function<void(std::uint64_t)>& on_bytes) override {
    return m_client.fetch_blobs(std::move(requests), on_bytes);
  }
  Result<std::string> get_url(const std::string& url) override { return m_client.get_url(url); }
  std::uint64_t bytes_downloaded() const override { return m_client.stats().blob_bytes_downloaded; }
  std::vector<std::string> by_host(const std::vector<std::string>& lines) const override { return m_client.by_host(lines); }

private:
  mutable RegistryClient m_client;
};

struct ImagePlan {
  recipes::LockImage* entry = nullptr;
  recipes::Reference ref;
  std::vector<std::string> platforms;
  oci::Manifest top;
  std::vector<oci::Manifest> children;  // kept child manifests of an index
  std::vector<oci::Descriptor> blobs;   // configs and layers
  std::vector<std::string> problems;
  std::uint64_t bytes = 0;
  std::string site_digest;  // the filtered index, when only some children travel
};

// Reads a manifest from the store when present, else from the source; checks its digest.
Result<oci::Manifest> load_manifest(Store& store, ImageSource& source, const recipes::Reference& repo, const oci::Descriptor& d) {
  if (store.has_blob(d.digest, d.size)) {
    auto bytes = store.read_blob(d.digest);
    if (bytes) {
      auto m = oci::parse_manifest(std::move(bytes).value(), d.media_type);
      if (m && m->digest == d.digest) return m;
    }
  }
  recipes::Reference r = repo;
  r.tag.clear();
  r.digest = d.digest;
  auto m = source.get_manifest(r);
  if (!m) return Failure{m.error().kind, about(d.digest, m.error().message, &r)};
  if (m->digest != d.digest) return op_error(d.digest + ": registry served a manifest hashing to " + m->digest);
  return m;
}

void check_image(ImagePlan& plan, Store& store, ImageSource& source, const std::optional<StoredImage>& stored, bool locked) {
  const std::string& src = plan.entry->source;
  const std::string not_found = src + ": not found (no such tag or repository)";
  bool fetched = false;
  if (stored) {  // HEAD first: the stored copy serves when the digest is the same
    auto head = source.head_manifest(plan.ref);
    if (!head || !head->has_value()) {
      plan.problems.push_back(head ? not_found : about(src, head.error().message, &plan.ref));
      return;
    }
    const std::string& upstream = **head;
    if (!upstream.empty() && stored->digest == upstream && store.has_blob(upstream, stored->size))
      if (auto bytes = store.read_blob(upstream))
        if (auto m = oci::parse_manifest(std::move(bytes).value(), stored->media_type); m && m->digest == upstream) {
          plan.top = std::move(m).value();
          fetched = true;
        }
  }
  if (!fetched) {  // nothing stored (no HEAD round trip first), or not upstream's
    auto m = source.get_manifest(plan.ref);
    if (!m) {
      bool absent = false;  // a HEAD only to word a 404, where none came first
      if (!stored)
        if (auto head = source.head_manifest(plan.ref)) absent = !head->has_value();
      plan.problems.push_back(absent ? not_found : about(src, m.error().message, &plan.ref));
      return;
    }
    plan.top = std::move(m).value();
  }
  if (locked && !plan.entry->digest.empty() && plan.entry->digest != plan.top.digest) {
    plan.problems.push_back(src + ": upstream digest " + plan.top.digest + " differs from the lock's " + plan.entry->digest);
    return;
  }
  plan.bytes = plan.top.bytes.size();
  std::vector<const oci::Manifest*> images;
  if (plan.top.index()) {
    std::vector<std::string> missing;
    auto carried = oci::carried_children(plan.top, plan.platforms, &missing);
    if (!missing.empty()) {
      std::vector<std::string> has;
      for (const auto& c : plan.top.manifests)
        if (!oci::is_attestation(c)) has.push_back(c.platform.str());
      for (const auto& want : missing)
        plan.problems.push_back(src + ": no " + want + " in its index (has " + (has.empty() ? "none" : join(has, ", ")) + ")");
      return;
    }
    std::set<std::string> taken;
    for (const auto* c : carried) {
      std::string what = oci::is_attestation(*c) ? "attestation " + c->digest : c->platform.str();
      if (!taken.insert(c->digest).second) continue;
      if (!signing::is_sha256_digest(c->digest)) {  // never into a URL or a store path
        plan.problems.push_back(src + " (" + what + "): unsupported child digest '" + c->digest.substr(0, 80) + "'");
        continue;
      }
      auto m = load_manifest(store, source, plan.ref, *c);
      if (!m) {
        plan.problems.push_back(src + " (" + what + "): " + m.error().message);
        continue;
      }
      if (m->index()) {
        plan.problems.push_back(src + " (" + what + "): nested index " + c->digest + " is not supported");
        continue;
      }
      plan.children.push_back(std::move(m).value());
    }
    // A registry refuses an index naming manifests it lacks: the site gets
    // one naming only what travels (mirror/oci.hpp filter_index).
    if (plan.problems.empty()) {
      auto site = oci::site_index(plan.top, plan.platforms);
      if (!site) plan.problems.push_back(src + ": " + site.error().message);
      else if (*site) plan.site_digest = (*site)->digest;
    }
    for (const auto& c : plan.children) images.push_back(&c);
  } else {
    images.push_back(&plan.top);
  }
  for (const auto* m : images) {
    if (m != &plan.top) plan.bytes += m->bytes.size();
    if (m->config.digest.empty()) {
      plan.problems.push_back(src + ": manifest " + m->digest + " has no config");
      continue;
    }
    plan.blobs.push_back(m->config);
    for (const auto& l : m->layers) plan.blobs.push_back(l);
  }
  for (const auto& b : plan.blobs) {
    if (!signing::is_sha256_digest(b.digest)) plan.problems.push_back(src + ": unsupported blob digest '" + b.digest.substr(0, 80) + "'");
    plan.bytes += b.size;
  }
}

}  // namespace

std::unique_ptr<ImageSource> registry_source(RegistryConfig config, ClientOptions options) {
  return std::make_unique<RegistrySource>(std::move(config), options);
}

Result<MirrorSummary> mirror_images(recipes::Lock& lock, Store& store, ImageSource& source, Progress& progress, const MirrorOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::uint64_t downloaded_before = source.bytes_downloaded();
  MirrorSummary summary;

  // 1. check
  std::vector<ImagePlan> plans;
  std::vector<std::string> problems;
  std::vector<std::string> bad_refs;  // bad input: reported alone, exit 2
  for (auto& li : lock.images) {
    if (li.built) continue;  // made here: nothing upstream to pull
    ImagePlan p;
    p.entry = &li;
    auto ref = recipes::Reference::parse(li.source);
    if (!ref) {
      bad_refs.push_back(ref.error().message);  // names the reference once
      continue;
    }
    if (!li.digest.empty() && !signing::is_sha256_digest(li.digest)) {
      bad_refs.push_back(li.source + ": lock digest '" + li.digest.substr(0, 80) + "' is not sha256:<64 hex digits>");
      continue;
    }
    p.ref = *ref;
    if (options.all_platforms) li.platforms = {std::string(oci::k_all_platforms)};
    p.platforms = lock.platforms_of(li);
    plans.push_back(std::move(p));
  }
  if (!bad_refs.empty()) {
    std::string msg = bad_refs.size() == 1 ? "lock: " + bad_refs[0] : "lock: " + std::to_string(bad_refs.size()) + " bad images:";
    if (bad_refs.size() > 1)
      for (const auto& b : bad_refs) msg += "\n  " + b;
    return input_error(msg);
  }
  std::map<std::string, StoredImage> stored;
  if (auto all = store.images(); all)
    for (auto& s : *all) stored[s.ref] = s;
  else
    return all.error();

  progress.begin("check", 0);
  parallel_for(plans.size(), options.jobs, [&](std::size_t i) {
    auto it = stored.find(plans[i].entry->source);
    check_image(plans[i], store, source, it == stored.end() ? std::nullopt : std::optional<StoredImage>(it->second), options.locked);
  });
  std::vector<std::string> unchecked;  // the images with a problem, named in the closing line
  for (auto& p : plans) {
    problems.insert(problems.end(), p.problems.begin(), p.problems.end());
    if (!p.problems.empty()) unchecked.push_back(p.entry->source);
  }
  if (!problems.empty()) {
    progress.end("check failed");
    std::vector<std::string> told = source.by_host(problems);
    if (told != problems) {
      // A host that could not be talked to: its one line, not one per image.
      std::string names;
      for (std::size_t i = 0; i < unchecked.size() && i < 3; ++i) names += (i ? ", " : "") + unchecked[i];
      if (unchecked.size() > 3) names += " and " + std::to_string(unchecked.size() - 3) + " more";
      told.push_back("mirror: " + std::to_string(plans.size() - unchecked.size()) + " of " + std::to_string(plans.size()) +
                     " images checked, " + std::to_string(unchecked.size()) + " not (" + names + "); nothing was downloaded");
      return op_error(join(told, "\n"));
    }
    std::string msg = std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems") +
                      " found before downloading anything:";
    for (const auto& p : problems) msg += "\n  " + p;
    return op_error(msg);
  }
  progress.end(std::to_string(plans.size()) + " images checked");

  // 2. fetch: manifests first (small; no index.json entry names them yet, and a
  // re-run reads them from here), then every missing config and layer once.
  // Each config and layer is synced and named by the worker that fetched it;
  // the manifests get theirs in one sync_blobs() (publish, or on failure).
  for (auto& p : plans) {
    if (auto r = store.stage_blob(p.top.digest, p.top.bytes); !r) return r.error();
    for (const auto& c : p.children)
      if (auto r = store.stage_blob(c.digest, c.bytes); !r) return r.error();
  }
  struct Want {
    oci::Descriptor desc;
    recipes::Reference repo;
    std::vector<std::size_t> images;
  };
  std::map<std::string, Want> wanted;
  std::vector<std::size_t> pending(plans.size(), 0);
  std::set<std::string> present;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    for (const auto& b : plans[i].blobs) {
      if (store.has_blob(b.digest, b.size)) {
        present.insert(b.digest);
        continue;
      }
      auto [it, fresh] = wanted.try_emplace(b.digest, Want{b, plans[i].ref, {}});
      if (std::find(it->second.images.begin(), it->second.images.end(), i) == it->second.images.end()) {
        it->second.images.push_back(i);
        ++pending[i];
      }
    }
  }
  summary.blobs_present = present.size();
  std::uint64_t total = 0;
  for (const auto& [d, w] : wanted) total += w.desc.size;
  for (std::size_t i = 0; i < plans.size(); ++i)
    if (!pending[i]) progress.item(plans[i].entry->source, "up to date");

  std::mutex mu;
  std::vector<BlobRequest> requests;
  for (auto& [digest, w] : wanted) {
    BlobRequest r;
    r.repo = w.repo;
    r.digest = digest;
    r.size = w.desc.size;
    r.open_sink = [&store, digest = digest, size = w.desc.size]() -> std::unique_ptr<BlobSink> {
      auto b = store.open_blob(digest, size);
      if (!b) return nullptr;
      return std::move(b).value();
    };
    r.on_done = [&, images = w.images](BlobSink& sink) -> Result<void> {
      auto* writer = dynamic_cast<BlobWriter*>(&sink);
      if (!writer) return op_error("internal: blob sink is not a store writer");
      if (auto res = writer->publish(BlobSync::Now); !res) return res;
      std::lock_guard l(mu);
      ++summary.blobs_fetched;
      for (auto i : images)
        if (--pending[i] == 0) progress.item(plans[i].entry->source, "done");
      return {};
    };
    requests.push_back(std::move(r));
  }
  if (!requests.empty()) {
    progress.begin("mirror", total);
    auto res = source.fetch_blobs(std::move(requests), [&](std::uint64_t n) { progress.advance(n); });
    if (!res) {
      progress.end("failed");
      (void)store.sync_blobs();  // best effort: what did arrive is kept either way, named or as partials
      std::vector<std::string> lines = split(res.error().message, '\n');
      std::vector<std::string> told = source.by_host(lines);
      if (told != lines) {
        std::size_t whole = std::count(pending.begin(), pending.end(), std::size_t{0});
        told.push_back("mirror: " + std::to_string(whole) + " of " + std::to_string(plans.size()) +
                       " images have every blob in the store, " + std::to_string(plans.size() - whole) +
                       " not; blobs fetched so far are kept for the next run");
        return Failure{res.error().kind, join(told, "\n")};
      }
      return Failure{res.error().kind, "mirror failed; blobs fetched so far are kept for the next run:\n" + res.error().message};
    }
  }

  // 3. publish (mirror/store.hpp: index.json only once every blob is there), then the lock's digests.
  std::vector<Publication> published;
  for (const auto& p : plans) published.push_back({p.entry->source, p.top, p.children, p.platforms, p.ref.name()});
  if (auto r = store.publish(published); !r) return r.error();
  for (auto& p : plans) {
    p.entry->digest = p.top.digest;
    p.entry->site_digest = p.site_digest;
    bool up_to_date = std::none_of(p.blobs.begin(), p.blobs.end(), [&](const oci::Descriptor& b) { return wanted.count(b.digest) > 0; });
    summary.images.push_back({p.entry->source, p.top.digest, p.top.media_type, p.bytes, up_to_date});
  }

  summary.bytes_downloaded = source.bytes_downloaded() - downloaded_before;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

Result<std::string> mirror_one(Store& store, ImageSource& source, const std::string& ref, const std::string& digest,
                               const std::vector<std::string>& platforms, Progress& progress) {
  recipes::Lock one;
  one.platforms = platforms;
  recipes::LockImage image;
  image.source = ref;
  image.platforms = platforms;
  image.digest = digest;
  one.images.push_back(image);
  MirrorOptions mo;
  mo.locked = !digest.empty();
  auto mirrored = mirror_images(one, store, source, progress, mo);
  if (!mirrored) return mirrored.error();
  return one.images.front().digest;
}

}  // namespace gb::mirror
