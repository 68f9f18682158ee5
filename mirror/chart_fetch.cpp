#include "mirror/chart_fetch.hpp"

#include <yaml-cpp/yaml.h>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/network.hpp"
#include "recipes/resolver.hpp"
#include "signing/digest.hpp"

namespace gb::mirror {

namespace fs = std::filesystem;

namespace {

bool is_gzip(std::string_view b) { return b.size() > 2 && static_cast<unsigned char>(b[0]) == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b; }

std::string strip_v(const std::string& v) { return !v.empty() && v[0] == 'v' ? v.substr(1) : v; }

Result<std::string> from_helm_repo(const std::string& repo, const std::string& name, const std::string& version, ImageSource& source) {
  std::string base = repo;
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto text = source.get_url(base + "/index.yaml");
  if (!text) return text.error();  // names the URL once, password redacted
  std::string url, digest;
  try {
    YAML::Node idx = YAML::Load(*text);
    YAML::Node entries = idx["entries"][name];
    if (!entries || !entries.IsSequence()) return input_error(base + "/index.yaml: no chart named " + name);
    std::vector<std::string> versions;
    for (const auto& e : entries) {
      auto v = e["version"].as<std::string>("");
      versions.push_back(v);
      if (v == version || strip_v(v) == strip_v(version)) {
        if (!e["urls"] || !e["urls"].IsSequence() || e["urls"].size() == 0)
          return input_error(base + "/index.yaml: " + name + " " + v + " has no urls");
        url = e["urls"][0].as<std::string>();
        digest = e["digest"].as<std::string>("");
        break;
      }
    }
    if (url.empty()) return input_error(base + "/index.yaml: " + name + " has no version " + version);
  } catch (const YAML::Exception& e) {
    return op_error(base + "/index.yaml: not a Helm repository index: " + e.what());
  }
  url = resolve_chart_url(base, url);
  auto bytes = source.get_url(url);
  if (!bytes) return Failure{bytes.error().kind, url + ": " + bytes.error().message};
  if (!digest.empty() && signing::sha256_hex(*bytes) != digest)
    return op_error(url + ": sha256 " + signing::sha256_hex(*bytes) + " differs from the repository index's " + digest);
  return bytes;
}

Result<std::string> from_oci(const std::string& chart, const std::string& name, const std::string& version, ImageSource& source) {
  std::string path = chart.substr(6);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.substr(path.rfind('/') + 1) != name) path += "/" + name;
  std::string tag = version;
  for (auto& c : tag)
    if (c == '+') c = '_';
  auto ref = recipes::Reference::parse(path + ":" + tag);
  if (!ref) return input_error(chart + ": " + ref.error().message);
  auto m = source.get_manifest(*ref);
  if (!m) return Failure{m.error().kind, ref->str() + ": " + m.error().message};
  if (m->index()) return op_error(ref->str() + ": is an index, not a Helm chart artifact");
  const oci::Descriptor* layer = nullptr;
  for (const auto& l : m->layers)
    if (l.media_type == k_helm_chart_layer) layer = &l;
  if (!layer) return op_error(ref->str() + ": no layer of type " + std::string(k_helm_chart_layer));
  std::string data;
  BlobRequest req;
  req.repo = *ref;
  req.digest = layer->digest;
  req.size = layer->size;
  req.open_sink = [] { return std::make_unique<MemorySink>(); };
  req.on_done = [&data](BlobSink& s) -> Result<void> {
    data = std::move(static_cast<MemorySink&>(s).data);
    return {};
  };
  if (auto r = source.fetch_blobs({req}, {}); !r) return r.error();
  if (signing::sha256_digest(data) != layer->digest) return op_error(ref->str() + ": chart layer does not match its digest");
  return data;
}

// The bytes of `source`: a local .tgz or folder, else the store's copy of a
// remote chart, else downloaded when the network is allowed.
Result<LoadedChart> obtain(const recipes::ChartSource& source, const std::string& name, const std::string& version, const ChartAccess& access,
                           const std::string& where) {
  LoadedChart out;
  fs::path label = source.location;
  if (source.origin == recipes::ChartOrigin::Folder) {
    auto packed = recipes::pack_chart_folder(source.location);
    if (!packed) return packed.error();
    out.archive = std::move(*packed);
  } else if (source.origin == recipes::ChartOrigin::Archive) {
    auto bytes = read_file(source.location);
    if (!bytes) return input_error(where + "chart " + source.location + " not found");
    out.archive = std::move(*bytes);
  } else if (source.remote()) {
    if (version.empty()) return input_error(where + "operator.version is required to fetch the chart from " + source.written);
    fs::path cached = access.store_root / "charts" / recipes::chart_file_name(name, version);
    std::error_code ec;
    if (fs::exists(cached, ec)) {
      auto bytes = read_file(cached);
      if (!bytes) return bytes.error();
      out.archive = std::move(*bytes);
      label = cached;
    } else if (!access.network) {
      return input_error(where + "chart " + source.written + " is remote and not in the store yet: run `gpubundle mirror` to fetch it, "
                                 "or pass --chart FILE");
    } else {
      auto bytes = fetch_chart_archive(source, name, version, *access.network);
      if (!bytes) return bytes.error();
      out.archive = std::move(*bytes);
      out.fetched = true;
    }
  } else {
    return input_error(where + "no chart source: pass --chart FILE");
  }
  auto chart = recipes::load_chart_archive(out.archive, label.string());
  if (!chart) return chart.error();
  out.chart = std::move(*chart);
  out.chart.path = label;
  return out;
}

// Refuses a chart whose sha256 is not the lock's.
Result<void> same_as_locked(const recipes::LockChart& locked, const recipes::Chart& chart, const std::string& what) {
  if (!locked.sha256.empty() && chart.sha256 != locked.sha256)
    return input_error(what + " (sha256 " + chart.sha256.substr(0, 12) + ") is not the one the lock was resolved against (" +
                       locked.sha256.substr(0, 12) + ")");
  return {};
}

// Puts the chart the lock names into the store, unless the same bytes are there.
Result<void> keep(LoadedChart& c, const recipes::LockChart& locked, const std::string& source, const ChartAccess& access) {
  if (!access.store) return {};
  fs::path dest = access.store->chart_path(locked.name, locked.version);
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    auto have = signing::sha256_file_hex(dest);
    if (have && *have == c.chart.sha256) return {};
  }
  if (auto r = access.store->put_chart(locked.name, locked.version, c.archive, source); !r) return r;
  c.stored = true;
  return {};
}

