#!/usr/bin/env bash
# The Network Operator end to end, as a user runs it: `gpubundle resolve` on a
# recipe with a network section (both charts and the release image list read
# from ../shared in place), then `gpubundle overrides` writes the kit's
# network-operator-values.yaml, nic-cluster-policy.yaml and the chart copy.
# Skips (77) when ../shared/upstream is absent.
set -euo pipefail
gpubundle=$1
src=${GB_SOURCE_DIR:?}
up=${GB_SHARED_DIR:-$src/../shared}/upstream
[[ -d $up/network-operator/v26.4.1 && -d $up/gpu-operator/v26.7.0 ]] || { echo "skipped: $up/{network-operator,gpu-operator} is absent"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/site"
for tag in v26.1.2 v26.4.1; do
  sed -e "s|^  version: v26.4.1|  version: $tag|" -e '/^  ofedDriver:/d' "$src/examples/network.yaml" >"$work/site/fabric.yaml"
  python3 - "$work/site/fabric.yaml" "$up" "$tag" <<'PY'
import sys
path, up, tag = sys.argv[1:]
text = open(path).read().replace("network:\n", f"network:\n  chart: {up}/network-operator/{tag}\n  releaseFile: {up}/network-operator/{tag}/hack/release.yaml\n", 1)
text = text.replace("operator:\n  version: v26.7.0", f"operator:\n  version: v26.7.0\n  chart: {up}/gpu-operator/v26.7.0", 1)
# The DOCA driver builds on the nodes: from the site package repository.
open(path, "w").write(text + "packages:\n  sources:\n  - {name: ubuntu, type: apt, url: 'https://archive.ubuntu.com/ubuntu', "
                      "suites: [jammy], components: [main], keyring: ubuntu.gpg}\n")
PY
  "$gpubundle" --store "$work/store" resolve "$work/site/fabric.yaml" -o "$work/site/fabric.lock.json" >/dev/null 2>"$work/err" ||
    { cat "$work/err"; fail "$tag: resolve"; }
  python3 - "$work/site/fabric.lock.json" "$up/network-operator/$tag/hack/release.yaml" "$tag" <<'PY' || fail "$tag: wrong network closure"
import json, sys, yaml
lock = json.load(open(sys.argv[1])); rel = yaml.safe_load(open(sys.argv[2])); tag = sys.argv[3]
net = lock["network"]
assert net["version"] == tag and net["chart"]["name"] == "network-operator", net
src = {i["source"]: i for i in lock["images"]}
def ref(key, t=None):
    e = rel[key]; return f'{e["repository"]}/{e["image"]}:{t or e["version"]}'
for key in ("RdmaSharedDevicePlugin", "Multus", "CniPlugins", "nvIpam"):
    assert ref(key) in src, (key, ref(key))
for key in ("SriovDevicePlugin", "Ipoib", "IbKubernetes"):
    assert ref(key) not in src, key
doca = ref("Mofed", rel["Mofed"]["version"] + "-ubuntu22.04-amd64")
assert src[doca]["components"] == ["network:ofedDriver"] and src[doca]["platforms"] == ["linux/amd64"], doca
assert net["docaDriver"] == {"version": rel["Mofed"]["version"], "precompiled": False}
assert any(s.startswith("nvcr.io/nvidia/driver:") for s in src)
# One NFD, the GPU Operator's: the network chart's is left out, and said.
assert "nfd" not in net["operands"], net["operands"]
assert any(w.startswith("network.operands: nfd left out") for w in lock["warnings"]), lock["warnings"]
PY
  "$gpubundle" --store "$work/store" overrides "$work/site/fabric.lock.json" --registry registry.site:5000/gpu -o "$work/kit-$tag" \
    >/dev/null 2>"$work/err" || { cat "$work/err"; fail "$tag: overrides"; }
  kit=$work/kit-$tag
  [[ -f $kit/network-operator-${tag#v}.tgz ]] || fail "$tag: the kit has no network-operator chart"
  python3 - "$kit" <<'PY' || fail "$tag: kit network files"
import sys, yaml
kit = sys.argv[1]
ncp = yaml.safe_load(open(f"{kit}/nic-cluster-policy.yaml"))
assert ncp["kind"] == "NicClusterPolicy"
spec = ncp["spec"]
for path in (["ofedDriver"], ["rdmaSharedDevicePlugin"], ["nvIpam"], ["secondaryNetwork", "multus"], ["secondaryNetwork", "cniPlugins"]):
    node = spec
    for p in path: node = node[p]
    assert node["repository"].startswith("registry.site:5000/gpu/"), (path, node)
assert spec["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"] == 1
values = yaml.safe_load(open(f"{kit}/network-operator-values.yaml"))
assert values["operator"]["repository"] == "registry.site:5000/gpu/nvidia/cloud-native", values
assert "node-feature-discovery" not in values, values.get("node-feature-discovery")
assert values["nfd"] == {"enabled": False, "deployNodeFeatureRules": True}, values["nfd"]
assert values["sriovNetworkOperator"]["enabled"] is False
PY
done

# A DOCA driver built on the nodes with no package source: refused, one line.
grep -v -e '^packages:' -e '^  sources:' -e "name: ubuntu, type: apt" "$work/site/fabric.yaml" >"$work/site/nopkg.yaml"
set +e; "$gpubundle" --store "$work/store" resolve "$work/site/nopkg.yaml" >/dev/null 2>"$work/err"; rc=$?; set -e
[[ $rc == 2 ]] || { cat "$work/err"; fail "DOCA build without packages: exit $rc"; }
grep -q "network.ofedDriver: the DOCA driver builds on each node" "$work/err" || { cat "$work/err"; fail "DOCA build without packages: message"; }

# A bad operand is one line naming the field, exit 2.
sed -e 's/operands: \[ofedDriver,/operands: [ofed,/' "$work/site/fabric.yaml" >"$work/site/bad.yaml"
set +e; "$gpubundle" resolve "$work/site/bad.yaml" >/dev/null 2>"$work/err"; rc=$?; set -e
[[ $rc == 2 ]] || fail "bad operand: exit $rc"
grep -q "bad.yaml:[0-9]*: network.operands\[0\]: 'ofed' is not a Network Operator operand; known: ofedDriver" "$work/err" || { cat "$work/err"; fail "bad operand message"; }
[[ $(wc -l <"$work/err") == 1 ]] || { cat "$work/err"; fail "bad operand: more than one line"; }
echo "network: ok"
