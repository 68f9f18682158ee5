#!/usr/bin/env bash
# The stand-in chart (tests/tools/chart.py from tests/tools/releases.yaml):
#   0. only the code that compares with the real upstream reads ../shared (the
#      list below), so every other suite, script and benchmark runs in a clone;
#   1. a copy of the repository with nothing beside it (no ../shared) makes the
#      chart and resolves the demo's recipe against it;
#   2. when the real chart is at hand (GB_SHARED_DIR, default ../shared), the
#      stand-in resolves every recipe below to the same image closure, driver
#      and warnings, and gives the same install-kit values.yaml. Skipped, with
#      a line saying so, when it is absent.
# Usage: standin_chart.sh GPUBUNDLE   (GB_SOURCE_DIR: the repository)
set -euo pipefail
GB=$1
src=${GB_SOURCE_DIR:?}
shared=${GB_SHARED_DIR:-$src/../shared}
PY=/usr/bin/python3
W=$(mktemp -d -t gb-standin-chart.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tag=v26.7.0

# 0. Who reads ../shared. A new reader belongs here only when it compares with
#    the real upstream and skips with a clear message without it; anything else
#    uses the stand-in chart (helmrepo.py pack --release, chart.py).
readers=$(cd "$src" && grep -rlE 'shared/upstream|/work/shared|GB_SHARED_DIR' --exclude='*.md' \
  scripts tests bench builder bundles common mirror node node-images recipes signing fuzz CMakeLists.txt | sort | xargs)
# The Network Operator readers (network.sh, kit.cmake, test_network.cpp) have no stand-in: they read its two real releases.
# kit_cluster.sh and nccl_cluster.sh run the kit's scripts with real helm and kubectl on the real chart and
# the real MPI Operator manifest as well, when they are there; helm_matrix.sh renders every real chart;
# network_cluster.sh runs network.sh on the real network-operator chart (no stand-in either);
# kit_schemas.sh validates the kit's manifests against the upstream CRDs kept there;
# package_repo_doca.sh (and e2e.cmake, which hands it GB_SHARED_DIR) builds with the real network-operator chart.
allowed="scripts/gen-mig-configs.py tests/CMakeLists.txt tests/cli.cmake tests/e2e.cmake tests/integration/cli_diff.sh \
tests/integration/cli_resolve.sh tests/integration/helm_matrix.sh tests/integration/kit_cluster.sh tests/integration/kit_schemas.sh \
tests/integration/nccl_cluster.sh tests/integration/network.sh tests/integration/network_cluster.sh tests/integration/package_repo_doca.sh \
tests/integration/standin_chart.sh \
tests/kit.cmake \
tests/tools.cmake tests/unit/fixtures.cpp tests/unit/fixtures.hpp tests/unit/test_kit_values.cpp tests/unit/test_network.cpp"
[[ $readers == "$allowed" ]] || fail "files reading ../shared: '$readers'; allowed: '$allowed'"
echo "ok: only the comparisons with the real upstream read ../shared ($(wc -w <<<"$allowed") files)"

# 1. A plain clone: only what the repository tracks, nothing beside it.
mkdir -p "$W/plain/repo"
(cd "$src" && cp -r --parents scripts tests/tools examples recipes/catalog "$W/plain/repo/")
[[ ! -e $W/plain/shared ]] || fail "$W/plain/shared exists"
chart=$(cd "$W/plain/repo" && GB=$GB TOOLS=$PWD/tests/tools bash -c 'source scripts/standin.sh && standin_chart "$1" "$2"' _ "$W/gen" "$tag") ||
  fail "standin_chart in a clone with no ../shared"
[[ $chart == "$W/gen/helm/gpu-operator-$tag.tgz" && -f $chart ]] || fail "standin_chart printed '$chart'"
"$GB" -q resolve "$src/examples/precompiled.yaml" --chart "$chart" -o "$W/plain.lock.json" || fail "resolve against the stand-in chart"
"$PY" - "$W/plain.lock.json" <<'PYEOF' || fail "the stand-in chart's lock"
import json, sys
lock = json.load(open(sys.argv[1]))
srcs = [i["source"] for i in lock["images"]]
want = ["nvcr.io/nvidia/driver:580-5.15.0-1065-nvidia-ubuntu22.04", "nvcr.io/nvidia/gpu-operator:v26.7.0",
        "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"]
missing = [w for w in want if w not in srcs]
assert not missing, missing
assert lock["chart"]["version"] == "v26.7.0", lock["chart"]
PYEOF
# Same facts, same bytes.
chart2=$(GB=$GB TOOLS=$src/tests/tools bash -c 'source "$0/scripts/standin.sh" && standin_chart "$1" "$2"' "$src" "$W/gen2" "$tag")
cmp -s "$chart" "$chart2" || fail "two stand-in charts from the same facts differ"
echo "ok: a clone with no ../shared makes the $tag chart and resolves the demo recipe ($("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$W/plain.lock.json") images)"

# 2. The same closure as the real chart.
real=$shared/upstream/gpu-operator/$tag
if [[ ! -f $real/Chart.yaml ]]; then
  echo "SKIP (comparison only): $real is absent, so the stand-in cannot be compared with the real chart"
  exit 0
fi
"$PY" "$src/tests/tools/helmrepo.py" pack --from "$real" --version "$tag" --out "$W/real" >/dev/null
realtgz=$W/real/gpu-operator-$tag.tgz

# Recipes: the examples for this release, and variants that switch on what
# the examples leave off (VM workloads, DCGM, GDS, node status exporter,
# NFD off, host toolkit, the DRA driver).
mkdir -p "$W/recipes"
# (Not network.yaml: its network-operator chart has no stand-in; kit-network reads the real one.)
for ex in "$src"/examples/*.yaml; do grep -q "version: $tag" "$ex" && ! grep -q '^network:' "$ex" && cp "$ex" "$W/recipes/"; done
base=$src/examples/conventional.yaml
variant() { sed -e "s/^components:/components:\n  $2/" "$base" > "$W/recipes/$1.yaml"; }
variant all-on 'dcgm: true\n  gds: true\n  gdrcopy: true\n  nodeStatusExporter: true'
variant nfd-off 'node-feature-discovery: false\n  migManager: false'
sed -e 's/^  platforms: .*/  platforms: [linux\/amd64]\n  workloads: [container, vm-passthrough, vm-vgpu]/' "$base" > "$W/recipes/vm.yaml"
sed -e 's/^sharing:.*/toolkit: {mode: host}/' "$src/examples/precompiled.yaml" > "$W/recipes/host-toolkit.yaml"
# The DRA driver: the GPUCluster stack (no MIG manager, so no mig settings).
sed -e '/^mig:/d' -e 's/^components:/components:\n  draDriver: true/' "$base" > "$W/recipes/dra.yaml"

n=0
for r in "$W"/recipes/*.yaml; do
  name=$(basename "$r" .yaml)
  for which in real gen; do
    c=$realtgz; [[ $which == gen ]] && c=$chart
    "$GB" --json resolve "$r" --chart "$c" -o "$W/$name.$which.lock.json" > /dev/null 2> "$W/$name.$which.err" ||
      fail "$name: resolve against the $which chart: $(cat "$W/$name.$which.err")"
    "$GB" -q overrides "$W/$name.$which.lock.json" --registry registry.site:5000/gpu --chart "$c" -o "$W/$name.$which.kit" ||
      fail "$name: overrides with the $which chart"
  done
  "$PY" - "$W/$name.real.lock.json" "$W/$name.gen.lock.json" <<'PYEOF' || fail "$name: the stand-in chart resolves differently"
import json, sys
def view(p):
    l = json.load(open(p))
    return {"images": l["images"], "driver": l.get("driver"), "target": l.get("target"), "warnings": l.get("warnings")}
a, b = view(sys.argv[1]), view(sys.argv[2])
for k in a:
    if k == "images":
        ra, rb = ({json.dumps(i, sort_keys=True) for i in x[k]} for x in (a, b))
        for i in sorted(ra - rb): print(f"  only with the real chart: {i}", file=sys.stderr)
        for i in sorted(rb - ra): print(f"  only with the stand-in:   {i}", file=sys.stderr)
    if a[k] != b[k]:
        print(f"{k} differs" + ("" if k == "images" else f":\n  real:     {json.dumps(a[k])}\n  stand-in: {json.dumps(b[k])}"), file=sys.stderr)
assert a == b
PYEOF
  diff -u "$W/$name.real.kit/values.yaml" "$W/$name.gen.kit/values.yaml" >&2 || fail "$name: install-kit values.yaml differs"
  n=$((n + 1))
done
echo "ok: $n recipes resolve to the same closure, driver and warnings, and the same kit values, with the stand-in and the real $tag chart"
echo "standin-chart: ok"