// The network section's image list: a local file, else the store's copy of
// the URL, else downloaded (and kept in the store when it may be written).
Result<std::string> network_release_text(const recipes::Recipe& recipe, const ChartAccess& access) {
  const auto& net = *recipe.network;
  const std::string where = recipe.where("network.releaseFile") + "network.releaseFile ";
  constexpr size_t max = 1 << 20;
  if (!starts_with(net.release_file, "https://")) {
    fs::path file = net.release_file;
    if (file.is_relative()) file = recipe.file.parent_path() / file;
    auto text = read_file(file, max);
    if (!text) return input_error(where + file.string() + ": " + text.error().message);
    return text;
  }
  fs::path cached = access.store_root / "charts" / recipes::network_release_file_name(net.version);
  std::error_code ec;
  if (fs::exists(cached, ec)) return read_file(cached, max);
  if (!access.network)
    return input_error(where + net.release_file + " is remote and not in the store yet: run `gpubundle mirror` to fetch it, "
                                                  "or name a local copy");
  auto text = access.network->get_url(net.release_file);
  if (!text) return text.error();
  if (text->size() > max) return input_error(where + net.release_file + ": larger than 1 MiB; not a release image list");
  if (access.store)
    if (auto r = write_atomic(cached, *text); !r) return r.error();
  return text;
}

Result<LoadedChart> locked_chart(const recipes::LockChart& locked, const fs::path& lock_file, const std::string& chart_flag, const ChartAccess& access) {
  std::string where = lock_file.string() + ": ";
  fs::path stored = access.store_root / "charts" / recipes::chart_file_name(locked.name, locked.version);
  std::error_code ec;
  recipes::ChartSource source;
  if (chart_flag.empty() && fs::exists(stored, ec)) {
    source.origin = recipes::ChartOrigin::Archive;
    source.location = source.written = stored.string();
  } else {
    source = recipes::select_chart_source(chart_flag, locked.source, lock_file.parent_path());
    if (source.origin == recipes::ChartOrigin::None)
      return input_error(where + "chart " + locked.name + " " + locked.version + " is not in the store (" + stored.string() +
                         ") and the lock names no source: pass --chart FILE");
    if (!chart_flag.empty()) where = "--chart: ";
  }
  auto chart = obtain(source, locked.name, locked.version, access, where);
  if (!chart) return chart.error();
  if (auto r = same_as_locked(locked, chart->chart, where + "chart " + source.written); !r) return r.error();
  if (auto r = keep(*chart, locked, locked.source.empty() ? source.written : locked.source, access); !r) return r.error();
  return chart;
}

}  // namespace

