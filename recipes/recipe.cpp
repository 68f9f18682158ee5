#include "recipes/recipe.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>
#include <yaml-cpp/yaml.h>

#include "common/files.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/lock.hpp"
#include "recipes/network.hpp"
#include "recipes/reference.hpp"
#include "recipes/yaml_input.hpp"
#include "signing/digest.hpp"

namespace gb::recipes {

bool is_nccl_size(std::string_view s) {
  if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G')) s.remove_suffix(1);
  return !s.empty() && s.size() <= 12 && is_digits(s);
}

std::string to_string(DriverMode m) {
  switch (m) {
    case DriverMode::Conventional: return "conventional";
    case DriverMode::Precompiled: return "precompiled";
    case DriverMode::Host: return "host";
  }
  return "?";
}

std::string to_string(ToolkitMode m) { return m == ToolkitMode::Host ? "host" : "container"; }

bool is_recipe_name(std::string_view s) { return s.size() <= k_recipe_max_name && is_lower_name(s); }

bool is_network_attachment(std::string_view s) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return is_recipe_name(s);
  std::string_view ns = s.substr(0, slash);
  return ns.size() <= 63 && ns.find('.') == std::string_view::npos && is_lower_name(ns) && is_recipe_name(s.substr(slash + 1));
}

bool is_release_tag(std::string_view s) { return starts_with(s, "v") && is_dotted_number(s.substr(1), 3, 3); }

bool is_os_name(std::string_view s) {
  auto [id, version] = split_os(s);
  // os-release IDs may be hyphenated: sl-micro6.1.
  bool letters = !id.empty() && id.front() != '-' && id.back() != '-' && id.find("--") == std::string::npos &&
                 std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
  return letters && is_dotted_number(version, 1, 2);
}

bool is_kernel_release(std::string_view s) {
  size_t dot = s.find('.');
  if (dot == std::string_view::npos || !is_digits(s.substr(0, dot))) return false;
  auto rest = s.substr(dot + 1);
  return !rest.empty() && rest.front() >= '0' && rest.front() <= '9' && is_word(rest, "._+~-");
}

bool is_pkey_guid(std::string_view s) {
  if (s.size() != 23) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i % 3 == 2 ? s[i] != ':' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

std::uint64_t pkey_guid_value(std::string_view guid) {
  std::uint64_t v = 0;
  for (char c : guid)
    if (c != ':') v = v << 4 | static_cast<std::uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
  return v;
}

bool is_driver_version(std::string_view s) { return is_dotted_number(s, 2, 3) || signing::is_sha256_digest(s); }

std::string label_problem(std::string_view key, std::string_view value) {
  auto name_ok = [](std::string_view n) {
    if (n.empty() || n.size() > 63 || !std::isalnum(static_cast<unsigned char>(n.front())) ||
        !std::isalnum(static_cast<unsigned char>(n.back())))
      return false;
    return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
  };
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    bool prefix_ok = !prefix.empty() && prefix.size() <= 253 && std::all_of(prefix.begin(), prefix.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    }) && std::isalnum(static_cast<unsigned char>(prefix.front())) && std::isalnum(static_cast<unsigned char>(prefix.back()));
    if (!prefix_ok) return "label key '" + std::string(key.substr(0, 300)) + "' has no DNS-subdomain prefix before its '/'";
  }
  if (!name_ok(name))
    return "label key '" + std::string(key.substr(0, 300)) + "' is not a label name (1-63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)";
  if (!value.empty() && !name_ok(value))
    return "label value '" + std::string(value.substr(0, 300)) + "' is not a label value (0-63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)";
  return "";
}

bool is_driver_branch(std::string_view s) { return s.size() == 3 && is_digits(s); }

std::string Recipe::where(const std::string& field) const {
  auto it = lines.find(field);
  std::string f = file.filename().string();
  return it == lines.end() ? f + ": " : f + ":" + std::to_string(it->second) + ": ";
}

namespace {

// Walks the YAML tree with the field path at hand, so every error can say
// "recipe.yaml:12: driver.mode: ...".
class Reader {
public:
  Reader(Recipe& r) : m_r(r) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& what) {
    std::string f = m_r.file.filename().string();
    int line = node.IsDefined() ? node.Mark().line + 1 : 0;
    throw Error(ErrorKind::Input, f + (line > 0 ? ":" + std::to_string(line) : "") + ": " + path + ": " + what);
  }

  void note(const YAML::Node& node, const std::string& path) {
    if (node.IsDefined() && node.Mark().line >= 0) m_r.lines[path] = node.Mark().line + 1;
  }

