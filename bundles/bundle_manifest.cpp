#include <cctype>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "bundles/bundle.hpp"
#include "common/strings.hpp"

namespace gb {

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
  for (const auto& i : m.images)
    images.push_back({{"ref", i.ref}, {"mediaType", i.media_type}, {"digest", i.digest}, {"platforms", i.platforms}, {"blobs", i.blobs}});
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

Result<VolumeManifest> parse_volume_manifest(std::string_view text, const std::string& label) {
  VolumeManifest m;
  try {
    json j = json::parse(text);
    if (j.value("format", "") != "gpubundle-bundle") return op_error(label + ": not a gpubundle volume manifest");
    m.format_version = j.at("formatVersion").get<int>();
    if (m.format_version > k_bundle_format_version)
      return op_error(label + ": bundle format " + std::to_string(m.format_version) + " is newer than this gpubundle reads (" +
                      std::to_string(k_bundle_format_version) + "); upgrade gpubundle");
    m.tool = j.at("tool").get<std::string>();
    m.bundle_id = j.at("bundleId").get<std::string>();
    if (!j.at("created").is_null()) m.created = j.at("created").get<std::string>();
    m.volume = j.at("volume").at("index").get<int>();
    m.volumes = j.at("volume").at("count").get<int>();
    if (m.volume < 1 || m.volume > m.volumes) return op_error(label + ": volume " + std::to_string(m.volume) + " of " + std::to_string(m.volumes) + " is impossible");
    if (!j.at("delta").is_null()) {
      m.delta = true;
      m.delta_base = j.at("delta").at("base").get<std::string>();
      m.omitted = j.at("delta").at("omitted").get<std::vector<std::string>>();
    }
    m.lock_json = j.at("lock").dump();
    for (const auto& i : j.at("images")) {
      m.images.push_back({i.at("ref").get<std::string>(), i.at("mediaType").get<std::string>(), i.at("digest").get<std::string>(),
                          i.at("platforms").get<std::vector<std::string>>(), i.at("blobs").get<std::vector<std::string>>()});
    }
    for (const auto& f : j.at("files")) {
      BundleFile bf;
      bf.path = f.at("path").get<std::string>();
      bf.size = f.at("size").get<std::uint64_t>();
      bf.sha256 = f.at("sha256").get<std::string>();
      bf.volume = f.at("volume").get<int>();
      if (!f.at("blob").is_null()) bf.blob = f.at("blob").get<std::string>();
      if (!f.at("encoding").is_null()) bf.encoding = f.at("encoding").get<std::string>();
      if (!f.at("part").is_null()) {
        bf.part = f.at("part").at(0).get<int>();
        bf.parts = f.at("part").at(1).get<int>();
      }
      if (bf.volume < 1 || bf.volume > m.volumes) return op_error(label + ": file " + bf.path + " names volume " + std::to_string(bf.volume));
      m.files.push_back(std::move(bf));
    }
  } catch (const json::exception& e) {
    return op_error(label + ": malformed volume manifest: " + e.what());
  }
  return m;
}

void apply_source_date_epoch(CreateOptions& o) {
  const char* sde = std::getenv("SOURCE_DATE_EPOCH");
  if (!sde || !*sde) return;
  o.mtime = std::strtoll(sde, nullptr, 10);
  std::time_t t = static_cast<std::time_t>(o.mtime);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  o.created = buf;
}

std::filesystem::path volume_path(const std::filesystem::path& first, int n, int count) {
  if (count <= 1) return first;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, ".%03d", n);
  return first.string() + suffix;
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string_view t = trim(text);
  std::uint64_t mult = 1;
  // "4G", "4GB", "4Gi", "4GiB" all mean 4 GiB: media sizes are powers of two here.
  if (ends_with(t, "B") || ends_with(t, "b")) t.remove_suffix(1);
  if (ends_with(t, "i")) t.remove_suffix(1);
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) {
    switch (std::toupper(static_cast<unsigned char>(t.back()))) {
      case 'K': mult = 1ull << 10; break;
      case 'M': mult = 1ull << 20; break;
      case 'G': mult = 1ull << 30; break;
      case 'T': mult = 1ull << 40; break;
      default: return input_error("size '" + std::string(text) + "': unknown unit (use K, M, G or T)");
    }
    t.remove_suffix(1);
  }
  std::uint64_t n = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || n == 0)
    return input_error("size '" + std::string(text) + "' is not a size like 4G, 700M or 1048576");
  return n * mult;
}

}  // namespace gb
