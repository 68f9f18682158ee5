#!/usr/bin/env bash
# The kit's values with the real charts and the real helm, over every GPU
# Operator release in ../shared and a matrix of recipe shapes, and the Network
# Operator releases with their NicClusterPolicy:
#   - gpubundle resolve (the chart folder from ../shared) and overrides;
#   - `helm lint` of the kit's chart copy with the kit's values;
#   - `helm template`, then tests/tools/operand_check.py: every image a
#     rendered workload runs and every operand image the operator would deploy
#     from the rendered ClusterPolicy (its isStateEnabled at that tag) is at the
#     site registry and in the lock, and an operand the lock does not carry is
#     switched off in values.yaml itself. Half the cases give the lock digests,
#     so that digest-pinned values are rendered too.
# Shapes: conventional with DCGM, GDS, GDRCopy, the node status exporter, the
# ServiceMonitor, time-slicing and a MIG layout; precompiled; host driver and
# toolkit with [container, vm-passthrough]; [container, vm-vgpu] on two
# platforms; the network section with every operand (precompiled DOCA).
# Usage: helm_matrix.sh GPUBUNDLE SOURCE_DIR
# Skips (77) without the real helm (scripts/install-deps.sh) or ../shared.
set -euo pipefail
gpubundle=$1
SRC=$2
up=${GB_SHARED_DIR:-$SRC/../shared}/upstream
work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_clients_or_skip
[[ -d $up/gpu-operator ]] || { echo "SKIP: $up/gpu-operator is absent (the real charts)"; exit 77; }
check="$PY $SRC/tests/tools/operand_check.py"
registry=registry.site:5000/gpu
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data

# recipe FILE TAG SHAPE: a recipe of that shape for release TAG.
recipe() {
  local file=$1 tag=$2 shape=$3 default branch
  default=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["driver"]["version"])' "$up/gpu-operator/$tag/chart/values.yaml")
  branch=${default%%.*}
  {
    echo "apiVersion: gpubundle/v1"
    echo "kind: Recipe"
    echo "metadata: {name: matrix-$shape}"
    echo "operator: {version: $tag, chart: $up/gpu-operator/$tag/chart}"
    echo "destination: {registry: registry.site.internal:5000, prefix: gpu}"
    case $shape in
      conventional)
        local gdrcopy=""
        grep -q '^gdrcopy:' "$up/gpu-operator/$tag/chart/values.yaml" && gdrcopy=", gdrcopy: true"
        echo "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, platforms: [linux/amd64]}"
        echo "driver: {mode: conventional, kernelModuleType: open}"  # GDS needs the open modules
        echo "components: {dcgm: true, gds: true, nodeStatusExporter: true, dcgmExporter: {serviceMonitor: true}$gdrcopy}"
        echo "sharing: {timeSlicing: {replicas: 4}}"
        echo "mig: {strategy: mixed, config: all-disabled}" ;;
      precompiled)
        echo "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [5.15.0-126-generic, 5.15.0-1065-nvidia]}"
        echo "driver: {mode: precompiled, branch: \"$branch\"}" ;;
      host-vm)
        echo "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [5.15.0-126-generic], workloads: [container, vm-passthrough]}"
        echo "driver: {mode: host, version: \"$default\"}"
        echo "toolkit: {mode: host}" ;;
      vgpu)
        echo "target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, platforms: [linux/amd64, linux/arm64], workloads: [container, vm-vgpu]}"
        echo "driver: {mode: conventional}" ;;
    esac
  } >"$file"
}

# digests LOCK: every image gets a (made-up) digest, as after mirror.
digests() {
  "$PY" - "$1" <<'EOF'
import hashlib, json, sys
lock = json.load(open(sys.argv[1]))
for image in lock["images"]:
    image["digest"] = "sha256:" + hashlib.sha256(image["source"].encode()).hexdigest()
json.dump(lock, open(sys.argv[1], "w"), indent=2, sort_keys=True)
EOF
}

