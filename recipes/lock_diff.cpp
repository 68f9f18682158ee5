#include "recipes/lock_diff.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/progress.hpp"
#include "common/strings.hpp"
#include "recipes/reference.hpp"

namespace gb::recipes {

namespace {

using json = nlohmann::json;

std::string repository_of(const std::string& source) {
  auto r = Reference::parse(source);
  return r ? r->name() : source;  // parse_lock checked every source; the fallback never matches another
}

// The tag, else the digest: what a reviewer reads beside a known repository.
std::string tag_of(const std::string& source) {
  auto r = Reference::parse(source);
  if (!r) return source;
  return r->tag.empty() ? r->digest : r->tag;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void compare(std::vector<FieldChange>& out, const std::string& field, const std::string& a, const std::string& b) {
  if (a != b) out.push_back({field, false, {a}, {b}});
}

void compare_list(std::vector<FieldChange>& out, const std::string& field, const std::vector<std::string>& a,
                  const std::vector<std::string>& b) {
  auto sa = sorted(a), sb = sorted(b);
  if (sa != sb) out.push_back({field, true, sa, sb});
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<FieldChange> field_changes(const Lock& a, const Lock& b) {
  std::vector<FieldChange> f;
  compare(f, "operator.version", a.operator_version, b.operator_version);
  compare(f, "chart.name", a.chart.name, b.chart.name);
  compare(f, "chart.version", a.chart.version, b.chart.version);
  compare(f, "chart.appVersion", a.chart.app_version, b.chart.app_version);
  compare(f, "chart.sha256", a.chart.sha256, b.chart.sha256);
  compare(f, "driver.mode", a.driver.mode, b.driver.mode);
  compare(f, "driver.version", a.driver.version, b.driver.version);
  compare(f, "driver.branch", a.driver.branch, b.driver.branch);
  compare(f, "driver.kernelModuleType", a.driver.kernel_module_type, b.driver.kernel_module_type);
  compare(f, "driver.usePrecompiled", a.driver.use_precompiled ? "true" : "false", b.driver.use_precompiled ? "true" : "false");
  compare_list(f, "target.gpus", a.gpus, b.gpus);
  compare(f, "target.os", a.os, b.os);
  compare(f, "target.osTag", a.os_tag, b.os_tag);
  compare_list(f, "target.kernels", a.kernels, b.kernels);
  compare_list(f, "target.platforms", a.platforms, b.platforms);
  compare_list(f, "target.workloads", a.workloads, b.workloads);
  auto repo = [](const Lock& l, bool fingerprint) {
    return l.package_repo ? (fingerprint ? l.package_repo->fingerprint : l.package_repo->format) : std::string();
  };
  compare(f, "packageRepo.format", repo(a, false), repo(b, false));
  compare(f, "packageRepo.fingerprint", repo(a, true), repo(b, true));
  return f;
}

std::map<std::string, std::vector<std::string>> refs_by_component(const Lock& lock) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& i : lock.images)
    for (const auto& c : i.components) out[c].push_back(i.source);
  for (auto& [c, refs] : out) std::sort(refs.begin(), refs.end());
  return out;
}

std::vector<std::string> union_components(const LockImage& a, const LockImage& b) {
  std::set<std::string> s(a.components.begin(), a.components.end());
  s.insert(b.components.begin(), b.components.end());
  return {s.begin(), s.end()};
}

void match_images(const Lock& a, const Lock& b, LockDiff& d) {
  std::map<std::string, const LockImage*> old_by_source, new_by_source;
  for (const auto& i : a.images) old_by_source[i.source] = &i;
  for (const auto& i : b.images) new_by_source[i.source] = &i;
  // Left after exact matches, by repository.
  std::map<std::string, std::vector<const LockImage*>> old_left, new_left;
  for (const auto& [source, img] : old_by_source) {
    auto it = new_by_source.find(source);
    if (it == new_by_source.end()) {
      old_left[repository_of(source)].push_back(img);
    } else if (img->digest != it->second->digest) {
      d.changed.push_back({repository_of(source), union_components(*img, *it->second), source, img->digest, source,
                           it->second->digest});
    }
  }
  for (const auto& [source, img] : new_by_source)
    if (!old_by_source.count(source)) new_left[repository_of(source)].push_back(img);
  for (auto& [repo, olds] : old_left) {
    auto it = new_left.find(repo);
    if (olds.size() == 1 && it != new_left.end() && it->second.size() == 1) {
      const LockImage& o = *olds.front();
      const LockImage& n = *it->second.front();
      d.changed.push_back({repo, union_components(o, n), o.source, o.digest, n.source, n.digest});
      new_left.erase(it);
      continue;
    }
    for (const auto* o : olds) d.removed.push_back(*o);
  }
  for (const auto& [repo, news] : new_left)
    for (const auto* n : news) d.added.push_back(*n);
  auto by_source = [](const LockImage& x, const LockImage& y) { return x.source < y.source; };
  std::sort(d.added.begin(), d.added.end(), by_source);
  std::sort(d.removed.begin(), d.removed.end(), by_source);
  std::sort(d.changed.begin(), d.changed.end(), [](const ImageChange& x, const ImageChange& y) {
    return std::tie(x.repository, x.new_source) < std::tie(y.repository, y.new_source);
  });
}

ShipBytes ship_bytes(const Lock& a, const LockDiff& d, const Lock& b, const ImageBlobs& blobs, const std::string& sized_by) {
  ShipBytes s;
  s.sized_by = blobs ? sized_by : "";
  std::set<std::string> to_ship;
  for (const auto& i : d.added) to_ship.insert(i.source);
  for (const auto& c : d.changed) to_ship.insert(c.new_source);
  std::set<std::string> have;
  if (blobs) {
    for (const auto& i : a.images) {
      auto got = blobs(i);
      if (!got) {
        ++s.old_unsized;
        continue;
      }
      for (const auto& [digest, size] : *got) have.insert(digest);
    }
  }
  std::map<std::string, std::uint64_t> shipped;  // blob -> size, each counted once
  s.complete = true;
  for (const auto& i : b.images) {
    if (!to_ship.count(i.source)) continue;
    ShipImage si{i.source, std::nullopt};
    auto got = blobs ? blobs(i) : std::nullopt;
    if (got) {
      std::uint64_t bytes = 0;
      for (const auto& [digest, size] : *got) {
        if (have.count(digest)) continue;
        bytes += size;
        shipped.emplace(digest, size);
      }
      si.bytes = bytes;
      s.any_sized = true;
    } else {
      s.complete = false;
    }
    s.images.push_back(std::move(si));
  }
  for (const auto& [digest, size] : shipped) s.bytes += size;
  std::sort(s.images.begin(), s.images.end(), [](const ShipImage& x, const ShipImage& y) { return x.source < y.source; });
  return s;
}

std::string line_value(const FieldChange& f) {
  if (!f.list) return (f.old_values[0].empty() ? "(none)" : f.old_values[0]) + " -> " + (f.new_values[0].empty() ? "(none)" : f.new_values[0]);
  std::vector<std::string> parts;
  for (const auto& x : minus(f.new_values, f.old_values)) parts.push_back("+" + x);
  for (const auto& x : minus(f.old_values, f.new_values)) parts.push_back("-" + x);
  return join(parts, " ");
}

// A component's images as a reviewer reads them: tags when every image on
// both sides is in one repository, else whole references.
std::string refs_words(const std::vector<std::string>& refs, bool tags_only) {
  if (refs.empty()) return "(none)";
  std::vector<std::string> words;
  for (const auto& r : refs) words.push_back(tags_only ? tag_of(r) : r);
  return join(words, ", ");
}

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

std::string short_digest(const std::string& digest) {
  // sha256:<first 12 hex>: enough to tell two apart in a review
  return digest.empty() ? "(none)" : digest.substr(0, std::min<size_t>(digest.size(), 19));
}

json image_json(const LockImage& i) { return {{"source", i.source}, {"digest", i.digest}, {"components", i.components}}; }

}  // namespace

LockDiff diff_locks(const Lock& old_lock, const Lock& new_lock, const ImageBlobs& blobs, const std::string& sized_by) {
  LockDiff d;
  d.fields = field_changes(old_lock, new_lock);
  auto oc = refs_by_component(old_lock), nc = refs_by_component(new_lock);
  std::set<std::string> names;
  for (const auto& [c, r] : oc) names.insert(c);
  for (const auto& [c, r] : nc) names.insert(c);
  for (const auto& c : names) {
    auto o = oc.count(c) ? oc[c] : std::vector<std::string>{};
    auto n = nc.count(c) ? nc[c] : std::vector<std::string>{};
    if (o != n) d.components.push_back({c, o, n});
  }
  match_images(old_lock, new_lock, d);
  d.ship = ship_bytes(old_lock, d, new_lock, blobs, sized_by);
  return d;
}

std::string lock_diff_text(const LockDiff& d, const Lock& a, const Lock& b) {
  std::string out = "gpubundle diff " + d.old_file + " " + d.new_file + "\n";
  out += "  old: " + a.recipe_name + ", GPU Operator " + a.operator_version + "\n";
  out += "  new: " + b.recipe_name + ", GPU Operator " + b.operator_version + "\n";
  if (!d.differs()) return out + "\nno differences\n";
  if (!d.fields.empty()) {
    out += "\nsettings:\n";
    for (const auto& f : d.fields) out += "  " + pad(f.field, 26) + line_value(f) + "\n";
  }
  if (!d.components.empty()) {
    out += "\ncomponents:\n";
    for (const auto& c : d.components) {
      std::set<std::string> repos;
      for (const auto& r : c.old_refs) repos.insert(repository_of(r));
      for (const auto& r : c.new_refs) repos.insert(repository_of(r));
      bool tags = repos.size() == 1;
      out += "  " + pad(c.component, 26) + (tags ? *repos.begin() + " " : "") + refs_words(c.old_refs, tags) + " -> " +
             refs_words(c.new_refs, tags) + "\n";
    }
  }
  if (!d.added.empty() || !d.removed.empty() || !d.changed.empty()) {
    out += "\nimages: " + std::to_string(d.added.size()) + " added, " + std::to_string(d.removed.size()) + " removed, " +
           std::to_string(d.changed.size()) + " changed\n";
    for (const auto& i : d.added) out += "  + " + i.source + "\n";
    for (const auto& i : d.removed) out += "  - " + i.source + "\n";
    for (const auto& c : d.changed) {
      if (c.old_source != c.new_source)
        out += "  ~ " + c.repository + " " + tag_of(c.old_source) + " -> " + tag_of(c.new_source) + "\n";
      else
        out += "  ~ " + c.new_source + " digest " + short_digest(c.old_digest) + " -> " + short_digest(c.new_digest) + "\n";
    }
  }
  const ShipBytes& s = d.ship;
  out += "\nbytes to ship: ";
  if (s.images.empty()) {
    out += "none (no new images)\n";
  } else if (!s.any_sized) {
    out += "unknown for " + std::to_string(s.images.size()) + " images" +
           (s.sized_by.empty() ? " (sizes come from a store: gpubundle diff --store DIR)" : " (none is in " + s.sized_by + ")") + "\n";
  } else {
    out += (s.complete ? "" : "at least ") + human_bytes(s.bytes) + " (" + std::to_string(s.bytes) + " bytes) for " +
           std::to_string(s.images.size()) + " images, sized by " + s.sized_by + "\n";
    for (const auto& i : s.images)
      if (!i.bytes) out += "  unknown: " + i.source + " (not in " + s.sized_by + " at the lock's digest)\n";
    if (s.old_unsized > 0)
      out += "  " + std::to_string(s.old_unsized) + " images of the old lock are not in " + s.sized_by +
             ": blobs they share with the new images count as shipped\n";
  }
  return out;
}

std::string lock_diff_json(const LockDiff& d, const Lock& a, const Lock& b) {
  json j;
  j["schemaVersion"] = 1;
  j["old"] = {{"file", d.old_file}, {"recipe", a.recipe_name}, {"operator", a.operator_version}};
  j["new"] = {{"file", d.new_file}, {"recipe", b.recipe_name}, {"operator", b.operator_version}};
  j["differs"] = d.differs();
  json fields = json::object();
  for (const auto& f : d.fields) {
    if (f.list) {
      fields[f.field] = {{"old", f.old_values}, {"new", f.new_values}, {"added", minus(f.new_values, f.old_values)},
                         {"removed", minus(f.old_values, f.new_values)}};
    } else if (f.field == "driver.usePrecompiled") {
      fields[f.field] = {{"old", f.old_values[0] == "true"}, {"new", f.new_values[0] == "true"}};
    } else {
      fields[f.field] = {{"old", f.old_values[0]}, {"new", f.new_values[0]}};
    }
  }
  j["fields"] = fields;
  json comps = json::object();
  for (const auto& c : d.components) comps[c.component] = {{"old", c.old_refs}, {"new", c.new_refs}};
  j["components"] = comps;
  json added = json::array(), removed = json::array(), changed = json::array();
  for (const auto& i : d.added) added.push_back(image_json(i));
  for (const auto& i : d.removed) removed.push_back(image_json(i));
  for (const auto& c : d.changed)
    changed.push_back({{"repository", c.repository},
                       {"components", c.components},
                       {"old", {{"source", c.old_source}, {"digest", c.old_digest}}},
                       {"new", {{"source", c.new_source}, {"digest", c.new_digest}}}});
  j["images"] = {{"added", added}, {"removed", removed}, {"changed", changed}};
  json ship_images = json::array();
  for (const auto& i : d.ship.images) ship_images.push_back({{"source", i.source}, {"bytes", i.bytes ? json(*i.bytes) : json(nullptr)}});
  j["ship"] = {{"sizedBy", d.ship.sized_by},
               {"bytes", d.ship.any_sized ? json(d.ship.bytes) : json(nullptr)},
               {"complete", d.ship.complete},
               {"images", ship_images},
               {"oldUnsized", d.ship.old_unsized}};
  return j.dump(2) + "\n";
}

}  // namespace gb::recipes
