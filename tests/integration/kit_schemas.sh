#!/usr/bin/env bash
# Every Kubernetes manifest the install kit writes, validated against its real
# schema with unknown fields refused (tests/tools/k8s_schema.py):
#   - built-in kinds (ConfigMap, Deployment, Service, Pod) against the models of
#     the official Kubernetes Python client (python3-kubernetes), generated from
#     the Kubernetes OpenAPI spec;
#   - MPIJob, PrometheusRule and NicClusterPolicy against the upstream CRDs in
#     ../shared (mpi-operator v0.8.0, prometheus-operator v0.93.0, each
#     network-operator release's chart), skipped with a note when it is absent.
# The kits: kit.sh's conventional recipe with monitoring labels, time-slicing,
# a MIG config, acceptance.nccl and a site package repository in its lock (once
# served in-cluster, once from the site's own https URL with a CA); and, with
# ../shared, examples/network.yaml and a recipe with every network operand over
# both shared network-operator releases, each with acceptance.nccl, so the
# fabric MPIJob (RDMA resource, IPC_LOCK, the Multus annotation) is validated. (What the scripts apply from stdin is
# checked by kit-cluster-install and kit-cluster-nccl, with the real kubectl.)
# Every file of every kit is classified: a manifest (validated), YAML or JSON
# that is no manifest (listed below), or no YAML at all; an unknown file fails,
# so a new kit file cannot slip past. Hand-broken copies (unknown fields at the
# top, in spec and deep; wrong types; a missing required field; an unknown
# kind) must each be refused.
# Usage: kit_schemas.sh GPUBUNDLE SOURCE_DIR
# Skips (77) without python3-jsonschema or python3-kubernetes.
set -euo pipefail
gpubundle=$1
src=$2
PY=/usr/bin/python3
checker=$src/tests/tools/k8s_schema.py
"$PY" -c 'import jsonschema, kubernetes, yaml' 2>/dev/null ||
  { echo "skipped: python3-jsonschema, python3-kubernetes or python3-yaml is not installed (scripts/install-deps.sh)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The upstream CRDs, when ../shared is there. (The kit writes no ServiceMonitor:
# the operator makes the DCGM exporter's from the ClusterPolicy. Its CRD is given
# all the same, so one the kit comes to write is checked.)
up=${GB_SHARED_DIR:-$src/../shared}/upstream
crd_args=()
skip_args=()
if [[ -d $up/crds/mpi-operator-v0.8.0 && -d $up/crds/prometheus-operator-v0.93.0 ]]; then
  crd_args=(--crd "$up/crds/mpi-operator-v0.8.0/kubeflow.org_mpijobs.yaml"
            --crd "$up/crds/prometheus-operator-v0.93.0/monitoring.coreos.com_prometheusrules.yaml"
            --crd "$up/crds/prometheus-operator-v0.93.0/monitoring.coreos.com_servicemonitors.yaml")
else
  echo "note: $up/crds is absent: MPIJob and PrometheusRule are skipped, only the built-in kinds are checked"
  skip_args=(--skip kubeflow.org/v2beta1/MPIJob --skip monitoring.coreos.com/v1/PrometheusRule)
fi

# classify FILE (relative to its kit): manifest, other (YAML or JSON that is no
# manifest, or no YAML at all), unknown.
classify() {
  case $1 in
    alerts.yaml | time-slicing.yaml | package-repo.yaml | nic-cluster-policy.yaml | \
      acceptance/nccl-mpijob.yaml | monitoring/grafana-dashboard-configmap.yaml | cuda-smoke-pod.yaml | \
      serve/gpubundle-serve.yaml) echo manifest ;;
    # Helm values; a Prometheus rule file (promtool, kit-monitoring); the
    # dashboard itself and the kit's own manifest (JSON of their own formats).
    values.yaml | network-operator-values.yaml | monitoring/gpu-alerts.rules.yaml | \
      monitoring/grafana-dashboard.json | manifest.json) echo other ;;
    *.sh | *.tgz | containerd/certs.d/*/hosts.toml | containerd/certs.d/*/ca.crt | crio/certs.d/*/ca.crt | \
      crio/registries.conf.d/*.conf | serve/gpubundle-serve.service) echo other ;;
    *) echo unknown ;;
  esac
}

# check_kit KIT WANT_FILES [CHECKER ARGS...]: classifies every file, validates the manifests.
manifests_seen=" "
check_kit() {
  local kit=$1 want=$2 f rel files=()
  shift 2
  while IFS= read -r -d '' f; do
    rel=${f#"$kit"/}
    case $(classify "$rel") in
      manifest) files+=("$f"); manifests_seen+="$rel " ;;
      other) ;;
      *) fail "${kit#"$work"/}: $rel is a kit file this test does not know: add it to classify() in kit_schemas.sh (a manifest is validated)" ;;
    esac
  done < <(find "$kit" -type f -print0 | sort -z)
  for f in $want; do [[ -f $kit/$f ]] || fail "${kit#"$work"/}: $f is missing"; done
  "$PY" "$checker" "$@" "${files[@]}" >"$work/check.out" 2>&1 || { cat "$work/check.out"; fail "${kit#"$work"/}: a manifest does not validate"; }
  grep -v '^k8s_schema.py: ' "$work/check.out" || true   # skipped kinds, said so
  echo "ok: ${kit#"$work"/}: ${#files[@]} manifest files, valid: $(tail -n 1 "$work/check.out" | sed 's/.*checked: //')"
}

# --- the conventional kit ----------------------------------------------------
"$PY" "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
chart=$work/gpu-operator-v26.7.0.tgz
sed 's/^extraImages:.*//' "$src/examples/conventional.yaml" >"$work/recipe.yaml"
cat >>"$work/recipe.yaml" <<'EOF'
extraImages: [nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04]
sharing:
  timeSlicing: {replicas: 4, renameByDefault: true}
