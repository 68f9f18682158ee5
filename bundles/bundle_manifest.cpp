#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "bundles/bundle.hpp"
#include "kit/kit.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "recipes/reference.hpp"
#include "mirror/oci.hpp"
#include "signing/digest.hpp"

namespace gb::bundles {

using nlohmann::json;

std::string manifest_to_json(const VolumeManifest& m) {
  json j;
  j["format"] = "gpubundle-bundle";
  j["formatVersion"] = m.format_version;
  j["tool"] = m.tool;
  j["bundleId"] = m.bundle_id;
  j["created"] = m.created.empty() ? json(nullptr) : json(m.created);
  j["volume"] = {{"index", m.volume}, {"count", m.volumes}};
  j["delta"] = m.delta ? json{{"base", m.delta_base}, {"omitted", m.omitted}} : json(nullptr);
  j["lock"] = m.lock_json.empty() ? json::object() : json::parse(m.lock_json);
  json images = json::array();
  for (const auto& i : m.images) {
    images.push_back({{"ref", i.ref}, {"mediaType", i.media_type}, {"digest", i.digest}, {"platforms", i.platforms}, {"blobs", i.blobs}});
    if (!i.upstream_digest.empty()) images.back()["upstreamDigest"] = i.upstream_digest;
  }
  j["images"] = images;
  json files = json::array();
  for (const auto& f : m.files) {
    files.push_back({{"path", f.path},
                     {"size", f.size},
                     {"sha256", f.sha256},
                     {"volume", f.volume},
                     {"blob", f.blob.empty() ? json(nullptr) : json(f.blob)},
                     {"encoding", f.encoding.empty() ? json(nullptr) : json(f.encoding)},
                     {"part", f.parts ? json::array({f.part, f.parts}) : json(nullptr)}});
  }
  j["files"] = files;
  return j.dump(1) + "\n";
}

namespace {

// Why a manifest's entry name may not be in a bundle, or "" when it may
// (the tar walk applies the same rules to the names it reads).
std::string path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path.size() > k_max_bundle_path) return "is longer than " + std::to_string(k_max_bundle_path) + " bytes";
  if (path.front() == '/') return "is absolute";
  if (path.find('\\') != std::string::npos || path.find('\0') != std::string::npos) return "has a backslash or NUL";
  for (const auto& part : split(path, '/')) {
    if (part == "..") return "has a '..' component";
    if (part.empty() || part == ".") return "has an empty or '.' component";
  }
  if (path == k_volume_manifest || path == k_volume_signature) return "is a manifest name";
  return "";
}