  // Refuses keys outside `allowed`, suggesting the closest known one.
  void only(const YAML::Node& map, const std::string& path, std::initializer_list<const char*> allowed) {
    if (!map.IsMap()) fail(map, path.empty() ? "(top level)" : path, "must be a mapping");
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.as<std::string>();
      bool ok = false;
      for (auto* a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string full = path.empty() ? key : path + "." + key;
        std::string hint;
        for (auto* a : allowed)
          if (distance(key, a) <= 2) hint = std::string(" (did you mean '") + a + "'?)";
        std::vector<std::string> names(allowed.begin(), allowed.end());
        fail(it->first, full, "unknown field" + hint + "; known fields: " + join(names, ", "));
      }
    }
  }

  std::string str(const YAML::Node& node, const std::string& path) {
    if (!node.IsScalar()) fail(node, path, "must be a string");
    note(node, path);
    if (node.Scalar().size() > k_recipe_max_string)
      fail(node, path, "longer than " + std::to_string(k_recipe_max_string) + " bytes");
    return node.Scalar();
  }

  bool boolean(const YAML::Node& node, const std::string& path) {
    note(node, path);
    bool v;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v)) fail(node, path, "must be true or false");
    return v;
  }

  int integer(const YAML::Node& node, const std::string& path) {
    note(node, path);
    int v;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, v)) fail(node, path, "must be a whole number");
    return v;
  }

  double number(const YAML::Node& node, const std::string& path) {
    note(node, path);
    double v;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v)) fail(node, path, "must be a number");
    return v;
  }

  std::vector<std::string> strings(const YAML::Node& node, const std::string& path) {
    if (!node.IsSequence()) fail(node, path, "must be a list");
    note(node, path);
    if (node.size() > k_recipe_max_list) fail(node, path, "more than " + std::to_string(k_recipe_max_list) + " entries");
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) out.push_back(str(node[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  std::string one_of(const YAML::Node& node, const std::string& path, std::initializer_list<const char*> values) {
    std::string v = str(node, path);
    for (auto* a : values)
      if (v == a) return v;
    fail(node, path, quote(v) + " is not one of: " + join(std::vector<std::string>(values.begin(), values.end()), ", "));
  }

private:
  static size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  }
  Recipe& m_r;
};

// The release file the Network Operator publishes at a tag.
std::string default_network_release_file(const std::string& version) {
  return "https://raw.githubusercontent.com/Mellanox/network-operator/" + version + "/hack/release.yaml";
}

void read_network(Reader& rd, const YAML::Node& n, Recipe& r) {
  rd.only(n, "network", {"version", "chart", "releaseFile", "operands", "ofedDriver", "ibKubernetes"});
  NetworkSettings net;
  if (!n["version"]) rd.fail(n, "network.version", "missing (the Network Operator release tag, e.g. v26.4.1)");
  net.version = rd.str(n["version"], "network.version");
  if (!is_release_tag(net.version))
    rd.fail(n["version"], "network.version", quote(net.version) + " is not a release tag like v26.4.1");
  net.chart = n["chart"] ? rd.str(n["chart"], "network.chart") : "https://helm.ngc.nvidia.com/nvidia";
  if (n["releaseFile"]) {
    net.release_file = rd.str(n["releaseFile"], "network.releaseFile");
    if (starts_with(net.release_file, "http://"))
      rd.fail(n["releaseFile"], "network.releaseFile", quote(net.release_file) + ": the image list is fetched over https:// only");
    if (net.release_file.empty()) rd.fail(n["releaseFile"], "network.releaseFile", "empty");
  } else {
    net.release_file = default_network_release_file(net.version);
  }
  const auto& catalog = Catalog::builtin();
  if (n["operands"]) {
    net.operands = rd.strings(n["operands"], "network.operands");
    std::vector<std::string> known;
    for (const auto& o : catalog.network_operands()) known.push_back(o.name);
    for (size_t i = 0; i < net.operands.size(); ++i) {
      const std::string at = "network.operands[" + std::to_string(i) + "]";
      if (!catalog.network_operand(net.operands[i]))
        rd.fail(n["operands"][i], at, quote(net.operands[i]) + " is not a Network Operator operand; known: " + join(known, ", "));
      for (size_t j = 0; j < i; ++j)
        if (net.operands[j] == net.operands[i]) rd.fail(n["operands"][i], at, quote(net.operands[i]) + " is listed twice");
    }
  } else {
    net.operands = catalog.network_default_operands();
  }
  if (auto o = n["ofedDriver"]) {
    rd.only(o, "network.ofedDriver", {"precompiled"});
    if (o["precompiled"]) net.doca_precompiled = rd.boolean(o["precompiled"], "network.ofedDriver.precompiled");
    if (std::find(net.operands.begin(), net.operands.end(), "ofedDriver") == net.operands.end())
      rd.fail(o, "network.ofedDriver", "set, but network.operands does not list ofedDriver");
  }
  if (net.doca_precompiled) {
    if (r.kernels.empty())
      rd.fail(n["ofedDriver"]["precompiled"], "network.ofedDriver.precompiled",
              "precompiled DOCA drivers are one image per kernel: list the nodes' kernels in target.kernels");
    for (size_t i = 0; i < r.kernels.size(); ++i)
      if (r.kernels[i].find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != std::string::npos)
        rd.fail(n["ofedDriver"]["precompiled"], "network.ofedDriver.precompiled",
                "target.kernels[" + std::to_string(i) + "] " + quote(r.kernels[i]) +
                    " has a character an image tag cannot hold, so it has no precompiled DOCA driver image");
  }
  auto has = [&](const char* operand) { return std::find(net.operands.begin(), net.operands.end(), operand) != net.operands.end(); };
  // The operator names DOCA driver images by the nodes' os-release ID and
  // VERSION_ID as they are (rhel9.6): an OS whose VERSION_ID has a minor
  // version needs it here, or the lock names images the operator never asks for.
  if (has("ofedDriver")) {
    auto [id, version] = split_os(r.os);
    for (const char* family : {"rhel", "rhcos", "sles", "rocky", "almalinux", "ol"})
      if (id == family && version.find('.') == std::string::npos)
        rd.fail(n, "target.os", quote(r.os) + ": the Network Operator tags DOCA driver images with the nodes' os-release ID and VERSION_ID, which is " +
                                    id + "<major>.<minor> (" + id + version + ".6, say); give target.os with the minor version the nodes run");
  }
  if (auto ib = n["ibKubernetes"]) {
    if (!has("ibKubernetes")) rd.fail(ib, "network.ibKubernetes", "set, but network.operands does not list ibKubernetes");
    rd.only(ib, "network.ibKubernetes", {"pKeyGUIDPoolRangeStart", "pKeyGUIDPoolRangeEnd", "ufmSecret"});
    NetworkSettings::IbKubernetes k;
    const std::pair<const char*, std::string*> fields[] = {{"pKeyGUIDPoolRangeStart", &k.pkey_guid_pool_start},
                                                           {"pKeyGUIDPoolRangeEnd", &k.pkey_guid_pool_end},
                                                           {"ufmSecret", &k.ufm_secret}};
    for (const auto& [key, value] : fields) {
      const std::string at = std::string("network.ibKubernetes.") + key;
      if (!ib[key]) rd.fail(ib, at, "missing (the NicClusterPolicy CRD requires it)");
      *value = rd.str(ib[key], at);
      bool ok = value == &k.ufm_secret ? is_recipe_name(*value) : is_pkey_guid(*value);
      if (!ok)
        rd.fail(ib[key], at, quote(*value) + (value == &k.ufm_secret ? " is not a Kubernetes secret name"
                                                                     : " is not a GUID like 02:00:00:00:00:00:00:00"));
    }
    if (pkey_guid_value(k.pkey_guid_pool_start) > pkey_guid_value(k.pkey_guid_pool_end))
      rd.fail(ib["pKeyGUIDPoolRangeEnd"], "network.ibKubernetes.pKeyGUIDPoolRangeEnd",
              k.pkey_guid_pool_end + " is below pKeyGUIDPoolRangeStart " + k.pkey_guid_pool_start);
    net.ib_kubernetes = std::move(k);
  } else if (has("ibKubernetes")) {
    rd.fail(n, "network.ibKubernetes",
            "missing: the ibKubernetes operand needs the site's UFM GUID pool and credentials Secret "
            "({pKeyGUIDPoolRangeStart, pKeyGUIDPoolRangeEnd, ufmSecret}), which its CRD requires");
  }
  r.network = std::move(net);
}

std::uint64_t nccl_size_bytes(std::string_view s) {
  int shift = s.back() == 'K' ? 10 : s.back() == 'M' ? 20 : s.back() == 'G' ? 30 : 0;
  if (shift) s.remove_suffix(1);
  return std::stoull(std::string(s)) << shift;
}

void read_acceptance(Reader& rd, const YAML::Node& a, Recipe& r) {
  rd.only(a, "acceptance", {"nccl"});
  auto n = a["nccl"];
  if (!n) return;
  rd.only(n, "acceptance.nccl", {"image", "nodes", "gpusPerNode", "minBytes", "maxBytes", "minBusBw", "network", "mpiOperator"});
  NcclAcceptance t;
  if (!n["image"]) rd.fail(n, "acceptance.nccl.image", "missing (the nccl-tests image: all_reduce_perf with MPI, mpirun and sshd)");
  t.image = rd.str(n["image"], "acceptance.nccl.image");
  if (auto ref = Reference::parse(t.image); !ref) rd.fail(n["image"], "acceptance.nccl.image", ref.error().message);
  auto count = [&](const char* key, int& out, int most) {
    if (!n[key]) return;
    std::string path = std::string("acceptance.nccl.") + key;
    out = rd.integer(n[key], path);
    if (out < 1 || out > most) rd.fail(n[key], path, "must be between 1 and " + std::to_string(most));
  };
  count("nodes", t.nodes, static_cast<int>(k_recipe_max_list));
  count("gpusPerNode", t.gpus_per_node, 64);
  for (auto [key, out] : {std::pair{"minBytes", &t.min_bytes}, std::pair{"maxBytes", &t.max_bytes}}) {
    if (!n[key]) continue;
    std::string path = std::string("acceptance.nccl.") + key;
    *out = rd.str(n[key], path);
    if (!is_nccl_size(*out)) rd.fail(n[key], path, quote(*out) + " is not a size all_reduce_perf reads, like 8, 64K, 1M or 8G");
  }
  if (nccl_size_bytes(t.min_bytes) > nccl_size_bytes(t.max_bytes))
    rd.fail(n["minBytes"] ? n["minBytes"] : n["maxBytes"], "acceptance.nccl.minBytes",
            t.min_bytes + " is more than maxBytes " + t.max_bytes);
  if (n["minBusBw"]) {
    t.min_bus_bw = rd.number(n["minBusBw"], "acceptance.nccl.minBusBw");
    if (t.min_bus_bw < 0) rd.fail(n["minBusBw"], "acceptance.nccl.minBusBw", "must be 0 (no bound) or more GB/s");
  }
  // With a network section the run is a fabric acceptance: its workers need
  // the RDMA device the kit's NicClusterPolicy hands out, or NCCL falls back
  // to sockets and the run can only fail.
  if (r.network && rdma_resource(r.network->operands).empty())
    rd.fail(n, "acceptance.nccl",
            "with a network section the NCCL run tests the fabric, but network.operands has no RDMA device plugin "
            "(rdmaSharedDevicePlugin or sriovDevicePlugin), so its workers would get no RDMA device; add one");
  if (n["network"]) {
    t.network = rd.str(n["network"], "acceptance.nccl.network");
    if (!is_network_attachment(t.network))
      rd.fail(n["network"], "acceptance.nccl.network",
              quote(t.network) + " is not a NetworkAttachmentDefinition name ([namespace/]name, lower-case letters, digits, '-')");
    if (!r.network)
      rd.fail(n["network"], "acceptance.nccl.network",
              "names a secondary network of the Network Operator, but the recipe has no network section");
  }
  if (auto m = n["mpiOperator"]) {
    rd.only(m, "acceptance.nccl.mpiOperator", {"install", "image"});
    if (m["install"]) t.mpi_operator_install = rd.boolean(m["install"], "acceptance.nccl.mpiOperator.install");
    if (m["image"]) {
      if (!t.mpi_operator_install)
        rd.fail(m["image"], "acceptance.nccl.mpiOperator.image", "is only carried with mpiOperator.install: true");
      t.mpi_operator_image = rd.str(m["image"], "acceptance.nccl.mpiOperator.image");
      if (auto ref = Reference::parse(t.mpi_operator_image); !ref)
        rd.fail(m["image"], "acceptance.nccl.mpiOperator.image", ref.error().message);
    }
  }
  if (t.mpi_operator_install && t.mpi_operator_image.empty()) t.mpi_operator_image = k_default_mpi_operator_image;
  r.nccl_acceptance = std::move(t);
}

void read_monitoring(Reader& rd, const YAML::Node& m, Recipe& r) {
  rd.only(m, "monitoring", {"prometheusLabels", "dashboardLabels"});
  MonitoringLabels out;
  auto labels = [&](const char* key, std::map<std::string, std::string>& into) {
    const YAML::Node n = m[key];
    if (!n) return;
    std::string path = std::string("monitoring.") + key;
    if (!n.IsMap()) rd.fail(n, path, "must be a mapping of label names to values");
    if (n.size() > k_max_labels) rd.fail(n, path, "more than " + std::to_string(k_max_labels) + " labels");
    into.clear();
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.as<std::string>();
      std::string v = rd.str(it->second, path + "." + k);
      if (auto why = label_problem(k, v); !why.empty()) rd.fail(it->second, path + "." + k, why);
      into[k] = v;
    }
  };
  labels("prometheusLabels", out.prometheus);
  labels("dashboardLabels", out.dashboard);
  r.monitoring = std::move(out);
}

