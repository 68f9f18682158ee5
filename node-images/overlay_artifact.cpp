#include "node-images/overlay_artifact.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zstd.h>

#include "bundles/bundle.hpp"
#include "bundles/bundle_blobs.hpp"
#include "common/files.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "common/zstd_raii.hpp"
#include "mirror/oci.hpp"
#include "mirror/store.hpp"
#include "node-images/layer.hpp"
#include "recipes/lock.hpp"
#include "signing/digest.hpp"

namespace gb::node_images {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* k_uncompressed = "io.gpubundle.uncompressed.sha256";
constexpr const char* k_overlay_type = "application/vnd.oci.image.layer.v1.tar+zstd";
constexpr int k_zstd_level = 3;

struct FileBlob {
  std::string digest;
  std::uint64_t size = 0;
  std::string plain_sha256;  // of the input, for a compressed blob
};

// Deterministic zstd of `in` into `out` (one thread, fixed level, size in the frame header).
Result<FileBlob> zstd_file(const fs::path& in_path, const fs::path& out_path) {
  std::error_code ec;
  auto total = fs::file_size(in_path, ec);
  if (ec) return op_error(in_path.string() + ": " + ec.message());
  std::ifstream in(in_path, std::ios::binary);
  if (!in) return op_error(in_path.string() + ": cannot open");
  auto out = AtomicFile::create(out_path);
  if (!out) return out.error();
  gb::detail::ZstdCCtx cc(ZSTD_createCCtx());
  ZSTD_CCtx_setParameter(cc.get(), ZSTD_c_compressionLevel, k_zstd_level);
  ZSTD_CCtx_setParameter(cc.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setPledgedSrcSize(cc.get(), total);
  signing::Sha256 h, plain;
  std::uint64_t written = 0;
  std::string ibuf(ZSTD_CStreamInSize(), '\0'), obuf(ZSTD_CStreamOutSize(), '\0');
  auto drain = [&](ZSTD_inBuffer& ib, ZSTD_EndDirective mode) -> Result<bool> {
    ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
    size_t rc = ZSTD_compressStream2(cc.get(), &ob, &ib, mode);
    if (ZSTD_isError(rc)) return op_error(in_path.string() + ": zstd: " + ZSTD_getErrorName(rc));
    std::string_view chunk(obuf.data(), ob.pos);
    h.update(chunk);
    written += chunk.size();
    if (auto r = out->write(chunk); !r) return r.error();
    return rc == 0;
  };
  while (in) {
    in.read(ibuf.data(), static_cast<std::streamsize>(ibuf.size()));
    plain.update(ibuf.data(), static_cast<size_t>(in.gcount()));
    ZSTD_inBuffer ib{ibuf.data(), static_cast<size_t>(in.gcount()), 0};
    while (ib.pos < ib.size)
      if (auto r = drain(ib, ZSTD_e_continue); !r) return r.error();
  }
  if (in.bad()) return op_error(in_path.string() + ": read error");
  ZSTD_inBuffer none{nullptr, 0, 0};
  for (;;) {
    auto r = drain(none, ZSTD_e_end);
    if (!r) return r.error();
    if (*r) break;
  }
  if (auto r = out->commit(); !r) return r.error();
  return FileBlob{"sha256:" + h.hex(), written, plain.hex()};
}

// Where export reads blobs from: the store or a verified bundle.
struct BlobReader {
  std::function<Result<std::string>(const std::string&)> content;
  // Streams the checked content of a blob; fails at the end when it does not match.
  std::function<Result<void>(const std::string&, const std::function<Result<void>(std::string_view)>&)> stream;
};

struct Candidate {
  std::string ref;
  std::string digest;
  std::string media_type;
};

bool is_overlay(const std::string& manifest) {
  json m = json::parse(manifest, nullptr, false);
  return m.is_object() && m.value("artifactType", "") == k_node_overlay_artifact_type;
}

// A layer title may only name a file below the output folder.
Result<void> check_title(const std::string& title, const std::string& ref) {
  bool ok = !title.empty() && title.front() != '/' && title.find('\\') == std::string::npos;
  for (const auto& part : split(title, '/')) ok = ok && !part.empty() && part != "." && part != "..";
  if (!ok) return input_error(ref + ": layer title '" + title + "' is not a plain relative path");
  return {};
}

// The output folder, absolute; it must be new or empty, because install.sh
// would install whatever packages another export left there.
Result<fs::path> export_target(const fs::path& out) {
  fs::path o = fs::absolute(out).lexically_normal();
  if (o.filename().empty()) o = o.parent_path();
  std::error_code ec;
  if (fs::exists(o, ec) && (!fs::is_directory(o, ec) || !fs::is_empty(o, ec)))
    return input_error(out.string() + ": not an empty folder; export into a new one (install.sh installs every package it finds there)");
  return o;
}

Result<ExportedOverlay> export_chosen(const BlobReader& reader, const Candidate& chosen, const std::string& manifest_text,
                                      const fs::path& out) {
  json man = json::parse(manifest_text, nullptr, false);
  if (!man.is_object() || !man.contains("layers") || !man["layers"].is_array())
    return input_error(chosen.ref + ": the artifact manifest has no layers list");

  // Everything goes to a staging folder next to `out`, renamed into place
  // only when every file checked out.
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  if (ec) return op_error(out.parent_path().string() + ": " + ec.message());
  ScratchDir staging(out.parent_path() / ("." + out.filename().string() + ".export." + std::to_string(::getpid())));
  fs::remove_all(staging.path(), ec);
  fs::create_directories(staging.path(), ec);
  if (ec) return op_error(staging.path().string() + ": " + ec.message());

  ExportedOverlay result{chosen.ref, chosen.digest, {}};
  std::string overlay_sha;    // of the decompressed overlay.tar
  std::string manifest_json;  // the artifact's manifest.json, checked below
  for (const auto& layer : man["layers"]) {
    const json& notes = layer.is_object() && layer.contains("annotations") ? layer["annotations"] : json::object();
    auto text = [](const json& o, const char* key) {
      return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
    };
    std::string digest = text(layer, "digest");
    std::string title = text(notes, mirror::oci::k_oci_title);
    if (auto r = check_title(title, chosen.ref); !r) return r.error();
    bool overlay = text(layer, "mediaType") == k_overlay_type;
    if (overlay && title != "overlay.tar.zst")
      return input_error(chosen.ref + ": the overlay layer is titled '" + title + "', not overlay.tar.zst");
    std::string name = overlay ? "overlay.tar" : title;
    if (std::find(result.files.begin(), result.files.end(), name) != result.files.end())
      return input_error(chosen.ref + ": two layers would both be written as " + name);
    fs::path dst = staging.path() / name;
    fs::create_directories(dst.parent_path(), ec);
    if (ec) return op_error(dst.parent_path().string() + ": " + ec.message());
    auto file = AtomicFile::create(dst, name == "install.sh" ? 0755 : 0644);
    if (!file) return file.error();
    signing::Sha256 plain;
    gb::detail::ZstdDCtx dc;
    if (overlay) dc.reset(ZSTD_createDCtx());
    std::string dbuf(ZSTD_DStreamOutSize(), '\0');
    auto r = reader.stream(digest, [&](std::string_view chunk) -> Result<void> {
      if (name == "manifest.json") manifest_json.append(chunk);
      if (!dc) return file->write(chunk);
      ZSTD_inBuffer ib{chunk.data(), chunk.size(), 0};
      while (ib.pos < ib.size) {
        ZSTD_outBuffer ob{dbuf.data(), dbuf.size(), 0};
        size_t rc = ZSTD_decompressStream(dc.get(), &ob, &ib);
        if (ZSTD_isError(rc)) return op_error(chosen.ref + ": " + title + ": zstd: " + ZSTD_getErrorName(rc));
        std::string_view part(dbuf.data(), ob.pos);
        plain.update(part);
        if (auto w = file->write(part); !w) return w;
      }
      return {};
    });
    if (!r) return op_error(chosen.ref + ": " + title + ": " + r.error().message);
    if (overlay) {
      overlay_sha = plain.hex();
      std::string want = text(notes, k_uncompressed);
      if (overlay_sha != want)
        return op_error(chosen.ref + ": " + name + " decompresses to sha256 " + overlay_sha + ", the artifact says " + want);
    }
    if (auto c = file->commit(); !c) return c.error();
    result.files.push_back(name);
  }
  // manifest.json names the overlay it describes: they must agree.
  if (std::find(result.files.begin(), result.files.end(), "manifest.json") == result.files.end())
    return input_error(chosen.ref + ": the artifact has no manifest.json");
  json m = json::parse(manifest_json, nullptr, false);
  std::string want = m.is_object() && m.contains("overlay") && m["overlay"].is_object() && m["overlay"].contains("sha256") &&
                             m["overlay"]["sha256"].is_string()
                         ? m["overlay"]["sha256"].get<std::string>()
                         : std::string();
  if (overlay_sha.empty() || want != overlay_sha)
    return op_error(chosen.ref + ": overlay.tar (sha256 " + overlay_sha + ") is not the one manifest.json lists (" + want + ")");

  fs::remove(out, ec);  // an empty folder, checked by export_target
  fs::rename(staging.path(), out, ec);
  if (ec) return op_error(out.string() + ": " + ec.message());
  if (auto r = fsync_dir(out.parent_path()); !r) return r.error();
  std::sort(result.files.begin(), result.files.end());
  return result;
}

Result<ExportedOverlay> export_overlay(const BlobReader& reader, const std::vector<Candidate>& candidates, const std::string& ref,
                                       const std::string& where, const fs::path& out) {
  std::vector<Candidate> overlays;
  std::string manifest_text;
  for (const auto& c : candidates) {
    if (!ref.empty() && c.ref != ref) continue;
    std::optional<std::string> text;
    if (c.media_type == mirror::oci::k_oci_manifest) {
      auto got = reader.content(c.digest);
      if (!got) return got.error();
      text = std::move(got.value());
    }
    if (!text || !is_overlay(*text)) {
      if (!ref.empty()) return input_error(ref + " in " + where + " is not a node overlay (artifactType " + k_node_overlay_artifact_type + ")");
      continue;
    }
    overlays.push_back(c);
    manifest_text = *text;
  }
  if (overlays.empty())
    return input_error(ref.empty() ? where + " holds no node overlay (make one with `gpubundle node-image bake`)"
                                   : ref + ": no such node overlay in " + where);
  if (overlays.size() > 1) {
    std::vector<std::string> refs;
    for (const auto& c : overlays) refs.push_back(c.ref);
    return input_error(where + " holds " + std::to_string(refs.size()) + " node overlays; name one: " + join(refs, ", "));
  }
  return export_chosen(reader, overlays.front(), manifest_text, out);
}

Result<StoredOverlay> store_folder(mirror::Store& store, const fs::path& dir, const std::string& ref) {
  auto epoch = source_date_epoch();
  if (!epoch) return epoch.error();
  auto meta_text = read_file(dir / "manifest.json");
  if (!meta_text) return meta_text.error();
  json meta = json::parse(*meta_text, nullptr, false);
  auto is_obj = [&](const char* k) { return meta.contains(k) && meta[k].is_object(); };
  if (!meta.is_object() || !is_obj("driver") || !is_obj("overlay") || !meta["overlay"].value("sha256", json()).is_string() ||
      (meta.contains("packages") && !meta["packages"].is_array()) || (meta.contains("kernels") && !meta["kernels"].is_array()))
    return input_error((dir / "manifest.json").string() + ": not a node overlay manifest (node-images/bake.hpp)");

  ScratchDir scratch(dir / ".artifact");
  std::error_code ec;
  fs::create_directories(scratch.path(), ec);
  if (ec) return op_error(scratch.path().string() + ": " + ec.message());

  struct Layer {
    std::string media;
    std::string title;
    fs::path file;
    FileBlob blob;
    std::string uncompressed;
  };
  std::vector<Layer> layers;
  auto zst = zstd_file(dir / "overlay.tar", scratch.path() / "overlay.tar.zst");
  if (!zst) return zst.error();
  if (zst->plain_sha256 != meta["overlay"].value("sha256", ""))
    return input_error((dir / "overlay.tar").string() + " (sha256 " + zst->plain_sha256 + ") is not the overlay manifest.json lists");
  layers.push_back({k_overlay_type, "overlay.tar.zst", scratch.path() / "overlay.tar.zst", *zst, zst->plain_sha256});
  const std::pair<const char*, const char*> files[] = {
      {"install.sh", "application/vnd.gpubundle.node-overlay.install.v1+sh"},
      {"manifest.json", "application/vnd.gpubundle.node-overlay.manifest.v1+json"},
      {"values.yaml", "application/vnd.gpubundle.node-overlay.values.v1+yaml"},
  };
  for (const auto& [name, media] : files) layers.push_back({media, name, dir / name, {}, ""});
  // The packages manifest.json names, each a plain file in packages/.
  for (const auto& p : meta.value("packages", json::array())) {
    std::string name = p.is_string() ? p.get<std::string>() : "";
    fs::path file = dir / "packages" / name;
    if (name.empty() || name.find('/') != std::string::npos || !fs::is_regular_file(fs::symlink_status(file, ec)))
      return input_error((dir / "manifest.json").string() + ": package '" + name + "' is not a file in " + (dir / "packages").string());
    layers.push_back({"application/vnd.gpubundle.package.v1", "packages/" + name, file, {}, ""});
  }

  json man = {{"schemaVersion", 2}, {"mediaType", std::string(mirror::oci::k_oci_manifest)}, {"artifactType", k_node_overlay_artifact_type}};
  const std::string empty = "{}";
  man["config"] = {{"mediaType", mirror::oci::k_oci_empty}, {"digest", signing::sha256_digest(empty)}, {"size", empty.size()}, {"data", "e30="}};
  json jl = json::array();
  for (auto& l : layers) {
    if (l.blob.digest.empty()) {
      auto hex = signing::sha256_file_hex(l.file);
      if (!hex) return hex.error();
      l.blob = FileBlob{"sha256:" + *hex, fs::file_size(l.file, ec), ""};
      if (ec) return op_error(l.file.string() + ": " + ec.message());
    }
    json d = {{"mediaType", l.media}, {"digest", l.blob.digest}, {"size", l.blob.size}};
    d["annotations"] = {{mirror::oci::k_oci_title, l.title}};
    if (!l.uncompressed.empty()) d["annotations"][k_uncompressed] = l.uncompressed;
    jl.push_back(d);
  }
  man["layers"] = jl;
  const auto& drv = meta["driver"];
  std::vector<std::string> kernels;
  for (const auto& k : meta.value("kernels", json::array()))
    if (k.is_string()) kernels.push_back(k.get<std::string>());
  man["annotations"] = {
      {"org.opencontainers.image.created", rfc3339_utc(epoch->value_or(0))},
      {"io.gpubundle.driver.version", drv.value("version", json("")).is_string() ? drv["version"].get<std::string>() : ""},
      {"io.gpubundle.driver.kernels", join(kernels, ",")},
      {"io.gpubundle.driver.signer", is_obj("signer") ? meta["signer"].value("fingerprint", "") : "unsigned"},
      {"io.gpubundle.driver.installer-sha256", is_obj("installer") ? meta["installer"].value("sha256", "") : ""},
  };
  std::string bytes = man.dump();

  // Blobs, then Store::publish(): the manifest, index.json, catalog rows.
  if (auto r = store.put_blob(signing::sha256_digest(empty), empty); !r) return r.error();
  for (const auto& l : layers)
    if (auto r = store.put_blob_file(l.blob.digest, l.blob.size, l.file); !r) return r.error();
  auto manifest = mirror::oci::parse_manifest(std::move(bytes), mirror::oci::k_oci_manifest);
  if (!manifest) return manifest.error();
  mirror::Publication p{ref, std::move(*manifest), {}, {k_node_overlay_platform}, mirror::k_built_here};
  if (auto r = store.publish({p}); !r) return r.error();
  return StoredOverlay{ref, p.top.digest, p.bytes()};
}

}  // namespace

std::string overlay_tag(const std::string& driver_version, const std::string& os_tag) { return driver_version + "-" + os_tag; }

Result<StoredOverlay> store_overlay(mirror::Store& store, const fs::path& dir, const std::string& ref) {
  try {
    return store_folder(store, dir, ref);
  } catch (const json::exception& e) {  // a field of the wrong type
    return input_error((dir / "manifest.json").string() + ": " + e.what());
  }
}

Result<ExportedOverlay> export_overlay_from_store(const mirror::Store& store, const std::string& ref, const fs::path& out) {
  auto target = export_target(out);
  if (!target) return target.error();
  BlobReader reader;
  reader.content = [&store](const std::string& d) -> Result<std::string> {
    auto bytes = store.read_blob(d);
    if (bytes && signing::sha256_digest(*bytes) != d)
      return op_error("blob " + d + " in the store does not match its digest (run `gpubundle store fsck`)");
    return bytes;
  };
  reader.stream = [&store](const std::string& d, const std::function<Result<void>(std::string_view)>& sink) -> Result<void> {
    std::ifstream in(store.blob_path(d), std::ios::binary);
    if (!in) return op_error("blob " + d + " is not in the store");
    signing::Sha256 h;
    std::string buf(1 << 16, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      std::string_view chunk(buf.data(), static_cast<std::size_t>(in.gcount()));
      h.update(chunk);
      if (!chunk.empty())
        if (auto r = sink(chunk); !r) return r;
    }
    if (in.bad()) return op_error("blob " + d + ": read error");
    if ("sha256:" + h.hex() != d) return op_error("blob " + d + " in the store does not match its digest (run `gpubundle store fsck`)");
    return {};
  };
  auto images = store.images();
  if (!images) return images.error();
  std::vector<Candidate> candidates;
  for (const auto& i : *images) candidates.push_back({i.ref, i.digest, i.media_type});
  return export_overlay(reader, candidates, ref, "store " + store.root().string(), *target);
}

Result<ExportedOverlay> export_overlay_from_bundle(const std::vector<fs::path>& volumes, const signing::Keyring* trusted, const std::string& ref,
                                                   const fs::path& out) {
  if (auto r = bundles::require_volume_files(volumes); !r) return r.error();
  auto target = export_target(out);
  if (!target) return target.error();
  bundles::VerifyOptions vo;
  vo.trusted = trusted;
  bundles::VerifyReport verified = bundles::verify_bundle(volumes, vo);
  if (!verified.problems.empty()) return op_error(join(verified.problems, "\n") + "\nexport refused: nothing was written");
  auto blobs = bundles::BundleBlobs::from(verified);
  if (!blobs) return blobs.error();
  BlobReader reader;
  reader.content = [&](const std::string& d) { return blobs->content(d); };
  reader.stream = [&](const std::string& d, const std::function<Result<void>(std::string_view)>& sink) { return blobs->stream_content(d, sink); };
  std::vector<Candidate> candidates;
  for (const auto& i : verified.manifest.images) candidates.push_back({i.ref, i.digest, i.media_type});
  return export_overlay(reader, candidates, ref, "bundle " + volumes.front().string(), *target);
}

}  // namespace gb::node_images