std::string resolve_chart_url(const std::string& repo_url, const std::string& url) {
  if (url.find("://") != std::string::npos) return url;
  std::string base = repo_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (!url.empty() && url[0] == '/') {
    auto scheme = base.find("://");
    auto slash = base.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return (slash == std::string::npos ? base : base.substr(0, slash)) + url;
  }
  std::string rel = url;
  if (starts_with(rel, "./")) rel = rel.substr(2);
  return base + "/" + rel;
}

Result<std::string> fetch_chart_archive(const recipes::ChartSource& source, const std::string& name, const std::string& version,
                                        ImageSource& network) {
  Result<std::string> bytes = source.origin == recipes::ChartOrigin::Oci        ? from_oci(source.location, name, version, network)
                              : source.origin == recipes::ChartOrigin::HelmRepo ? from_helm_repo(source.location, name, version, network)
                                                                       : input_error(source.written + ": not a remote chart");
  if (bytes && !is_gzip(*bytes)) return op_error(source.written + ": chart " + name + " " + version + " is not a .tgz");
  return bytes;
}

Result<ResolvedRecipe> resolve_recipe(const recipes::Recipe& recipe, const std::string& chart_flag, const ChartAccess& access) {
  recipes::ChartSource source = recipes::select_chart_source(chart_flag, recipe.chart, recipe.file.parent_path());
  std::string where = chart_flag.empty() ? recipe.where("operator.chart") : "--chart: ";
  auto chart = obtain(source, recipes::k_operator_chart, recipe.operator_version, access, where);
  if (!chart) return chart.error();
  auto lock = resolve(recipe, chart->chart, recipes::Catalog::builtin());
  if (!lock) return lock.error();
  ResolvedRecipe out{std::move(*lock), std::move(*chart), {}};
  if (recipe.network) {
    recipes::ChartSource net_source = recipes::select_chart_source("", recipe.network->chart, recipe.file.parent_path());
    auto net_chart = obtain(net_source, recipes::k_network_chart, strip_v(recipe.network->version), access, recipe.where("network.chart"));
    if (!net_chart) return net_chart.error();
    auto release = network_release_text(recipe, access);
    if (!release) return release.error();
    if (auto r = recipes::resolve_network(recipe, net_chart->chart, *release, recipes::Catalog::builtin(), out.lock); !r) return r.error();
    if (auto r = keep(*net_chart, out.lock.network->chart, net_source.written, access); !r) return r.error();
    out.network_chart = std::move(*net_chart);
  }
  if (auto r = keep(out.chart, out.lock.chart, source.written, access); !r) return r.error();
  return out;
}

Result<LoadedChart> lock_chart_archive(const recipes::Lock& lock, std::string archive, const std::string& label) {
  return locked_chart_archive(lock.chart, std::move(archive), label);
}

Result<LoadedChart> locked_chart_archive(const recipes::LockChart& locked, std::string archive, const std::string& label) {
  auto chart = recipes::load_chart_archive(archive, label);
  if (!chart) return chart.error();
  if (auto r = same_as_locked(locked, *chart, "chart " + label); !r) return r.error();
  return LoadedChart{std::move(*chart), std::move(archive), false, false};
}

Result<LoadedChart> lock_chart(const recipes::Lock& lock, const fs::path& lock_file, const std::string& chart_flag, const ChartAccess& access) {
  return locked_chart(lock.chart, lock_file, chart_flag, access);
}

Result<LoadedChart> lock_network_chart(const recipes::Lock& lock, const fs::path& lock_file, const ChartAccess& access) {
  if (!lock.network) return input_error(lock_file.string() + ": the lock has no network section");
  return locked_chart(lock.network->chart, lock_file, "", access);
}

}  // namespace gb::mirror