void read(Reader& rd, const YAML::Node& root, Recipe& r) {
  rd.only(root, "", {"apiVersion", "kind", "metadata", "operator", "target", "driver", "toolkit", "components", "mig",
                     "sharing", "extraImages", "destination", "pullSecret", "packages", "network",
                     "acceptance", "monitoring"});
  if (!root["apiVersion"]) rd.fail(root, "apiVersion", "missing (expected gpubundle/v1)");
  if (rd.str(root["apiVersion"], "apiVersion") != "gpubundle/v1")
    rd.fail(root["apiVersion"], "apiVersion", "unsupported version " + quote(root["apiVersion"].Scalar()) +
                                                  " (this gpubundle reads gpubundle/v1)");
  if (!root["kind"] || rd.str(root["kind"], "kind") != "Recipe") rd.fail(root["kind"], "kind", "must be Recipe");

  if (auto md = root["metadata"]) {
    rd.only(md, "metadata", {"name"});
    if (md["name"]) r.name = rd.str(md["name"], "metadata.name");
  }
  if (r.name.empty()) r.name = r.file.stem().string();
  if (!is_recipe_name(r.name))
    rd.fail(root["metadata"]["name"], "metadata.name",
            quote(r.name) + " must be lower-case letters, digits, '-' or '.', at most " + std::to_string(k_recipe_max_name));

  auto op = root["operator"];
  if (!op) rd.fail(root, "operator", "missing (operator.version names the GPU Operator release)");
  rd.only(op, "operator", {"version", "chart"});
  if (op["version"]) {
    r.operator_version = rd.str(op["version"], "operator.version");
    if (!is_release_tag(r.operator_version))
      rd.fail(op["version"], "operator.version", quote(r.operator_version) + " is not a release tag like v24.9.2");
  }
  r.chart = op["chart"] ? rd.str(op["chart"], "operator.chart") : "https://helm.ngc.nvidia.com/nvidia";

  auto t = root["target"];
  if (!t) rd.fail(root, "target", "missing (target.gpus and target.os are required)");
  rd.only(t, "target", {"gpus", "os", "kernels", "platforms", "workloads"});
  if (!t["gpus"]) rd.fail(t, "target.gpus", "missing");
  r.gpus = rd.strings(t["gpus"], "target.gpus");
  if (r.gpus.empty()) rd.fail(t["gpus"], "target.gpus", "must name at least one GPU");
  if (!t["os"]) rd.fail(t, "target.os", "missing (e.g. ubuntu22.04, rhel9.4, rhcos4.16)");
  r.os = rd.str(t["os"], "target.os");
  if (!is_os_name(r.os))
    rd.fail(t["os"], "target.os", quote(r.os) + " is not an OS id and version (os-release ID + VERSION_ID) like ubuntu22.04, rhel9.4 or sl-micro6.1");
  if (t["kernels"]) r.kernels = rd.strings(t["kernels"], "target.kernels");
  for (size_t i = 0; i < r.kernels.size(); ++i)
    if (!is_kernel_release(r.kernels[i]))
      rd.fail(t["kernels"][i], "target.kernels[" + std::to_string(i) + "]",
              quote(r.kernels[i]) + " is not a kernel release (uname -r)");
  r.platforms = t["platforms"] ? rd.strings(t["platforms"], "target.platforms") : std::vector<std::string>{"linux/amd64"};
  for (size_t i = 0; i < r.platforms.size(); ++i) {
    const auto& p = r.platforms[i];
    if (p != "linux/amd64" && p != "linux/arm64")
      rd.fail(t["platforms"][i], "target.platforms[" + std::to_string(i) + "]",
              quote(p) + " is not supported (linux/amd64 or linux/arm64)");
  }
  r.workloads = t["workloads"] ? rd.strings(t["workloads"], "target.workloads") : std::vector<std::string>{"container"};
  for (size_t i = 0; i < r.workloads.size(); ++i) {
    const auto& w = r.workloads[i];
    if (w != "container" && w != "vm-passthrough" && w != "vm-vgpu")
      rd.fail(t["workloads"][i], "target.workloads[" + std::to_string(i) + "]",
              quote(w) + " is not one of: container, vm-passthrough, vm-vgpu");
  }

  if (auto d = root["driver"]) {
    rd.only(d, "driver", {"mode", "version", "branch", "kernelModuleType"});
    if (d["mode"]) {
      auto m = rd.one_of(d["mode"], "driver.mode", {"conventional", "precompiled", "host"});
      r.driver_mode = m == "precompiled" ? DriverMode::Precompiled : m == "host" ? DriverMode::Host : DriverMode::Conventional;
    }
    if (d["version"]) {
      r.driver_version = rd.str(d["version"], "driver.version");
      if (!is_driver_version(r.driver_version))
        rd.fail(d["version"], "driver.version",
                quote(r.driver_version) + " is not a driver version like 550.127.08 or a sha256: digest");
    }
    if (d["branch"]) {
      r.driver_branch = rd.str(d["branch"], "driver.branch");
      if (!is_driver_branch(r.driver_branch))
        rd.fail(d["branch"], "driver.branch", quote(r.driver_branch) + " is not a driver branch like 550");
    }
    if (d["version"] && d["branch"] && !starts_with(r.driver_version, "sha256:") &&
        !starts_with(r.driver_version, r.driver_branch + "."))
      rd.fail(d["branch"], "driver.branch", "branch " + r.driver_branch + " does not match driver.version " + r.driver_version);
    if (d["kernelModuleType"])
      r.kernel_module_type = rd.one_of(d["kernelModuleType"], "driver.kernelModuleType", {"auto", "open", "proprietary"});
  }

  // The operator names precompiled driver images <branch>-<kernel>-<osTag>
  // (gpubundle driver build too): a kernel with a character an image tag
  // cannot hold has no image. Host-mode kernels name no image.
  if (r.driver_mode != DriverMode::Host)
    for (size_t i = 0; i < r.kernels.size(); ++i)
      if (auto bad = r.kernels[i].find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
          bad != std::string::npos)
        rd.fail(t["kernels"][i], "target.kernels[" + std::to_string(i) + "]",
                "'" + r.kernels[i] + "' has '" + r.kernels[i][bad] + "', which an image tag cannot hold, and driver.mode " +
                    to_string(r.driver_mode) + " names driver images <branch>-<kernel>-<osTag>; build these nodes' driver "
                    "on the node (driver.mode: conventional, without target.kernels) or bake it in (driver.mode: host)");

  if (auto tk = root["toolkit"]) {
    rd.only(tk, "toolkit", {"mode"});
    if (tk["mode"])
      r.toolkit_mode = rd.one_of(tk["mode"], "toolkit.mode", {"container", "host"}) == "host" ? ToolkitMode::Host
                                                                                            : ToolkitMode::Container;
  }

  if (auto c = root["components"]) {
    if (!c.IsMap()) rd.fail(c, "components", "must be a mapping of chart component keys");
    if (c.size() > k_recipe_max_list) rd.fail(c, "components", "more than " + std::to_string(k_recipe_max_list) + " entries");
    for (auto it = c.begin(); it != c.end(); ++it) {
      std::string key = it->first.as<std::string>();
      std::string path = "components." + key;
      rd.note(it->first, path);
      ComponentOverride o;
      if (it->second.IsScalar()) {  // "gds: false" as a shorthand
        o.enabled = rd.boolean(it->second, path);
      } else {
        rd.only(it->second, path, {"enabled", "serviceMonitor"});
        if (it->second["enabled"]) o.enabled = rd.boolean(it->second["enabled"], path + ".enabled");
        if (it->second["serviceMonitor"]) {
          if (key != "dcgmExporter") rd.fail(it->second["serviceMonitor"], path + ".serviceMonitor", "only dcgmExporter has a serviceMonitor");
          o.service_monitor = rd.boolean(it->second["serviceMonitor"], path + ".serviceMonitor");
        }
      }
      r.components[key] = o;
    }
  }

  if (auto m = root["mig"]) {
    rd.only(m, "mig", {"strategy", "config"});
    if (m["strategy"]) r.mig_strategy = rd.one_of(m["strategy"], "mig.strategy", {"single", "mixed"});
    if (m["config"]) r.mig_config = rd.str(m["config"], "mig.config");
  }

  if (auto s = root["sharing"]) {
    rd.only(s, "sharing", {"timeSlicing"});
    if (auto ts = s["timeSlicing"]) {
      rd.only(ts, "sharing.timeSlicing", {"replicas", "renameByDefault"});
      if (!ts["replicas"]) rd.fail(ts, "sharing.timeSlicing.replicas", "missing");
      r.time_slicing_replicas = rd.integer(ts["replicas"], "sharing.timeSlicing.replicas");
      if (r.time_slicing_replicas < 2 || r.time_slicing_replicas > 128)
        rd.fail(ts["replicas"], "sharing.timeSlicing.replicas", "must be between 2 and 128");
      if (ts["renameByDefault"]) r.time_slicing_rename = rd.boolean(ts["renameByDefault"], "sharing.timeSlicing.renameByDefault");
    }
  }

  if (auto e = root["extraImages"]) {
    r.extra_images = rd.strings(e, "extraImages");
    for (size_t i = 0; i < r.extra_images.size(); ++i) {
      auto ref = Reference::parse(r.extra_images[i]);
      if (!ref) rd.fail(e[i], "extraImages[" + std::to_string(i) + "]", ref.error().message);
    }
  }

  if (auto d = root["destination"]) {
    rd.only(d, "destination", {"registry", "prefix"});
    if (!d["registry"]) rd.fail(d, "destination.registry", "missing");
    r.destination_registry = rd.str(d["registry"], "destination.registry");
    // As --registry: http:// marks a plain-HTTP site, for the kit bundle create carries.
    if (starts_with(r.destination_registry, "http://")) {
      r.destination_plain_http = true;
      r.destination_registry.erase(0, 7);
    } else if (starts_with(r.destination_registry, "https://")) {
      r.destination_registry.erase(0, 8);
    }
    if (d["prefix"]) r.destination_prefix = rd.str(d["prefix"], "destination.prefix");
    while (!r.destination_prefix.empty() && r.destination_prefix.back() == '/') r.destination_prefix.pop_back();
    auto probe = Reference::parse(r.destination_registry + "/" +
                                  (r.destination_prefix.empty() ? "x" : r.destination_prefix + "/x") + ":t");
    if (!probe || probe->registry != r.destination_registry)
      rd.fail(d["registry"], "destination", quote(r.destination_registry + "/" + r.destination_prefix) +
                                                " is not a registry host[:port] with an optional lower-case path prefix");
  }

  if (auto p = root["packages"]) {
    rd.only(p, "packages", {"sources", "kernelPackages", "server"});
    if (auto ss = p["sources"]) {
      if (!ss.IsSequence()) rd.fail(ss, "packages.sources", "must be a list");
      if (ss.size() > k_recipe_max_list) rd.fail(ss, "packages.sources", "more than " + std::to_string(k_recipe_max_list) + " entries");
      for (size_t i = 0; i < ss.size(); ++i) {
        const auto& n = ss[i];
        std::string at = "packages.sources[" + std::to_string(i) + "]";
        rd.only(n, at, {"name", "type", "url", "suites", "components", "keyring", "caFile", "signatures"});
        PackageSource src;
        for (const char* key : {"name", "type", "url", "keyring"})
          if (!n[key]) rd.fail(n, at + "." + key, "missing");
        src.name = rd.str(n["name"], at + ".name");
        if (src.name.empty() || src.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
          rd.fail(n["name"], at + ".name", quote(src.name) + " is not a name of lower-case letters, digits and '-'");
        for (const auto& other : r.packages.sources)
          if (other.name == src.name) rd.fail(n["name"], at + ".name", quote(src.name) + " names two sources");
        src.format = rd.one_of(n["type"], at + ".type", {"apt", "rpm-md"}) == "apt" ? PackageFormat::Apt : PackageFormat::RpmMd;
        src.url = rd.str(n["url"], at + ".url");
        while (!src.url.empty() && src.url.back() == '/') src.url.pop_back();
        if (!starts_with(src.url, "http://") && !starts_with(src.url, "https://"))
          rd.fail(n["url"], at + ".url", quote(src.url) + " is not an http:// or https:// URL");
        // Messages name the URL: a password in it would reach logs.
        if (auto authority = src.url.substr(src.url.find("://") + 3); authority.substr(0, authority.find('/')).find('@') != std::string::npos)
          rd.fail(n["url"], at + ".url", "credentials in a package source URL are not supported (messages and logs name the URL)");
        if (n["suites"]) src.suites = rd.strings(n["suites"], at + ".suites");
        if (n["components"]) src.components = rd.strings(n["components"], at + ".components");
        if (src.format == PackageFormat::Apt) {
          if (src.suites.empty()) rd.fail(n, at + ".suites", "an apt source needs at least one suite (jammy, bookworm ...)");
          if (src.components.empty()) rd.fail(n, at + ".components", "an apt source needs at least one component (main ...)");
        } else if (n["components"]) {
          rd.fail(n["components"], at + ".components", "an rpm-md source has no components; list its repos under suites");
        }
        for (size_t j = 0; j < src.suites.size(); ++j)
          if (src.suites[j].empty() || src.suites[j].find("..") != std::string::npos || src.suites[j][0] == '/')
            rd.fail(n["suites"][j], at + ".suites[" + std::to_string(j) + "]", quote(src.suites[j]) + " is not a path below url");
        if (n["signatures"]) {
          src.package_signatures = rd.one_of(n["signatures"], at + ".signatures", {"repository", "packages"}) == "packages";
          if (src.package_signatures && src.format == PackageFormat::Apt)
            rd.fail(n["signatures"], at + ".signatures", "apt packages carry no signatures of their own; an apt source is "
                                                         "trusted through its signed Release only");
        }
        auto rel = [&](const char* key) {
          std::filesystem::path f = rd.str(n[key], at + "." + key);
          return f.is_absolute() ? f : r.file.parent_path() / f;
        };
        src.keyring = rel("keyring");
        if (n["caFile"]) src.ca_file = rel("caFile");
        r.packages.sources.push_back(std::move(src));
      }
    }
    if (auto k = p["kernelPackages"]) {
      r.packages.kernel_packages = rd.strings(k, "packages.kernelPackages");
      for (size_t i = 0; i < r.packages.kernel_packages.size(); ++i)
        if (r.packages.kernel_packages[i].find("{kernel}") == std::string::npos)
          rd.fail(k[i], "packages.kernelPackages[" + std::to_string(i) + "]",
                  quote(r.packages.kernel_packages[i]) + " has no {kernel}, so it would not follow the recipe's kernels");
    }
    if (auto sv = p["server"]) {
      rd.only(sv, "packages.server", {"image"});
      if (sv["image"]) {
        r.packages.server_image = rd.str(sv["image"], "packages.server.image");
        auto ref = Reference::parse(r.packages.server_image);
        if (!ref) rd.fail(sv["image"], "packages.server.image", ref.error().message);
      }
    }
  }

  if (auto n = root["network"]) read_network(rd, n, r);
  if (auto a = root["acceptance"]) read_acceptance(rd, a, r);
  if (auto m = root["monitoring"]) read_monitoring(rd, m, r);

  if (root["pullSecret"]) {
    r.pull_secret = rd.str(root["pullSecret"], "pullSecret");
    if (!is_recipe_name(r.pull_secret))
      rd.fail(root["pullSecret"], "pullSecret", quote(r.pull_secret) + " is not a Kubernetes secret name");
  }
}

}  // namespace

