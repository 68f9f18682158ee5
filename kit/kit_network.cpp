// The NVIDIA Network Operator's part of the kit (a lock with a network
// section, recipes/network.hpp): network-operator-values.yaml for its chart
// and nic-cluster-policy.yaml, both naming only the site registry, and
// network.sh, which installs the one and applies the other.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "kit/kit.hpp"
#include "kit/kit_detail.hpp"
#include "common/strings.hpp"
#include "recipes/catalog.hpp"
#include "recipes/chart_source.hpp"
#include "recipes/network.hpp"

namespace gb::kit::detail {

using json = nlohmann::json;

namespace {

// The parts after "network:" of a placement's components: an image may be
// both an operand's and a subchart's (the SR-IOV device plugin).
std::vector<std::string> network_keys(const Placement& p) {
  std::vector<std::string> out;
  for (const auto& c : p.image->components)
    if (recipes::is_network_component(c)) out.push_back(c.substr(recipes::k_network_component_prefix.size()));
  return out;
}

bool has_network_key(const Placement& p, const std::string& key) {
  auto keys = network_keys(p);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// network.sh: the Network Operator's chart with network-operator-values.yaml,
// then nic-cluster-policy.yaml once its CRD is established, then a wait for
// the operator to report the policy ready. Its prerequisites, namespace and
// pull secret checks are install.sh's (kit_scripts.cpp).
constexpr const char* k_network = R"SH(#!/usr/bin/env bash
# network.sh: install the NVIDIA Network Operator from the site registry with the values
# in this kit, apply nic-cluster-policy.yaml and wait until the operator reports it ready.
#
# Usage: ./network.sh [--dry-run] [--timeout S]
#   --dry-run    check everything, say what would be done, pass --dry-run to helm and kubectl; changes nothing
#   --timeout S  seconds for helm --wait, then for the NicClusterPolicy to become ready (default 900)
#   -h, --help   print this help
#
# Environment:
#   GPUBUNDLE_NETWORK_CHART      the chart .tgz or folder (default: the .tgz next to this script)
#   GPUBUNDLE_NETWORK_NAMESPACE  the release namespace (default @NAMESPACE@)
#   GPUBUNDLE_NAMESPACE          the GPU Operator's namespace, where the pull secret is copied from (default @GPU_NAMESPACE@)
#   GPUBUNDLE_POLL               seconds between looks (default 10)
@HEADER@
set -euo pipefail
@USAGE@

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
release=@RELEASE@
version=@VERSION@
namespace="${GPUBUNDLE_NETWORK_NAMESPACE:-@NAMESPACE@}"
chart_file=@CHART_FILE@
chart="${GPUBUNDLE_NETWORK_CHART:-$here/$chart_file}"
values="$here/network-operator-values.yaml"
policy_file="$here/nic-cluster-policy.yaml"
poll="${GPUBUNDLE_POLL:-10}"
pull_secret=@PULL_SECRET@
registry=@REGISTRY@
policy=@POLICY@
policy_crd=nicclusterpolicies.mellanox.com
gpu_namespace="${GPUBUNDLE_NAMESPACE:-@GPU_NAMESPACE@}"
nfd_crd=@NFD_CRD@
ufm_secret=@UFM_SECRET@
repo_service=@REPO_SERVICE@
repo_service_host=@REPO_SERVICE_HOST@
repo_config_map=@REPO_CONFIG_MAP@
repo_ca_map=@REPO_CA_MAP@

dry_run=0
timeout=900
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --timeout) [ "$#" -ge 2 ] || { echo "network.sh: --timeout needs a number of seconds" >&2; exit 2; }; timeout="$2"; shift ;;
    --timeout=*) timeout="${1#*=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "network.sh: unknown argument: $1 (usage: ./network.sh [--dry-run] [--timeout S]; see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$timeout" in ''|0|*[!0-9]*) echo "network.sh: --timeout takes whole seconds above 0, not '$timeout'" >&2; exit 2 ;; esac
case "$poll" in ''|0|*[!0-9]*) echo "network.sh: GPUBUNDLE_POLL takes whole seconds above 0, not '$poll'" >&2; exit 2 ;; esac
@NAMESPACE_CHECK@

say() { echo "network.sh: $*"; }
fail() { echo "network.sh: $*" >&2; exit 1; }

@API_CHECK@

@CLUSTER_CHECK@

# Every missing prerequisite is named, not just the first.
missing=()
check_cluster
if [ -n "$nfd_crd" ] && ! kubectl get crd "$nfd_crd" >/dev/null 2>&1; then
  nfd_missing="NFD: the CRD $nfd_crd is not installed; run install.sh first (the GPU Operator's NFD labels the NICs too, so the Network Operator's is off)"
  if [ "$dry_run" -eq 1 ]; then echo "network.sh: warning: $nfd_missing"; else missing+=("$nfd_missing"); fi
fi
if [ -n "$ufm_secret" ] && ! kubectl -n "$namespace" get secret "$ufm_secret" >/dev/null 2>&1 && [ "$dry_run" -eq 0 ]; then
  missing+=("ibKubernetes: the Secret $ufm_secret with the UFM's credentials is not in namespace $namespace (docs/install-kit.md)")
fi
[ -e "$chart" ] || missing+=("chart: $chart not found (put $chart_file next to this script, or set GPUBUNDLE_NETWORK_CHART)")
[ -f "$values" ] || missing+=("values: $values not found")
[ -f "$policy_file" ] || missing+=("NicClusterPolicy: $policy_file not found")
if [ "${#missing[@]}" -gt 0 ]; then
  for m in "${missing[@]}"; do echo "network.sh: missing prerequisite: $m" >&2; done
  exit 1
fi

kubectl_flags=()
helm_flags=()
if [ "$dry_run" -eq 1 ]; then
  kubectl_flags=(--dry-run=client)
  helm_flags=(--dry-run)
  say "dry run: nothing in the cluster changes"
fi
say "context $context, namespace $namespace, release $release (NVIDIA Network Operator $version), chart $chart, images from $registry"

if ! kubectl get namespace "$namespace" >/dev/null 2>&1; then
  say "creating namespace $namespace"
  kubectl create namespace "$namespace" "${kubectl_flags[@]}"
fi

# The operator, its subcharts and every operand pull with the pull secret of
# this namespace: install.sh made it in the GPU Operator's, and it is copied
# from there.
if [ -n "$pull_secret" ] && ! kubectl -n "$namespace" get secret "$pull_secret" >/dev/null 2>&1; then
  config="$(kubectl -n "$gpu_namespace" get secret "$pull_secret" -o jsonpath='{.data.\.dockerconfigjson}' 2>/dev/null || true)"
  if [ -n "$config" ] && [ "$dry_run" -eq 1 ]; then
    say "would copy pull secret $pull_secret from namespace $gpu_namespace"
  elif [ -n "$config" ]; then
    say "copying pull secret $pull_secret from namespace $gpu_namespace"
    secret_file="$(mktemp)"
    trap 'rm -f "$secret_file"' EXIT
    printf '%s' "$config" | base64 -d >"$secret_file" || fail "pull secret $pull_secret in namespace $gpu_namespace holds no base64 .dockerconfigjson"
    kubectl -n "$namespace" create secret generic "$pull_secret" --type=kubernetes.io/dockerconfigjson \
      --from-file=.dockerconfigjson="$secret_file" >/dev/null
    rm -f "$secret_file"
  else
    msg="pull secret $pull_secret is missing in namespaces $namespace and $gpu_namespace; create it with:
  kubectl -n $namespace create secret docker-registry $pull_secret --docker-server=$registry --docker-username=USER --docker-password=PASSWORD"
    if [ "$dry_run" -eq 1 ]; then say "warning: $msg"; else fail "$msg"; fi
  fi
fi

# helm's dry run installs none of the chart's CRDs (its crds/ and those of the
# subcharts the values switch on: helm template --include-crds lists them) and
# cannot map the objects of those kinds (NFD's NodeFeatureRule) before they are
# there: on a cluster without them it can only render the chart.
missing_crds=""
if [ "$dry_run" -eq 1 ]; then
  while read -r crd; do
    [ -z "$crd" ] || kubectl get crd "$crd" >/dev/null 2>&1 || missing_crds+=" $crd"
  done < <(helm template "$release" "$chart" -f "$values" --namespace "$namespace" --include-crds |
    sed -n '/^kind: CustomResourceDefinition/,/^spec:/s/^  name: *//p')
fi
if [ -n "$missing_crds" ]; then
  say "the chart's CRDs are not installed yet (${missing_crds# }), so helm cannot dry-run the release against the cluster; rendering it only (helm template)"
  helm template "$release" "$chart" -f "$values" --namespace "$namespace" >/dev/null
else
  say "helm upgrade --install $release"
  helm upgrade --install "$release" "$chart" -f "$values" --namespace "$namespace" --create-namespace --wait \
    --timeout "${timeout}s" "${helm_flags[@]}"
fi

# repo_config_maps: the DOCA driver's repoConfig (and certConfig) ConfigMaps in
# $namespace, from network-repo/ (network-repo-ca/). Its pods use the host's
# network, where the cluster's DNS names do not resolve: the sources name the
# package repository's Service by its cluster IP instead.
repo_config_maps() {
  [ -d "$here/network-repo" ] || return 0
  local files ip host
  files="$(mktemp -d)"
  # shellcheck disable=SC2064 # the folder is known now
  trap "rm -rf '$files'" RETURN
  cp "$here"/network-repo/* "$files"/
  if [ -n "$repo_service_host" ]; then
    ip="$(kubectl -n "$gpu_namespace" get service "$repo_service" -o jsonpath='{.spec.clusterIP}' 2>/dev/null || true)"
    if [[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then host="$ip"
    elif [[ $ip =~ ^[0-9a-fA-F:]+$ ]]; then host="[$ip]"
    elif [ "$dry_run" -eq 1 ]; then
      say "the package repository's Service $repo_service is not in namespace $gpu_namespace yet (install.sh makes it); the DOCA driver's sources would name its cluster IP"
      host="$repo_service_host"
    else
      fail "the site package repository's Service $repo_service has no cluster IP in namespace $gpu_namespace (got '$ip'); run install.sh first: the DOCA driver builds on the nodes from it"
    fi
    for f in "$files"/*; do
      awk -v from="$repo_service_host" -v to="$host" '{ i = index($0, from); if (i) $0 = substr($0, 1, i - 1) to substr($0, i + length(from)); print }' \
        "$f" >"$f.new" && mv "$f.new" "$f"
    done
  fi
  say "making ConfigMap $repo_config_map (the DOCA driver's package sources) in namespace $namespace"
  kubectl -n "$namespace" create configmap "$repo_config_map" --from-file="$files" --dry-run=client -o yaml |
    kubectl apply -n "$namespace" -f - "${kubectl_flags[@]}"
  if [ -d "$here/network-repo-ca" ]; then
    kubectl -n "$namespace" create configmap "$repo_ca_map" --from-file="$here/network-repo-ca" --dry-run=client -o yaml |
      kubectl apply -n "$namespace" -f - "${kubectl_flags[@]}"
  fi
}

# The NicClusterPolicy (cluster-scoped) once helm's CRD is established: kubectl
# cannot map the kind before. A dry run on a cluster without the CRD cannot
# check it at all.
if [ "$dry_run" -eq 1 ]; then
  repo_config_maps
  if kubectl get crd "$policy_crd" >/dev/null 2>&1; then
    say "applying nic-cluster-policy.yaml (NicClusterPolicy $policy)"
    kubectl apply -f "$policy_file" "${kubectl_flags[@]}"
  else
    say "nic-cluster-policy.yaml is not passed to kubectl: it cannot check a NicClusterPolicy before the chart installs its CRD $policy_crd"
  fi
  say "dry run complete; a real run then waits up to ${timeout}s for NicClusterPolicy $policy to report state ready"
  exit 0
fi
repo_config_maps
kubectl wait --for=condition=Established "crd/$policy_crd" --timeout="${timeout}s" >/dev/null ||
  fail "the CRD $policy_crd is not established (helm installs it from the chart's crds/); nic-cluster-policy.yaml not applied"
say "applying nic-cluster-policy.yaml (NicClusterPolicy $policy)"
kubectl apply -f "$policy_file"

# The operator sets .status.state to ready once every operand is; until then
# .status.appliedStates says which are not.
say "waiting up to ${timeout}s for NicClusterPolicy $policy to report state ready"
deadline=$((SECONDS + timeout))
state=""
while :; do
  state="$(kubectl get "$policy_crd" "$policy" -o jsonpath='{.status.state}' 2>/dev/null || true)"
  [ "$state" != ready ] || break
  left=$((deadline - SECONDS))
  [ "$left" -gt 0 ] || break
  sleep "$((poll < left ? poll : left))"
done
if [ "$state" = ready ]; then
  say "installed: NVIDIA Network Operator $version in namespace $namespace, NicClusterPolicy $policy ready"
  exit 0
fi
waiting="$(kubectl get "$policy_crd" "$policy" -o jsonpath='{range .status.appliedStates[*]}{.name}={.state}{" "}{end}' 2>/dev/null |
  tr ' ' '\n' | grep -v -e '=ready$' -e '=ignore$' -e '^$' | tr '\n' ' ' || true)"
fail "NicClusterPolicy $policy is not ready after ${timeout}s (state '${state:-none}'${waiting:+; not ready: ${waiting% }}); see kubectl get $policy_crd $policy -o yaml and the pods in $namespace"
)SH";

// Why the Network Operator cannot list tags on `site`, or "". It lists with
// go-containerregistry's default transport: the system CAs of its own image
// (the chart has no CA setting), and https for any host but localhost and
// private IP literals, where it falls back to http.
std::string operator_cannot_list(const SiteRegistry& site, bool private_ca) {
  if (private_ca && !site.plain_http)
    return "its listing trusts only the CAs its own image carries, not the site CA the kit was given (the chart has no CA setting)";
  if (!site.plain_http) return "";
  std::string host = site.host;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  auto octets = split(host, '.');
  bool ipv4 = octets.size() == 4 && std::all_of(octets.begin(), octets.end(), [](const std::string& o) {
                return !o.empty() && o.size() <= 3 && std::all_of(o.begin(), o.end(), ::isdigit) && std::stoi(o) <= 255;
              });
  auto octet = [&](size_t i) { return std::stoi(octets[i]); };
  bool http_ok = host == "localhost" || ends_with(host, ".localhost") || host == "::1" ||
                 (ipv4 && (octet(0) == 127 || octet(0) == 10 || (octet(0) == 172 && octet(1) >= 16 && octet(1) <= 31) ||
                           (octet(0) == 192 && octet(1) == 168)));
  if (http_ok) return "";
  return "its listing speaks plain HTTP only to localhost and private IP addresses, not to " + site.host;
}

}  // namespace

bool doca_uses_site_packages(const recipes::Lock& lock) {
  if (!lock.network || !lock.package_repo || lock.network->doca_precompiled || lock.network->doca_version.empty()) return false;
  const auto& ops = lock.network->operands;
  return std::find(ops.begin(), ops.end(), "ofedDriver") != ops.end();
}

std::vector<KitFile> network_repo_files(const recipes::Lock& lock, const KitOptions& options) {
  std::vector<KitFile> out;
  if (!doca_uses_site_packages(lock)) return out;
  for (auto& [name, text] : package_repo_config(lock, options)) out.push_back({std::string(k_network_repo_dir) + "/" + name, text, 0644});
  if (!options.package_repo_ca.empty())
    out.push_back({std::string(k_network_repo_ca_dir) + "/" + k_package_repo_ca_key, pem_file(options.package_repo_ca), 0644});
  return out;
}

bool gpu_operator_runs_nfd(const recipes::Lock& lock) {
  for (const auto& img : lock.images)
    for (const auto& c : img.components)
      if (c == "node-feature-discovery" || starts_with(c, "node-feature-discovery.")) return true;
  return false;
}

Result<std::string> network_values_yaml(const recipes::Lock& lock, const recipes::Chart& chart, const std::vector<Placement>& placements,
                                        const KitRecipe& recipe, const KitOptions& options) {
  const recipes::LockNetwork& net = *lock.network;
  const recipes::Catalog& catalog = recipes::Catalog::builtin();
  std::vector<std::string> warnings;
  auto images = recipes::network_chart_images(chart, net.operands, catalog, warnings);
  std::vector<std::string> problems;
  Overrides v(chart, problems);
  std::set<std::string> policy_paths;  // NicClusterPolicy images: nic-cluster-policy.yaml
  for (const auto& o : catalog.network_operands())
    for (const auto& pi : o.policy) policy_paths.insert(pi.path);
  using Shape = recipes::NetworkChartImage::Shape;
  for (const auto& p : placements) {
    for (const auto& key : network_keys(p)) {
      if (policy_paths.count(key)) continue;  // nic-cluster-policy.yaml
      auto it = std::find_if(images.begin(), images.end(), [&](const recipes::NetworkChartImage& i) { return i.path == key; });
      if (it == images.end()) {
        problems.push_back("lock component network:" + key + " (image " + p.image->source + ") is no image of chart " +
                           v.chart_label() + "; was the lock resolved against another chart?");
        continue;
      }
      const recipes::Reference& d = p.destination;
      switch (it->shape) {
        case Shape::RepositoryImage:
        case Shape::RepositoryName:
          v.set(key + ".repository", repository_of(d));
          v.set(key + (it->shape == Shape::RepositoryImage ? ".image" : ".name"), image_of(d));
          break;
        case Shape::FullRepository: v.set(key + ".repository", d.name()); break;
        case Shape::String: v.set(key, d.pinned()); continue;
      }
      // Without a tag key the chart renders its appVersion, which is the source's tag already.
      if (!it->tag_key.empty()) {
        if (d.tag.empty()) problems.push_back("image " + p.image->source + ": the chart takes a tag at " + key + "." + it->tag_key);
        else v.set(key + "." + it->tag_key, d.tag);
      }
    }
  }

  // The subcharts the recipe's operands switch, on or off.
  for (const auto& o : catalog.network_operands())
    if (!o.chart_switch.empty())
      v.set_if_present(o.chart_switch, std::find(net.operands.begin(), net.operands.end(), o.name) != net.operands.end());
  // One NFD per cluster (the Network Operator's docs): the GPU Operator's, whose
  // worker labels the NICs too; the NIC NodeFeatureRule stays on.
  if (gpu_operator_runs_nfd(lock)) {
    v.set_if_present("nfd.enabled", false);
    v.set_if_present("nfd.deployNodeFeatureRules", true);
  }
  // The top-level list reaches the operator only: each subchart has its own, in its own shape.
  if (const std::string& secret = recipe.pull_secret; !secret.empty()) {
    v.set_if_present("imagePullSecrets", json::array({secret}));
    for (const auto& [sub, objects] : {std::pair<const char*, bool>{"node-feature-discovery", true},
                                       {"sriov-network-operator", false},
                                       {"maintenance-operator-chart", true}})
      if (chart.subchart(sub) && (std::string(sub) != "node-feature-discovery" || !gpu_operator_runs_nfd(lock)))
        v.set(std::string(sub) + ".imagePullSecrets", objects ? json::array({{{"name", secret}}}) : json::array({secret}));
  }
  if (!problems.empty()) return input_error(join(problems, "\n"));
  return values_text(v, chart, "network-operator-values.yaml",
                     yaml_header(lock, options, "Helm values for chart " + net.chart.name + " " + net.chart.version +
                                                    " (NVIDIA Network Operator " + net.version +
                                                    "): every image from the site registry " + options.registry.str() + "."));
}

Result<std::string> nic_cluster_policy_yaml(const recipes::Lock& lock, const std::vector<Placement>& placements, const KitRecipe& recipe,
                                            const KitOptions& options) {
  const recipes::LockNetwork& net = *lock.network;
  const recipes::Catalog& catalog = recipes::Catalog::builtin();
  if (net.doca_precompiled)
    if (auto why = operator_cannot_list(options.registry, !options.registry_ca.empty()); !why.empty())
      return input_error("network.ofedDriver.precompiled: the Network Operator keeps a precompiled DOCA driver only when its own "
                         "listing of the registry's tags finds it (forcePrecompiled, which the kit sets, stops the driver otherwise), "
                         "and " + why + "; use a registry the operator can reach over https with a publicly trusted certificate, "
                         "or resolve without network.ofedDriver.precompiled (the DOCA driver then builds on each node from the site package repository)");
  json spec = json::object();
  std::vector<std::string> problems;
  for (const auto& name : net.operands) {
    const recipes::NetworkOperand* op = catalog.network_operand(name);
    if (!op) continue;
    for (const auto& pi : op->policy) {  // none for a chart switch: network-operator-values.yaml
      auto p = std::find_if(placements.begin(), placements.end(), [&](const Placement& q) { return has_network_key(q, pi.path); });
      if (p == placements.end()) {
        problems.push_back("network operand " + name + ": the lock has no image of component network:" + pi.path);
        continue;
      }
      const recipes::Reference& d = p->destination;
      json image = {{"repository", repository_of(d)}, {"image", image_of(d)}};
      if (name == "ofedDriver") {
        // The operator appends -<os>-<arch> (precompiled -<kernel>-<os>-<arch>) itself.
        image["version"] = net.doca_version;
        if (net.doca_precompiled) image["forcePrecompiled"] = true;
        // The build on the node installs from the site package repository;
        // network.sh makes these ConfigMaps in the operator's namespace.
        if (doca_uses_site_packages(lock)) {
          image["repoConfig"] = {{"name", k_package_repo_config_map}};
          if (!options.package_repo_ca.empty()) image["certConfig"] = {{"name", k_package_repo_ca_config_map}};
        }
        // One node at a time, drained first (docs/install-kit.md).
        image["upgradePolicy"] = {{"autoUpgrade", true},
                                  {"maxParallelUpgrades", 1},
                                  {"drain", {{"enable", true}, {"force", true}, {"deleteEmptyDir", true}, {"timeoutSeconds", 300}}}};
      } else {
        image["version"] = d.tag.empty() ? d.digest : d.tag;
      }
      if (!recipe.pull_secret.empty()) image["imagePullSecrets"] = json::array({recipe.pull_secret});
      // The resources the NCCL acceptance job asks for (rdma_resource()); as
      // text a site reads and narrows before applying.
      if (name == recipes::k_rdma_shared_operand)
        image["config"] = std::string(R"({"configList": [{"resourceName": ")") + recipes::k_rdma_shared_resource_name +
                          R"(", "rdmaHcaMax": 63, "selectors": {"vendors": ["15b3"]}}]})";
      if (name == recipes::k_sriov_device_operand)
        image["config"] = std::string(R"({"resourceList": [{"resourcePrefix": ")") + recipes::k_sriov_resource_prefix + R"(", "resourceName": ")" +
                          recipes::k_sriov_resource_name + R"(", "selectors": {"vendors": ["15b3"], "isRdma": true}}]})";
      if (name == "nvIpam") image["enableWebhook"] = false;
      if (name == "ibKubernetes") {
        // The CRD requires these; the recipe gives them (network.ibKubernetes).
        image["pKeyGUIDPoolRangeStart"] = net.ib_pkey_guid_pool_start;
        image["pKeyGUIDPoolRangeEnd"] = net.ib_pkey_guid_pool_end;
        image["ufmSecret"] = net.ib_ufm_secret;
      }
      json* at = &spec;
      for (const auto& part : split(pi.path, '.')) at = &(*at)[part];
      *at = std::move(image);
    }
  }
  if (!problems.empty()) return input_error(join(problems, "\n"));
  json policy = {{"apiVersion", "mellanox.com/v1alpha1"},
                 {"kind", "NicClusterPolicy"},
                 {"metadata", {{"name", std::string(k_nic_cluster_policy_name)}}},
                 {"spec", spec}};
  std::string note = "NicClusterPolicy for NVIDIA Network Operator " + net.version + ": every operand image from the site registry " +
                     options.registry.str() +
                     ". The device plugin selectors (vendor 15b3, all Mellanox NICs) are a "
                     "start: narrow them to the site's NICs (deviceIDs, ifNames) before applying.";
  if (spec.contains("ibKubernetes"))
    note += " ibKubernetes reads the UFM credentials from the Secret " + net.ib_ufm_secret +
            ", which the site makes in the operator's namespace before network.sh, and hands out GUIDs from " +
            net.ib_pkey_guid_pool_start + " to " + net.ib_pkey_guid_pool_end + " (recipe network.ibKubernetes).";
  YAML::Emitter out;
  emit_node(out, policy);
  return yaml_header(lock, options, note) + out.c_str() + "\n";
}

std::string network_chart_file(const recipes::Lock& lock) {
  return recipes::chart_file_name(lock.network->chart.name, lock.network->chart.version);
}

std::string network_sh(const recipes::Lock& lock, const KitRecipe& recipe, const KitOptions& options) {
  return fill_script(k_network, lock, options,
                     {{"RELEASE", shell_quote(k_network_release)},
                      {"VERSION", shell_quote(lock.network->version)},
                      {"NAMESPACE", std::string(k_network_namespace)},
                      {"CHART_FILE", shell_quote(network_chart_file(lock))},
                      {"PULL_SECRET", shell_quote(recipe.pull_secret)},
                      {"REGISTRY", shell_quote(options.registry.host)},
                      {"POLICY", shell_quote(k_nic_cluster_policy_name)},
                      {"GPU_NAMESPACE", options.namespace_name},
                      {"NFD_CRD", shell_quote(gpu_operator_runs_nfd(lock) ? "nodefeaturerules.nfd.k8s-sigs.io" : "")},
                      {"UFM_SECRET", shell_quote(lock.network->ib_ufm_secret)},
                      {"REPO_SERVICE", shell_quote(k_package_repo_name)},
                      // The host the kit's sources name, when it is the in-cluster Service.
                      {"REPO_SERVICE_HOST", shell_quote(doca_uses_site_packages(lock) && options.package_repo_url.empty()
                                                            ? std::string(k_package_repo_name) + "." + options.namespace_name + ".svc.cluster.local"
                                                            : "")},
                      {"REPO_CONFIG_MAP", shell_quote(k_package_repo_config_map)},
                      {"REPO_CA_MAP", shell_quote(k_package_repo_ca_config_map)},
                      {"NAMESPACE_CHECK", namespace_check_sh("GPUBUNDLE_NETWORK_NAMESPACE") + "\n" +
                                              namespace_check_sh("GPUBUNDLE_NAMESPACE", "gpu_namespace")}});
}

}  // namespace gb::kit::detail