bool is_hex(std::string_view s, std::size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A word the install kit can use as a file name and inside its scripts.
bool is_safe_word(std::string_view s) {
  return !s.empty() && s.size() <= 255 && std::isalnum(static_cast<unsigned char>(s.front())) &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._+-", c); });
}

// What import and node-image export take from the lock: it parses, its chart
// names a plain file, its images are references, and it holds every image.
Result<void> check_lock(const VolumeManifest& m, const std::string& label) {
  auto lock = recipes::parse_lock(m.lock_json, label + ": lock");
  if (!lock) return op_error(lock.error().message);
  if (!is_safe_word(kit::kit_chart_file(*lock)))
    return op_error(label + ": lock chart '" + lock->chart.name.substr(0, 80) + "' '" + lock->chart.version.substr(0, 80) +
                    "': name or version holds characters a file name cannot");
  std::set<std::string> sources;
  for (const auto& i : lock->images) {
    if (auto ref = recipes::Reference::parse(i.source); !ref) return op_error(label + ": lock image " + i.source.substr(0, 200) + ": " + ref.error().message);
    sources.insert(i.source);
  }
  for (const auto& img : m.images)
    if (!sources.count(img.ref)) return op_error(label + ": image " + img.ref.substr(0, 200) + " is not in the bundle's lock");
  if (auto r = kit::kit_recipe(*lock); !r) return op_error(label + ": lock: " + r.error().message);
  return {};
}

// An integer field in [lo, hi]: json's get<int> would wrap 2^40 to 0.
std::int64_t int_in(const json& v, std::int64_t lo, std::int64_t hi, const std::string& what) {
  if (!v.is_number_integer()) throw Error(ErrorKind::Failed, what + " is not an integer");
  bool in = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi) && static_cast<std::int64_t>(v.get<std::uint64_t>()) >= lo
                                    : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
  if (!in)
    throw Error(ErrorKind::Failed, what + " " + v.dump() + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return v.get<std::int64_t>();
}

std::string digest_field(const json& v, const std::string& what) {
  std::string d = v.get<std::string>();
  if (!signing::is_sha256_digest(d)) throw Error(ErrorKind::Failed, what + " '" + d.substr(0, 80) + "' is not a sha256 digest");
  return d;
}

const json& list_field(const json& v, const std::string& what) {
  if (!v.is_array()) throw Error(ErrorKind::Failed, what + " is not a list");
  if (v.size() > k_max_bundle_entries)
    throw Error(ErrorKind::Failed, what + " has " + std::to_string(v.size()) + " items, more than " + std::to_string(k_max_bundle_entries));
  return v;
}

// Part numbering: every entry once, a blob stored whole or in parts 1..N
// each once, all parts agreeing on N, encoding and name.
Result<void> check_layout(const VolumeManifest& m, const std::string& label) {
  std::set<std::string> paths;
  std::map<std::string, std::string> whole;  // blob -> its one unsplit entry
  struct Pieces {
    int parts = 0;
    std::string encoding, base;
    std::set<int> seen;
  };
  std::map<std::string, Pieces> split_blobs;  // blob (or path, for non-blob entries) -> its parts
  for (const auto& f : m.files) {
    if (!paths.insert(f.path).second) return op_error(label + ": file " + f.path + " is listed twice");
    if (f.parts == 0) {
      if (!f.blob.empty() && !whole.emplace(f.blob, f.path).second)
        return op_error(label + ": blob " + f.blob + " is stored twice (" + whole[f.blob] + ", " + f.path + ")");
      continue;
    }
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".part%04d", f.part);
    if (!ends_with(f.path, suffix)) return op_error(label + ": file " + f.path + " is part " + std::to_string(f.part) + " but not named " + suffix);
    std::string base = f.path.substr(0, f.path.size() - std::strlen(suffix));
    auto& p = split_blobs[f.blob.empty() ? base : f.blob];
    if (p.parts == 0) p = {f.parts, f.encoding, base, {}};
    if (p.parts != f.parts || p.encoding != f.encoding || p.base != base)
      return op_error(label + ": file " + f.path + " disagrees with the other parts of " + p.base + " (count, encoding or name)");
    if (!p.seen.insert(f.part).second) return op_error(label + ": part " + std::to_string(f.part) + " of " + p.base + " is listed twice");
  }
  for (const auto& [key, p] : split_blobs) {
    if (static_cast<int>(p.seen.size()) != p.parts)
      return op_error(label + ": " + p.base + " has " + std::to_string(p.seen.size()) + " of its " + std::to_string(p.parts) + " parts listed");
    if (whole.count(key)) return op_error(label + ": blob " + key + " is stored whole and in parts");
  }
  return {};
}

}  // namespace

