#include "mirror/chart_fetch.hpp"

#include <yaml-cpp/yaml.h>

#include "common/strings.hpp"
#include "signing/digest.hpp"

namespace gb {

namespace fs = std::filesystem;

namespace {

class MemorySink final : public BlobSink {
public:
  std::string data;
  Result<void> write(std::string_view chunk) override {
    data.append(chunk);
    return {};
  }
  std::uint64_t size() const override { return data.size(); }
  Result<void> truncate() override {
    data.clear();
    return {};
  }
};

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
  if (!digest.empty() && sha256_hex(*bytes) != digest)
    return op_error(url + ": sha256 " + sha256_hex(*bytes) + " differs from the repository index's " + digest);
  return bytes;
}

Result<std::string> from_oci(const std::string& chart, const std::string& name, const std::string& version, ImageSource& source) {
  std::string path = chart.substr(6);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.substr(path.rfind('/') + 1) != name) path += "/" + name;
  std::string tag = version;
  for (auto& c : tag)
    if (c == '+') c = '_';
  auto ref = Reference::parse(path + ":" + tag);
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
  std::vector<BlobRequest> reqs;
  reqs.push_back(std::move(req));
  if (auto r = source.fetch_blobs(std::move(reqs), {}); !r) return r.error();
  if (sha256_digest(data) != layer->digest) return op_error(ref->str() + ": chart layer does not match its digest");
  return data;
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

Result<ChartFetch> fetch_chart(const std::string& chart_source, const fs::path& relative_to, const std::string& name,
                               const std::string& version, Store& store, ImageSource& source) {
  auto dest = store.chart_path(name, version);
  std::error_code ec;
  if (fs::exists(dest, ec)) return ChartFetch{dest, false};
  Result<std::string> bytes = std::string();
  if (starts_with(chart_source, "oci://")) {
    bytes = from_oci(chart_source, name, version, source);
  } else if (starts_with(chart_source, "https://") || starts_with(chart_source, "http://")) {
    bytes = from_helm_repo(chart_source, name, version, source);
  } else {
    fs::path p = chart_source;
    if (p.is_relative() && !relative_to.empty()) p = relative_to / p;
    if (fs::is_directory(p, ec)) return ChartFetch{p, false};  // an unpacked chart is used in place
    bytes = read_file(p);
  }
  if (!bytes) return bytes.error();
  if (!is_gzip(*bytes)) return op_error(chart_source + ": chart " + name + " " + version + " is not a .tgz");
  if (auto r = store.put_chart(name, version, *bytes, chart_source); !r) return r.error();
  return ChartFetch{dest, true};
}

}  // namespace gb