Result<Recipe> parse_recipe(const std::string& text, const std::filesystem::path& file) {
  Recipe r;
  r.file = file;
  const std::string label = file.filename().string();
  if (text.size() > k_recipe_max_bytes)
    return input_error(label + ": larger than " + std::to_string(k_recipe_max_bytes) + " bytes; not a recipe");
  auto root = load_yaml_input(text, label);
  if (!root) return root.error();
  try {
    if (!root->IsDefined() || root->IsNull()) return input_error(label + ": empty recipe");
    Reader rd(r);
    read(rd, *root, r);
  } catch (const YAML::Exception& e) {
    return input_error(label + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) + ": " + e.msg);
  } catch (const Error& e) {
    return Failure{e.kind(), e.what()};
  }
  return r;
}

std::string to_string(PackageFormat f) { return f == PackageFormat::Apt ? "apt" : "rpm-md"; }

PackageFormat os_package_format(const std::string& os) {
  for (const char* family : {"rhel", "rocky", "ol", "rhcos", "centos", "almalinux", "fedora"})
    if (starts_with(os, family) && os.size() > std::strlen(family) && std::isdigit(static_cast<unsigned char>(os[std::strlen(family)])))
      return PackageFormat::RpmMd;
  return PackageFormat::Apt;
}

bool doca_builds_on_node(const Recipe& r) {
  if (!r.network || r.network->doca_precompiled) return false;
  const auto& ops = r.network->operands;
  return std::find(ops.begin(), ops.end(), "ofedDriver") != ops.end();
}

bool wants_site_packages(const Recipe& r) {
  return !r.packages.sources.empty() && (r.driver_mode == DriverMode::Conventional || doca_builds_on_node(r));
}

Result<Recipe> load_recipe(const std::filesystem::path& file) {
  auto text = read_file(file, k_recipe_max_bytes);
  if (!text) return text.error();
  return parse_recipe(text.value(), file);
}

}  // namespace gb::recipes