# render NAME KIT TGZ VALUES NAMESPACE: helm lint and helm template (the release named
# after the chart), output in $work/NAME.yaml.
render() {
  local name=$1 kit=$2 tgz=$3 values=$4 ns=$5 release
  "$HELM" lint "$tgz" -f "$values" --namespace "$ns" >"$work/$name.lint" 2>&1 || { cat "$work/$name.lint"; fail "$name: helm lint"; }
  release=${tgz##*/}
  release=${release%%-[0-9v]*}
  "$HELM" template "$release" "$tgz" -f "$values" --namespace "$ns" >"$work/$name.yaml" 2>"$work/$name.err" ||
    { cat "$work/$name.err"; fail "$name: helm template"; }
  [[ -s $work/$name.yaml ]] || fail "$name: helm template rendered nothing from $kit"
}

cases=0
n=0
for dir in "$up"/gpu-operator/v*/; do
  tag=$(basename "$dir")
  [[ -d $dir/chart/templates ]] || { echo "note: $tag has no chart/ (skipped)"; continue; }
  for shape in conventional precompiled host-vm vgpu; do
    name=$tag-$shape
    recipe "$work/$name.recipe.yaml" "$tag" "$shape"
    "$gpubundle" --store "$work/store" -q resolve "$work/$name.recipe.yaml" -o "$work/$name.lock.json" 2>"$work/$name.err" ||
      { cat "$work/$name.recipe.yaml" "$work/$name.err"; fail "$name: resolve"; }
    n=$((n + 1))
    (( n % 2 )) && digests "$work/$name.lock.json"
    "$gpubundle" --store "$work/store" -q overrides "$work/$name.lock.json" --registry "$registry" -o "$work/$name.kit" 2>"$work/$name.err" ||
      { cat "$work/$name.err"; fail "$name: overrides"; }
    tgz=("$work/$name.kit"/gpu-operator-*.tgz)
    render "$name" "$work/$name.kit" "${tgz[0]}" "$work/$name.kit/values.yaml" gpu-operator
    $check gpu --rendered "$work/$name.yaml" --values "$work/$name.kit/values.yaml" --lock "$work/$name.lock.json" \
      --registry "$registry" --tag "$tag" --os-tag ubuntu22.04 >"$work/$name.check" ||
      { cat "$work/$name.check"; fail "$name: the rendered release runs an image the kit does not carry"; }
    echo "ok: $name: $(cat "$work/$name.check")"
    cases=$((cases + 1))
  done
done

# The Network Operator: each release with the newest GPU Operator in ../shared.
gpu_tag=$(printf '%s\n' "$up"/gpu-operator/v*/chart/Chart.yaml | sort -V | tail -1)
gpu_tag=$(basename "${gpu_tag%/chart/Chart.yaml}")
for dir in "$up"/network-operator/v*/; do
  [[ -d $dir/chart/templates ]] || continue
  tag=$(basename "$dir")
  name=network-$tag
  cat >"$work/$name.recipe.yaml" <<EOF
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: matrix-network}
operator: {version: $gpu_tag, chart: $up/gpu-operator/$gpu_tag/chart}
target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [5.15.0-126-generic], platforms: [linux/amd64, linux/arm64]}
driver: {mode: conventional, kernelModuleType: open}
network:
  version: $tag
  chart: $dir/chart
  releaseFile: $dir/hack/release.yaml
  operands: [ofedDriver, rdmaSharedDevicePlugin, sriovDevicePlugin, multus, cniPlugins, ipoib, nvIpam, ibKubernetes, nfd, sriovNetworkOperator]
  ofedDriver: {precompiled: true}
  ibKubernetes: {pKeyGUIDPoolRangeStart: "02:00:00:00:00:00:00:00", pKeyGUIDPoolRangeEnd: "02:00:00:00:00:FF:FF:FF", ufmSecret: site-ufm}
# The GPU Operator's NFD off, so that the network chart deploys its own (one per cluster).
components: {node-feature-discovery: false}
destination: {registry: registry.site.internal:5000, prefix: gpu}
EOF
  "$gpubundle" --store "$work/store" -q resolve "$work/$name.recipe.yaml" -o "$work/$name.lock.json" 2>"$work/$name.err" ||
    { cat "$work/$name.err"; fail "$name: resolve"; }
  digests "$work/$name.lock.json"
  "$gpubundle" --store "$work/store" -q overrides "$work/$name.lock.json" --registry "$registry" -o "$work/$name.kit" 2>"$work/$name.err" ||
    { cat "$work/$name.err"; fail "$name: overrides"; }
  tgz=("$work/$name.kit"/network-operator-*.tgz)
  render "$name" "$work/$name.kit" "${tgz[0]}" "$work/$name.kit/network-operator-values.yaml" nvidia-network-operator
  $check network --rendered "$work/$name.yaml" --policy "$work/$name.kit/nic-cluster-policy.yaml" --lock "$work/$name.lock.json" \
    --registry "$registry" --os-tag ubuntu22.04 >"$work/$name.check" ||
    { cat "$work/$name.check"; fail "$name: the Network Operator would run an image the kit does not carry"; }
  echo "ok: $name: $(cat "$work/$name.check")"
  cases=$((cases + 1))
done

# The check itself can fail: a kit whose values leave one operand at nvcr.io,
# and one that leaves an uncarried operand to the chart's default.
bases=("$work"/*-conventional.kit)
base=${bases[0]}
tag=$(basename "$base" -conventional.kit)
sed -i '0,/^  repository: "registry.site:5000\/gpu\/nvidia\/k8s"/s//  repository: "nvcr.io\/nvidia\/k8s"/' "$base/values.yaml"
tgz=("$base"/gpu-operator-*.tgz)
render broken "$base" "${tgz[0]}" "$base/values.yaml" gpu-operator
if $check gpu --rendered "$work/broken.yaml" --values "$base/values.yaml" --lock "$work/$tag-conventional.lock.json" \
  --registry "$registry" --tag "$tag" --os-tag ubuntu22.04 >"$work/broken.check"; then
  fail "operand_check.py passed a release with an operand at nvcr.io"
fi
grep -q 'nvcr.io/nvidia/k8s/.* is not at the site registry' "$work/broken.check" || fail "unexpected: $(cat "$work/broken.check")"
kit=$work/$tag-precompiled.kit
"$PY" - "$kit/values.yaml" <<'EOF'
import sys, yaml
path = sys.argv[1]
values = yaml.safe_load(open(path))
del values["vgpuDeviceManager"]["enabled"]
yaml.safe_dump(values, open(path, "w"))
EOF
tgz=("$kit"/gpu-operator-*.tgz)
render unswitched "$kit" "${tgz[0]}" "$kit/values.yaml" gpu-operator
if $check gpu --rendered "$work/unswitched.yaml" --values "$kit/values.yaml" --lock "$work/$tag-precompiled.lock.json" \
  --registry "$registry" --tag "$tag" --os-tag ubuntu22.04 >"$work/unswitched.check"; then
  fail "operand_check.py passed values that leave an operand the lock lacks to the chart's default"
fi
grep -q '^values.yaml vgpuDeviceManager.enabled' "$work/unswitched.check" || fail "unexpected: $(cat "$work/unswitched.check")"
echo "ok: $cases releases x shapes rendered by helm $("$HELM" version --template '{{.Version}}'); the check refuses an operand at nvcr.io and one left to a default"