monitoring:
  prometheusLabels: {release: prom, team: gpu}
  dashboardLabels: {grafana_dashboard: "1"}
acceptance:
  nccl:
    image: ghcr.io/example/nccl-tests:2.19.6
    nodes: 2
    gpusPerNode: 8
    mpiOperator: {install: true}
EOF
"$gpubundle" -q resolve "$work/recipe.yaml" --chart "$chart" -o "$work/lock.json"
# A site package repository, as kit_cluster.sh adds it; fake digests.
"$PY" - "$work/lock.json" <<'EOF'
import hashlib, json, sys
path = sys.argv[1]
lock = json.load(open(path))
lock["images"].append({"components": ["packageRepo"], "source": "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab",
                       "platforms": ["linux/amd64"], "destination": "", "digest": "", "origin": "built"})
lock["images"].sort(key=lambda i: i["source"])
for image in lock["images"]:
    image["digest"] = "sha256:" + hashlib.sha256(image["source"].encode()).hexdigest()
lock["packageRepo"] = {"format": "apt", "fingerprint": "A" * 40,
                       "publicKey": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0test\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n"}
json.dump(lock, open(path, "w"), indent=2, sort_keys=True)
EOF
conv_files="alerts.yaml time-slicing.yaml package-repo.yaml acceptance/nccl-mpijob.yaml monitoring/grafana-dashboard-configmap.yaml mig.sh"
kit=$work/kit
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$kit"
check_kit "$kit" "$conv_files" "${crd_args[@]}" "${skip_args[@]}"
grep -q '^kind: Deployment' "$kit/package-repo.yaml" || fail "package-repo.yaml has no Deployment"

# The same lock, the repository served by the site over https with its own CA.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" -days 2 -subj /CN=repo-ca 2>/dev/null
kit_url=$work/kit-url
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$kit_url" \
  --package-repo-url https://repo.site.example/ubuntu/ --package-repo-ca "$work/ca.crt"
check_kit "$kit_url" "$conv_files" "${crd_args[@]}" "${skip_args[@]}"
grep -q 'name: "\?gpubundle-repo-ca' "$kit_url/package-repo.yaml" || fail "package-repo.yaml has no CA ConfigMap"

# The same lock served by `gpubundle serve` (docs/serve.md): its DaemonSets too.
kit_serve=$work/kit-serve
"$gpubundle" -q overrides "$work/lock.json" --serve registry.site:5443/gpu --chart "$chart" -o "$kit_serve"
check_kit "$kit_serve" "$conv_files serve/gpubundle-serve.yaml serve/gpubundle-serve.service" "${crd_args[@]}" "${skip_args[@]}"
grep -q '^kind: DaemonSet' "$kit_serve/serve/gpubundle-serve.yaml" || fail "serve/gpubundle-serve.yaml has no DaemonSet"

# What the scripts apply from stdin (verify.sh's smoke pod, nccl-allreduce.sh's
# MPIJob) is checked where they run with the real kubectl: kit-cluster-install
# and kit-cluster-nccl validate the bodies the API stand-in received.

ncp_kit='' ncp_crd_file='' ncp_mpijob=''

# --- the network kits ----------------------------------------------------------
network_tags=()
for tag in v26.1.2 v26.4.1; do [[ -d $up/network-operator/$tag && -d $up/gpu-operator/v26.7.0 ]] && network_tags+=("$tag"); done
((${#network_tags[@]})) || echo "note: $up/network-operator is absent: no network kit, no NicClusterPolicy checked"
for tag in "${network_tags[@]}"; do
  # The NicClusterPolicy CRD of this release, wherever its chart keeps it.
  mapfile -t ncp_crd < <(grep -rl --include='*.yaml' -e '^kind: CustomResourceDefinition' "$up/network-operator/$tag/chart" |
    xargs grep -l '^    kind: NicClusterPolicy$')
  ((${#ncp_crd[@]} == 1)) || fail "$tag: not one NicClusterPolicy CRD in its chart: ${ncp_crd[*]}"
  all_operands=$("$PY" -c 'import sys, yaml; print(", ".join(yaml.safe_load(open(sys.argv[1]))["operands"]))' "$src/recipes/catalog/network.yaml")
  for variant in example all; do
    site=$work/site-$tag-$variant
    mkdir -p "$site"
    sed -e "s|^  version: v26.4.1|  version: $tag|" "$src/examples/network.yaml" >"$site/fabric.yaml"
    if [[ $variant == all ]]; then  # every operand, a pull secret for each
      # (the DOCA driver built on the nodes, from a site package repository; the site's UFM pool and Secret)
      sed -i -e '/^  ofedDriver:/d' -e "s|^  operands: .*|  operands: [$all_operands]\n  ibKubernetes: {pKeyGUIDPoolRangeStart: '0a:00:00:00:00:00:00:00', pKeyGUIDPoolRangeEnd: '0a:00:00:00:00:00:ff:ff', ufmSecret: site-ufm}|" "$site/fabric.yaml"
      printf '%s\n' "pullSecret: site-registry" "packages:" "  sources:" \
        "  - {name: ubuntu, type: apt, url: 'https://archive.ubuntu.com/ubuntu', suites: [jammy], components: [main], keyring: ubuntu.gpg}" >>"$site/fabric.yaml"
      printf '%s\n' 'acceptance:' '  nccl:' '    image: ghcr.io/example/nccl-tests:2.19.6' >>"$site/fabric.yaml"
    else  # the NCCL workers on a secondary network
      printf '%s\n' 'acceptance:' '  nccl:' '    image: ghcr.io/example/nccl-tests:2.19.6' '    network: nvidia-network-operator/roce-net' >>"$site/fabric.yaml"
    fi
    "$PY" - "$site/fabric.yaml" "$up" "$tag" <<'PY'
import sys
path, up, tag = sys.argv[1:]
text = open(path).read().replace("network:\n", f"network:\n  chart: {up}/network-operator/{tag}\n  releaseFile: {up}/network-operator/{tag}/hack/release.yaml\n", 1)
open(path, "w").write(text.replace("operator:\n  version: v26.7.0", f"operator:\n  version: v26.7.0\n  chart: {up}/gpu-operator/v26.7.0", 1))
PY
    "$gpubundle" --store "$work/store" resolve "$site/fabric.yaml" -o "$site/fabric.lock.json" >/dev/null 2>"$work/err" ||
      { cat "$work/err"; fail "$tag $variant: resolve"; }
    "$gpubundle" -q --store "$work/store" overrides "$site/fabric.lock.json" --registry registry.site:5000/gpu -o "$site/kit" ||
      fail "$tag $variant: overrides"
    check_kit "$site/kit" "nic-cluster-policy.yaml alerts.yaml acceptance/nccl-mpijob.yaml" "${crd_args[@]}" "${skip_args[@]}" --crd "${ncp_crd[0]}"
    # The fabric lines are there to be validated (the unit tests check their values).
    "$PY" - "$site/kit/acceptance/nccl-mpijob.yaml" "$variant" <<'PY' || fail "$tag $variant: the fabric MPIJob"
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
c = worker["spec"]["containers"][0]
assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"], c
assert c["resources"]["requests"] == {"rdma/rdma_shared_device_a": 1}, c["resources"]
assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 1}, c["resources"]
want = {"k8s.v1.cni.cncf.io/networks": "nvidia-network-operator/roce-net"} if sys.argv[2] == "example" else None
assert worker["metadata"].get("annotations") == want, worker["metadata"]
PY
    if [[ $variant == example ]]; then ncp_mpijob=$site/kit/acceptance/nccl-mpijob.yaml; fi
    ncp_kit=$site/kit ncp_crd_file=${ncp_crd[0]}
  done
done

# --- the checker can fail ------------------------------------------------------
# refused NAME FILE DOC PATH VALUE PATTERN [CHECKER ARGS...]: a copy of FILE whose
# document DOC has PATH (a JSON list of keys) set to VALUE (JSON, or DELETE) is
# refused with exactly one problem line, matching PATTERN.
refused() {
  local name=$1 file=$2 doc=$3 path=$4 value=$5 pattern=$6
  shift 6
  "$PY" - "$file" "$doc" "$path" "$value" "$work/broken.yaml" <<'PY'
import json, sys, yaml
src, doc, path, value, out = sys.argv[1:]
docs = list(yaml.safe_load_all(open(src)))
node, keys = docs[int(doc) - 1], json.loads(path)
for k in keys[:-1]:
    node = node[k]
assert value == "DELETE" or keys[-1] not in node or node[keys[-1]] != json.loads(value), "the copy would not change"
if value == "DELETE":
    del node[keys[-1]]
else:
    node[keys[-1]] = json.loads(value)
yaml.safe_dump_all(docs, open(out, "w"), sort_keys=False)
PY
  check_refused "$name" "$pattern" "$@"
}
# check_refused NAME PATTERN [CHECKER ARGS...]: $work/broken.yaml is refused, one line matching PATTERN.
check_refused() {
  local name=$1 pattern=$2
  shift 2
  if "$PY" "$checker" "$@" "$work/broken.yaml" >"$work/neg.out" 2>/dev/null; then fail "$name: the broken copy validates"; fi
  [[ $(wc -l <"$work/neg.out") == 1 ]] || fail "$name: not one problem line: $(cat "$work/neg.out")"
  grep -qE -- "$pattern" "$work/neg.out" || fail "$name: $(cat "$work/neg.out")"
  echo "ok: refused: $name"
}
# The patterns: ERE, the JSON path's $ and dots escaped.
at='broken\.yaml: document [0-9]+ \([A-Za-z]+/[a-z-]+\): \$'
pr=$kit/package-repo.yaml
refused "Deployment: a field at the top" "$pr" 2 '["extra"]' 1 "$at\.extra: unknown field \(not in V1Deployment\)"
refused "Deployment: a field in spec" "$pr" 2 '["spec", "replica"]' 1 "$at\.spec\.replica: unknown field \(not in V1DeploymentSpec\)"
refused "Deployment: a field deep in a container" "$pr" 2 '["spec", "template", "spec", "containers", 0, "securityContext", "runAsUsr"]' 1 \
  "$at\.spec\.template\.spec\.containers\[0\]\.securityContext\.runAsUsr: unknown field \(not in V1SecurityContext\)"
refused "Deployment: a misspelt metadata field" "$pr" 2 '["metadata", "lables"]' '{"a": "b"}' "$at\.metadata\.lables: unknown field \(not in V1ObjectMeta\)"
refused "Deployment: replicas a string" "$pr" 2 '["spec", "replicas"]' '"1"' "$at\.spec\.replicas: expected an integer, got string '1'"
refused "Deployment: a container without a name" "$pr" 2 '["spec", "template", "spec", "containers", 0, "name"]' DELETE \
  "$at\.spec\.template\.spec\.containers\[0\]\.name: required field missing \(V1Container\)"
refused "Deployment: a limit that is no quantity" "$pr" 2 '["spec", "template", "spec", "containers", 0, "resources"]' '{"limits": {"cpu": "lots"}}' \
  "$at\.spec\.template\.spec\.containers\[0\]\.resources\.limits\.cpu: 'lots' is not a quantity"
refused "Service: a port a string" "$pr" 3 '["spec", "ports", 0, "port"]' '"8080"' "$at\.spec\.ports\[0\]\.port: expected an integer"
refused "Service: a targetPort a list" "$pr" 3 '["spec", "ports", 0, "targetPort"]' '[8080]' "$at\.spec\.ports\[0\]\.targetPort: expected an integer or a string"
refused "ConfigMap: data a number" "$kit/time-slicing.yaml" 1 '["data", "any"]' 1 "$at\.data\.any: expected a string, got integer"
refused "ConfigMap: an unknown kind" "$kit/time-slicing.yaml" 1 '["kind"]' '"ConfigMapp"' "$at\.kind: unknown kind v1 ConfigMapp"
refused "ConfigMap: a kind of another group" "$kit/time-slicing.yaml" 1 '["apiVersion"]' '"apps/v1"' "$at\.kind: unknown kind apps/v1 ConfigMap"
{ cat "$kit/time-slicing.yaml"; echo "kind: ConfigMap"; } >"$work/broken.yaml"
check_refused "ConfigMap: a key twice" "broken\.yaml: not readable as YAML: .*duplicate key 'kind'"
if ((${#crd_args[@]})); then
  job=$kit/acceptance/nccl-mpijob.yaml
  refused "MPIJob: a field at the top" "$job" 1 '["extra"]' 1 "$at\.extra: unknown field \(not in the CRD schema\)" "${crd_args[@]}"
  refused "MPIJob: a field in spec" "$job" 1 '["spec", "slotsPerWorkers"]' 8 "$at\.spec\.slotsPerWorkers: unknown field" "${crd_args[@]}"
  refused "MPIJob: a field deep in the worker's container" "$job" 1 \
    '["spec", "mpiReplicaSpecs", "Worker", "template", "spec", "containers", 0, "resources", "limitz"]' '{}' \
    "$at\.spec\.mpiReplicaSpecs\.Worker\.template\.spec\.containers\[0\]\.resources\.limitz: unknown field" "${crd_args[@]}"
  refused "MPIJob: slotsPerWorker a string" "$job" 1 '["spec", "slotsPerWorker"]' '"8"' "$at\.spec\.slotsPerWorker: '8' is not of type 'integer'" "${crd_args[@]}"
  refused "MPIJob: a GPU limit that is a boolean" "$job" 1 \
    '["spec", "mpiReplicaSpecs", "Worker", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"]' true \
    "$at\.spec\.mpiReplicaSpecs\.Worker\.template\.spec\.containers\[0\]\.resources\.limits\['nvidia\.com/gpu'\]: True is not valid" "${crd_args[@]}"
  refused "MPIJob: a misspelt metadata field" "$job" 1 '["metadata", "namespaces"]' '"x"' "$at\.metadata\.namespaces: unknown field \(not in V1ObjectMeta\)" "${crd_args[@]}"
  if [[ -n $ncp_mpijob ]]; then
    w='["spec", "mpiReplicaSpecs", "Worker", "template"'
    refused "MPIJob: a capability that is no list" "$ncp_mpijob" 1 "$w"', "spec", "containers", 0, "securityContext", "capabilities", "add"]' '"IPC_LOCK"' \
      "$at\.spec\.mpiReplicaSpecs\.Worker\.template\.spec\.containers\[0\]\.securityContext\.capabilities\.add: 'IPC_LOCK' is not of type 'array'" "${crd_args[@]}"
    refused "MPIJob: an annotation that is no string" "$ncp_mpijob" 1 "$w"', "metadata", "annotations", "k8s.v1.cni.cncf.io/networks"]' '["roce-net"]' \
      "$at\.spec\.mpiReplicaSpecs\.Worker\.template\.metadata\.annotations\['k8s\.v1\.cni\.cncf\.io/networks'\]: \['roce-net'\] is not of type 'string'" "${crd_args[@]}"
  fi
  refused "PrometheusRule: for a number" "$kit/alerts.yaml" 1 '["spec", "groups", 0, "rules", 1, "for"]' 5 \
    "$at\.spec\.groups\[0\]\.rules\[1\]\.for: 5 is not of type 'string'" "${crd_args[@]}"
  refused "PrometheusRule: a field in a rule" "$kit/alerts.yaml" 1 '["spec", "groups", 0, "rules", 0, "severity"]' '"critical"' \
    "$at\.spec\.groups\[0\]\.rules\[0\]\.severity: unknown field" "${crd_args[@]}"
fi
if [[ -n $ncp_kit ]]; then
  ncp=$ncp_kit/nic-cluster-policy.yaml
  refused "NicClusterPolicy: a field at the top" "$ncp" 1 '["status2"]' '{}' "$at\.status2: unknown field" --crd "$ncp_crd_file"
  refused "NicClusterPolicy: a field in spec" "$ncp" 1 '["spec", "ofedDrivers"]' '{}' "$at\.spec\.ofedDrivers: unknown field" --crd "$ncp_crd_file"
  refused "NicClusterPolicy: a field deep in the upgrade policy" "$ncp" 1 '["spec", "ofedDriver", "upgradePolicy", "drain", "forse"]' true \
    "$at\.spec\.ofedDriver\.upgradePolicy\.drain\.forse: unknown field" --crd "$ncp_crd_file"
  refused "NicClusterPolicy: maxParallelUpgrades a string" "$ncp" 1 '["spec", "ofedDriver", "upgradePolicy", "maxParallelUpgrades"]' '"1"' \
    "$at\.spec\.ofedDriver\.upgradePolicy\.maxParallelUpgrades: '1' is not of type 'integer'" --crd "$ncp_crd_file"
  refused "NicClusterPolicy: an operand without its image" "$ncp" 1 '["spec", "nvIpam", "image"]' DELETE \
    "$at\.spec\.nvIpam: 'image' is a required property" --crd "$ncp_crd_file"
fi
# A kit file this test does not know fails it, even a valid manifest.
cp -r "$kit" "$work/kit-extra"
cp "$kit/time-slicing.yaml" "$work/kit-extra/extra-config.yaml"
if (check_kit "$work/kit-extra" "" "${crd_args[@]}" "${skip_args[@]}") >"$work/extra.out" 2>&1; then fail "an unknown kit file passed"; fi
grep -q 'kit-extra: extra-config.yaml is a kit file this test does not know' "$work/extra.out" || fail "unknown kit file: $(cat "$work/extra.out")"
echo "ok: refused: a kit file the test does not know"
# Without its CRD a custom kind is an error, not a pass.
cp "$kit/alerts.yaml" "$work/broken.yaml"
check_refused "PrometheusRule without its CRD" "$at\.kind: unknown kind monitoring\.coreos\.com/v1 PrometheusRule"

# Every manifest file the kit can write was checked.
want="alerts.yaml time-slicing.yaml package-repo.yaml acceptance/nccl-mpijob.yaml monitoring/grafana-dashboard-configmap.yaml"
((${#network_tags[@]})) && want+=" nic-cluster-policy.yaml"
for f in $want; do
  [[ $manifests_seen == *" $f "* ]] || fail "$f was never checked"
done
skipped=""
((${#skip_args[@]})) && skipped+="; skipped without ../shared: MPIJob and PrometheusRule"
((${#network_tags[@]})) || skipped+="; not made without ../shared: nic-cluster-policy.yaml"
echo "PASS: the kit's manifests validate: $(tr ' ' '\n' <<<"$manifests_seen" | sort -u | xargs)$skipped"
