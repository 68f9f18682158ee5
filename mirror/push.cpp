#include "mirror/push.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

#include "common/parallel.hpp"
#include "common/progress.hpp"
#include "common/strings.hpp"
#include "mirror/registry.hpp"

namespace gb::mirror {

Result<PushReport> push_images(RegistryClient& client, const PushPlan& plan, const PushOptions& o, Progress& progress) {
  const std::vector<PushImage>& images = plan.images;
  struct BlobJob {
    recipes::Reference repo;
    std::string digest;
    std::optional<recipes::Reference> mount_from;
    std::size_t image;  // the image it is for
  };
  std::vector<BlobJob> uploads, mounts;
  std::map<std::string, recipes::Reference> first_repo;
  for (std::size_t i = 0; i < images.size(); ++i)
    for (const auto& d : images[i].blobs) {
      const recipes::Reference& repo = images[i].repo;
      auto [it, fresh] = first_repo.emplace(d, repo);
      if (fresh) uploads.push_back({repo, d, std::nullopt, i});
      else if (!(it->second == repo)) mounts.push_back({repo, d, it->second, i});
    }

  PushReport report;
  struct ManifestJob {
    recipes::Reference ref;
    std::string digest;
  };
  std::vector<ManifestJob> manifest_jobs;
  std::vector<std::size_t> first_manifest;  // image i's are [first_manifest[i], first_manifest[i + 1])
  for (const auto& p : images) {
    first_manifest.push_back(manifest_jobs.size());
    for (const auto& d : p.manifests) {
      bool top = d == p.manifests.back();
      recipes::Reference ref = top && !p.tagged.tag.empty() ? p.tagged : p.repo;
      if (!top || p.tagged.tag.empty()) ref.digest = d;
      manifest_jobs.push_back({ref, d});
    }
  }
  first_manifest.push_back(manifest_jobs.size());

  std::vector<BlobJob> jobs = uploads;
  jobs.insert(jobs.end(), mounts.begin(), mounts.end());
  // A failure talking to the registry: a host that could not be talked to at
  // all in one line (not one per image or blob), then what the registry got.
  auto at_registry = [&](const Failure& f) -> Failure {
    std::vector<std::string> lines = client.by_host(split(f.message, '\n'));
    std::size_t done = report.destinations.size();
    std::string last = o.verb + ": " + std::to_string(done) + " of " + std::to_string(images.size()) + " images pushed";
    if (report.blobs_pushed + report.blobs_mounted + report.manifests_pushed == 0)
      last += "; nothing at " + o.place + " changed";
    else
      last += ", " + std::to_string(images.size() - done) + " not (" + std::to_string(report.blobs_pushed) + " blobs and " +
              std::to_string(report.manifests_pushed) + " manifests pushed, " + std::to_string(report.blobs_mounted) +
              " blobs mounted); running it again pushes the rest";
    lines.push_back(last);
    return Failure{f.kind, join(lines, "\n")};
  };

  // 1. What the registry lacks.
  std::vector<char> needed(jobs.size(), 0), manifest_there(manifest_jobs.size(), 0), complete(images.size(), 0);
  auto head_manifest = [&](std::size_t k) -> Result<void> {
    const ManifestJob& mj = manifest_jobs[k];
    auto current = client.head_manifest(mj.ref);
    if (!current) return op_error(mj.ref.str() + ": " + current.error().message);
    manifest_there[k] = current.value() && *current.value() == mj.digest;
    return {};
  };
  auto tops = parallel_try(images.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    auto r = head_manifest(first_manifest[i + 1] - 1);
    complete[i] = manifest_there[first_manifest[i + 1] - 1] && !o.check_blobs;
    return r;
  });
  if (!tops) return at_registry(tops.error());
  std::vector<std::size_t> children;  // manifest jobs still to ask about
  for (std::size_t i = 0; i < images.size(); ++i)
    for (std::size_t k = first_manifest[i]; k + 1 < first_manifest[i + 1]; ++k)
      if (complete[i]) manifest_there[k] = 1;
      else children.push_back(k);
  std::mutex report_mu;
  auto headed = parallel_try(children.size() + jobs.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    if (i < children.size()) return head_manifest(children[i]);
    std::size_t b = i - children.size();
    const BlobJob& j = jobs[b];
    if (plan.omitted.count(j.digest) && !j.mount_from) return {};  // step 3 looks for it
    if (complete[j.image]) {
      std::lock_guard l(report_mu);
      ++report.blobs_present;
      return {};
    }
    auto has = client.blob_exists(j.repo, j.digest);
    if (!has) return has.error();
    std::lock_guard l(report_mu);
    if (has.value()) ++report.blobs_present;
    else needed[b] = 1;
    return {};
  });
  if (!headed) return at_registry(headed.error());

  // 2. The caller readies what goes out.
  std::set<std::string> to_push;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!needed[i] || !to_push.insert(jobs[i].digest).second) continue;
    if (o.stored_size) total += o.stored_size(jobs[i].digest);
  }
  if (o.prepare)
    if (auto r = o.prepare(to_push); !r) return r.error();

  // 3. What the source leaves out must be at the registry.
  if (!plan.omitted.empty()) {
    std::vector<std::string> missing;
    std::mutex mu;
    std::vector<BlobJob> checks;
    for (const auto& j : uploads)
      if (plan.omitted.count(j.digest) && !complete[j.image]) checks.push_back(j);
    auto r = parallel_try(checks.size(), o.jobs, [&](std::size_t i) -> Result<void> {
      auto has = client.blob_exists(checks[i].repo, checks[i].digest);
      if (!has) return has.error();
      if (!has.value()) {
        // It may sit in another repository of this plan: mount it from there.
        for (const auto& p : images) {
          if (p.repo == checks[i].repo) continue;
          auto there = client.blob_exists(p.repo, checks[i].digest);
          if (there && there.value()) {
            auto mounted = client.mount_blob(checks[i].repo, checks[i].digest, p.repo);
            if (mounted && mounted.value()) return {};
          }
        }
        std::lock_guard l(mu);
        missing.push_back(checks[i].digest + " (for " + checks[i].repo.str() + ")");
      }
      return {};
    });
    if (!r) return at_registry(r.error());
    if (!missing.empty()) {
      std::sort(missing.begin(), missing.end());
      return op_error(plan.omitted_by + " leaves out " + std::to_string(missing.size()) + " blob(s) " + o.place + " does not have: " +
                      join(missing, ", ") + (plan.omitted_hint.empty() ? "" : "; " + plan.omitted_hint));
    }
  }

  // 4. Blobs.
  progress.begin(o.verb, total);
  auto push = [&](std::size_t i) -> Result<void> {
    if (!needed[i]) return {};
    const BlobJob& j = jobs[i];
    bool mounted = false;
    if (j.mount_from) {
      auto mount = client.mount_blob(j.repo, j.digest, *j.mount_from);
      if (!mount) return mount.error();
      mounted = mount.value();
    }
    Result<void> r;
    if (!mounted) {
      if (plan.omitted.count(j.digest)) {
        r = op_error("the registry did not mount it" + (j.mount_from ? " from " + j.mount_from->str() : std::string()) +
                     ", and " + plan.omitted_by + " does not carry it");
      } else {
        auto src = o.open_blob(j.digest, [&](std::uint64_t n) { progress.advance(n); });
        r = src ? client.push_blob(j.repo, j.digest, **src) : Result<void>(src.error());
      }
    }
    if (!r) return op_error(j.repo.str() + "@" + j.digest + ": " + r.error().message);
    std::lock_guard l(report_mu);
    if (mounted) ++report.blobs_mounted;
    else {
      ++report.blobs_pushed;
      report.bytes_pushed += o.stored_size ? o.stored_size(j.digest) : 0;
    }
    return {};
  };
  if (auto r = parallel_try(uploads.size(), o.jobs, [&](std::size_t i) { return push(i); }); !r) return at_registry(r.error());
  if (auto r = parallel_try(mounts.size(), o.jobs, [&](std::size_t i) { return push(uploads.size() + i); }); !r)
    return at_registry(r.error());

  // 5. Manifests, in order, those the registry lacked.
  auto r = parallel_try(images.size(), o.jobs, [&](std::size_t i) -> Result<void> {
    const PushImage& p = images[i];
    for (std::size_t k = first_manifest[i]; k < first_manifest[i + 1]; ++k) {
      const ManifestJob& mj = manifest_jobs[k];
      if (manifest_there[k]) {
        std::lock_guard l(report_mu);
        ++report.manifests_present;
        continue;
      }
      const PushManifest& pm = plan.manifests.at(mj.digest);
      if (auto put = client.put_manifest(mj.ref, pm.media_type, pm.bytes); !put) {
        std::string hint = k + 1 == first_manifest[i + 1] && !p.top_hint.empty() ? "; " + p.top_hint : "";
        // The client names the reference already; say it once.
        const std::string& why = put.error().message;
        return op_error((starts_with(why, mj.ref.str() + ": ") ? why : mj.ref.str() + ": " + why) + hint);
      }
      std::lock_guard l(report_mu);
      ++report.manifests_pushed;
    }
    std::lock_guard l(report_mu);
    report.destinations.push_back(p.tagged.str());
    return {};
  });
  if (!r) return at_registry(r.error());
  std::sort(report.destinations.begin(), report.destinations.end());
  progress.end(std::to_string(report.blobs_pushed) + " blobs pushed (" + human_bytes(report.bytes_pushed) + "), " +
               std::to_string(report.blobs_mounted) + " mounted, " + std::to_string(report.blobs_present) + " already there");
  return report;
}

}  // namespace gb::mirror