Result<VolumeManifest> parse_volume_manifest(std::string_view text, const std::string& label) {
  VolumeManifest m;
  if (text.size() > k_max_manifest_bytes) return op_error(label + ": manifest larger than " + std::to_string(k_max_manifest_bytes) + " bytes");
  try {
    json j = json::parse(text);
    if (!j.is_object() || j.value("format", "") != "gpubundle-bundle") return op_error(label + ": not a gpubundle volume manifest");
    m.format_version = static_cast<int>(int_in(j.at("formatVersion"), 1, INT32_MAX, "formatVersion"));
    if (m.format_version > k_bundle_format_version)
      return op_error(label + ": bundle format " + std::to_string(m.format_version) + " is newer than this gpubundle reads (" +
                      std::to_string(k_bundle_format_version) + "); upgrade gpubundle");
    m.tool = j.at("tool").get<std::string>();
    m.bundle_id = j.at("bundleId").get<std::string>();
    if (!is_hex(m.bundle_id, 16))
      return op_error(label + ": bundleId is not 16 hex digits");
    if (!j.at("created").is_null()) m.created = j.at("created").get<std::string>();
    m.volumes = static_cast<int>(int_in(j.at("volume").at("count"), 1, k_max_volumes, "volume.count"));
    m.volume = static_cast<int>(int_in(j.at("volume").at("index"), 1, m.volumes, "volume.index"));
    if (!j.at("delta").is_null()) {
      m.delta = true;
      m.delta_base = j.at("delta").at("base").get<std::string>();
      for (const auto& d : list_field(j.at("delta").at("omitted"), "delta.omitted")) m.omitted.push_back(digest_field(d, "delta.omitted[]"));
    }
    if (!j.at("lock").is_object()) return op_error(label + ": lock is not an object");
    m.lock_json = j.at("lock").dump();
    for (const auto& i : list_field(j.at("images"), "images")) {
      BundleImage img{i.at("ref").get<std::string>(), i.at("mediaType").get<std::string>(), digest_field(i.at("digest"), "images[].digest"), {}, {}, {}};
      if (!mirror::oci::is_index(img.media_type) && !mirror::oci::is_manifest(img.media_type))
        return op_error(label + ": image " + img.ref + ": mediaType '" + img.media_type + "' is not a manifest or index type");
      for (const auto& p : list_field(i.at("platforms"), "images[].platforms")) img.platforms.push_back(p.get<std::string>());
      for (const auto& b : list_field(i.at("blobs"), "images[].blobs")) img.blobs.push_back(digest_field(b, "image " + img.ref + " blob"));
      if (i.contains("upstreamDigest")) {
        img.upstream_digest = digest_field(i.at("upstreamDigest"), "image " + img.ref + " upstreamDigest");
        if (img.upstream_digest == img.digest || !mirror::oci::is_index(img.media_type))
          return op_error(label + ": image " + img.ref + ": upstreamDigest is only for an index the bundle filtered");
        if (std::find(img.blobs.begin(), img.blobs.end(), img.upstream_digest) == img.blobs.end())
          return op_error(label + ": image " + img.ref + ": upstreamDigest " + img.upstream_digest + " is not among its blobs");
      }
      m.images.push_back(std::move(img));
    }
    for (const auto& f : list_field(j.at("files"), "files")) {
      BundleFile bf;
      bf.path = f.at("path").get<std::string>();
      if (auto why = path_problem(bf.path); !why.empty()) return op_error(label + ": file name '" + bf.path.substr(0, 200) + "' " + why);
      std::string what = "file " + bf.path;
      if (!f.at("size").is_number_unsigned()) return op_error(label + ": " + what + ": size is not a count of bytes");
      bf.size = f.at("size").get<std::uint64_t>();
      if (starts_with(bf.path, "charts/") && bf.size > k_max_chart_bytes)
        return op_error(label + ": " + what + " is larger than the " + std::to_string(k_max_chart_bytes) + " bytes a chart may have");
      bf.sha256 = f.at("sha256").get<std::string>();
      if (!is_hex(bf.sha256, 64)) return op_error(label + ": " + what + ": sha256 is not 64 lowercase hex digits");
      bf.volume = static_cast<int>(int_in(f.at("volume"), 1, m.volumes, what + ": volume"));
      if (!f.at("blob").is_null()) bf.blob = digest_field(f.at("blob"), what + ": blob");
      if (!f.at("encoding").is_null()) {
        bf.encoding = f.at("encoding").get<std::string>();
        if (bf.encoding != "zstd") return op_error(label + ": " + what + ": unknown encoding '" + bf.encoding.substr(0, 80) + "'");
        if (bf.blob.empty()) return op_error(label + ": " + what + ": only blobs may be zstd-encoded");
      }
      if (!f.at("part").is_null()) {
        const json& part = f.at("part");
        if (!part.is_array() || part.size() != 2) return op_error(label + ": " + what + ": part is not [n, of]");
        bf.parts = static_cast<int>(int_in(part.at(1), 1, m.volumes, what + ": part count"));
        bf.part = static_cast<int>(int_in(part.at(0), 1, bf.parts, what + ": part number"));
      }
      m.files.push_back(std::move(bf));
    }
  } catch (const json::exception& e) {
    return op_error(label + ": malformed volume manifest: " + e.what());
  } catch (const Error& e) {
    return op_error(label + ": volume manifest: " + e.what());
  }
  if (auto r = check_layout(m, label); !r) return r.error();
  if (auto r = check_lock(m, label); !r) return r.error();
  return m;
}

Result<void> apply_source_date_epoch(CreateOptions& o) {
  auto sde = source_date_epoch();
  if (!sde) return sde.error();
  if (!*sde) return {};
  o.mtime = **sde;
  o.created = rfc3339_utc(o.mtime);
  return {};
}

std::filesystem::path volume_path(const std::filesystem::path& first, int n, int count) {
  if (count <= 1) return first;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, ".%03d", n);
  return first.string() + suffix;
}

}  // namespace gb::bundles
