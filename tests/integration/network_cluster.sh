#!/usr/bin/env bash
# network.sh with the real kubectl and helm against the API stand-in
# (tests/tools/kube_api.py), for the kit of examples/network.yaml (pullSecret
# added) resolved on the real network-operator v26.4.1 chart from ../shared:
#   - shellcheck; --help prints the usage;
#   - every missing prerequisite named in one run (chart, API server);
#   - a GPUBUNDLE_NETWORK_NAMESPACE that is no namespace name is refused before
#     kubectl runs;
#   - --dry-run on a fresh cluster: nothing written reaches the server, the
#     chart is only rendered (helm cannot dry-run it before its CRDs exist) and
#     the NicClusterPolicy is not passed to kubectl, both said;
#   - without the pull secret: the namespace is made, then it stops with the
#     kubectl command to make the secret, and helm is not run;
#   - with it: the chart's CRDs, the release's objects (every container on the
#     site registry) and then the NicClusterPolicy reach the server; the test
#     plays the operator by setting the policy's status to ready, and network.sh
#     says so; again, everything unchanged; then a --dry-run is helm's own;
#   - GPUBUNDLE_NETWORK_NAMESPACE=net-ops on a fresh cluster: everything in
#     net-ops, nothing in nvidia-network-operator; the policy never ready: the
#     timeout message names the operands that are not.
# Usage: network_cluster.sh GPUBUNDLE SOURCE_DIR
# Skips (77) without the real clients or ../shared/upstream.
set -euo pipefail
gpubundle=$1
SRC=$2
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite
up=${GB_SHARED_DIR:-$SRC/../shared}/upstream
[[ -d $up/network-operator/v26.4.1/chart && -d $up/gpu-operator/v26.7.0 ]] ||
  { echo "SKIP: $up/{network-operator/v26.4.1/chart,gpu-operator/v26.7.0} is absent"; exit 77; }

# The kit: examples/network.yaml on both real charts, with a pull secret; the
# DOCA driver not precompiled (network.sh's recipe, tests/integration/network.sh).
sed -e '/^  ofedDriver:/d' "$SRC/examples/network.yaml" >"$work/fabric.yaml"
"$PY" - "$work/fabric.yaml" "$up" <<'EOF'
import sys
path, up = sys.argv[1:]
text = open(path).read()
text = text.replace("network:\n", f"pullSecret: site-registry\nnetwork:\n  chart: {up}/network-operator/v26.4.1/chart\n"
                                  f"  releaseFile: {up}/network-operator/v26.4.1/hack/release.yaml\n", 1)
text = text.replace("operator:\n  version: v26.7.0", f"operator:\n  version: v26.7.0\n  chart: {up}/gpu-operator/v26.7.0", 1)
open(path, "w").write(text + "packages:\n  sources:\n  - {name: ubuntu, type: apt, url: 'https://archive.ubuntu.com/ubuntu', "
                      "suites: [jammy], components: [main], keyring: ubuntu.gpg}\n")
EOF
"$gpubundle" -q --store "$work/store" resolve "$work/fabric.yaml" -o "$work/lock.json"
# The site package repository `build` would add (its image and key), so that
# the DOCA driver, which builds on the nodes, gets its sources from it.
"$PY" - "$work/lock.json" <<'EOF'
import json, sys
lock = json.load(open(sys.argv[1]))
lock["images"].append({"components": ["packageRepo"], "source": "localhost/gpubundle/package-repo:ubuntu22.04-0123456789ab",
                       "platforms": ["linux/amd64"], "destination": "", "digest": "sha256:" + "c" * 64, "origin": "built"})
lock["images"].sort(key=lambda i: i["source"])
lock["packageRepo"] = {"format": "apt", "fingerprint": "A" * 40,
                       "publicKey": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ0test\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n"}
json.dump(lock, open(sys.argv[1], "w"), indent=2)
EOF
kit=$work/kit
"$gpubundle" -q --store "$work/store" overrides "$work/lock.json" --registry registry.site:5000/gpu -o "$kit"
[ -x "$kit/network.sh" ] || fail "the kit has no executable network.sh: $(ls "$kit")"
[ -f "$kit/network-operator-26.4.1.tgz" ] || fail "the kit has no network-operator chart: $(ls "$kit")"
[ -f "$kit/network-repo/gpubundle.list" ] || fail "the kit has no network-repo/ for the DOCA build: $(ls "$kit")"
if command -v shellcheck >/dev/null; then
  shellcheck -s bash "$kit/network.sh" || fail "shellcheck network.sh"
else
  echo "note: shellcheck is not installed; network.sh not checked"
fi
# shellcheck source=tests/integration/kit_help.sh
source "$SRC/tests/integration/kit_help.sh"
check_kit_help "$kit/network.sh"
"$kit/network.sh" --help >"$work/help.out"
grep -q '^Usage: ./network.sh \[--dry-run\] \[--timeout S\]$' "$work/help.out" &&
  grep -q 'GPUBUNDLE_NETWORK_NAMESPACE  the release namespace (default nvidia-network-operator)' "$work/help.out" ||
  fail "--help: $(cat "$work/help.out")"

export PATH="$CLIENTS_BIN:$PATH"
writes='r["method"] in ("POST", "PUT", "PATCH", "DELETE")'
helm_ran='(r["userAgent"] or "").lower().startswith("helm/")'
# stored NAMESPACE: "kind/name" of every object the stand-in holds in NAMESPACE, sorted
# (the ReplicaSets the stand-in makes for Deployments left out).
stored() {
  kube_objects | "$PY" -c '
import json, sys
objs = json.load(sys.stdin)
print(" ".join(sorted(o["kind"] + "/" + o["metadata"]["name"] for o in objs if o["metadata"].get("namespace") == sys.argv[1] and o["kind"] != "ReplicaSet")))' "$1"
}
# play_operator STATUS_JSON: once network.sh has applied the NicClusterPolicy, set its status.
play_operator() {
  local _
  for _ in $(seq 300); do
    "$KUBECTL" get nicclusterpolicies.mellanox.com nic-cluster-policy -o json >"$work/ncp.json" 2>/dev/null && break
    sleep 0.2
  done
  "$PY" - "$work/ncp.json" "$1" <<'EOF' || fail "network.sh applied no NicClusterPolicy"
import json, sys
ncp = json.load(open(sys.argv[1]))
ncp["status"] = json.loads(sys.argv[2])
json.dump(ncp, open(sys.argv[1], "w"))
EOF
  "$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/ncp.json" >/dev/null
}

kube_start api-network

# A namespace name kubectl would refuse later is refused first.
rc=0
GPUBUNDLE_NETWORK_NAMESPACE='Net_Ops' "$kit/network.sh" --dry-run >"$work/badns.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a bad GPUBUNDLE_NETWORK_NAMESPACE: exit $rc: $(cat "$work/badns.out")"
grep -q "^network.sh: GPUBUNDLE_NETWORK_NAMESPACE Net_Ops is not a namespace name" "$work/badns.out" || fail "bad namespace: $(cat "$work/badns.out")"
[ -z "$(kube_requests True)" ] || fail "network.sh asked the cluster with a bad namespace"

# Every missing prerequisite in one run: the chart, and an API server that does not answer.
sed "s#$KUBE_URL#http://127.0.0.1:9#" "$KUBECONFIG" >"$work/dead.kubeconfig"
rc=0
KUBECONFIG=$work/dead.kubeconfig GPUBUNDLE_NETWORK_CHART=$work/nowhere.tgz "$kit/network.sh" >"$work/missing.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "^network.sh: missing prerequisite: cluster: the Kubernetes API server of context kube-api-standin at http://127.0.0.1:9 does not answer" "$work/missing.out" &&
  grep -q "^network.sh: missing prerequisite: chart: $work/nowhere.tgz not found" "$work/missing.out" || fail "missing prerequisites: exit $rc: $(cat "$work/missing.out")"

# --dry-run on a fresh cluster: reads only.
"$kit/network.sh" --dry-run >"$work/dry.out" 2>&1 || fail "network.sh --dry-run: $(cat "$work/dry.out")"
for line in "network.sh: dry run: nothing in the cluster changes" \
            "network.sh: warning: pull secret site-registry is missing in namespaces nvidia-network-operator and gpu-operator" \
            "network.sh: warning: NFD: the CRD nodefeaturerules.nfd.k8s-sigs.io is not installed; run install.sh first" \
            "network.sh: the package repository's Service gpubundle-package-repo is not in namespace gpu-operator yet (install.sh makes it)" \
            "network.sh: the chart's CRDs are not installed yet (" \
            "network.sh: nic-cluster-policy.yaml is not passed to kubectl: it cannot check a NicClusterPolicy before the chart installs its CRD nicclusterpolicies.mellanox.com" \
            "network.sh: dry run complete; a real run then waits up to 900s for NicClusterPolicy nic-cluster-policy to report state ready"; do
  grep -qF "$line" "$work/dry.out" || fail "dry run did not say '$line': $(cat "$work/dry.out")"
done
grep -q "^network.sh: the chart's CRDs are not installed yet (.*nicclusterpolicies.mellanox.com" "$work/dry.out" ||
  fail "dry run: CRDs: $(cat "$work/dry.out")"
# NFD is the GPU Operator's: its subchart here is off, and so are SR-IOV's and the maintenance operator's.
if grep "CRDs are not installed" "$work/dry.out" | grep -q "sriovnetwork\|maintenance.nvidia.com\|nodefeature"; then
  fail "dry run counts the CRDs of subcharts the values switch off: $(cat "$work/dry.out")"
fi
[ -z "$(kube_requests "$writes")" ] || fail "the dry run wrote: $(kube_requests "$writes" | cut -c1-300)"
for p in /api/v1/namespaces/nvidia-network-operator /api/v1/namespaces/nvidia-network-operator/secrets/site-registry \
         /apis/apiextensions.k8s.io/v1/customresourcedefinitions/nicclusterpolicies.mellanox.com; do
  [ -n "$(kube_requests "r['method'] == 'GET' and r['path'] == '$p'")" ] || fail "dry run never read $p"
done

# What install.sh leaves: the GPU Operator's NFD CRDs (the NodeFeatureRule the
# network chart deploys needs them), its namespace, the package repository's Service.
seed_gpu_operator() {
  "$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$up/gpu-operator/v26.7.0/chart/charts/node-feature-discovery/crds/nfd-api-crds.yaml" >/dev/null
  "$KUBECTL" create namespace gpu-operator >/dev/null
  "$KUBECTL" -n gpu-operator create service clusterip gpubundle-package-repo --tcp=8080:8080 --clusterip=10.96.12.34 >/dev/null
}
seed_gpu_operator

# No pull secret: the namespace is made, then it stops before helm.
kube_reset_requests
# (a short timeout: were it to go on, no operator makes the policy ready)
if GPUBUNDLE_POLL=1 "$kit/network.sh" --timeout 5 >"$work/nosecret.out" 2>&1; then fail "network.sh ran without its pull secret"; fi
grep -q "^  kubectl -n nvidia-network-operator create secret docker-registry site-registry --docker-server=registry.site:5000 " "$work/nosecret.out" ||
  fail "no hint for the secret: $(cat "$work/nosecret.out")"
[ "$(kube_requests "$writes" | "$PY" -c 'import json,sys; print(" ".join(json.loads(l)["method"] + " " + json.loads(l)["path"] for l in sys.stdin))')" = \
  "POST /api/v1/namespaces" ] || fail "without the secret: $(kube_requests "$writes")"
[ -z "$(kube_requests "$helm_ran")" ] || fail "helm ran without the pull secret"

# With it in the GPU Operator's namespace (install.sh's prerequisite): network.sh
# copies it, then the chart, then the policy; the test plays the operator.
"$KUBECTL" -n gpu-operator create secret docker-registry site-registry --docker-server=registry.site:5000 \
  --docker-username=u --docker-password=p >/dev/null
kube_reset_requests
GPUBUNDLE_POLL=1 "$kit/network.sh" --timeout 120 >"$work/install.out" 2>&1 &
installer=$!
play_operator '{"state": "ready", "appliedStates": [{"name": "state-OFED", "state": "ready"}, {"name": "state-multus-cni", "state": "ready"}]}'
wait "$installer" || fail "network.sh: $(cat "$work/install.out")"
[ "$(tail -n 1 "$work/install.out")" = "network.sh: installed: NVIDIA Network Operator v26.4.1 in namespace nvidia-network-operator, NicClusterPolicy nic-cluster-policy ready" ] ||
  fail "network.sh's outcome: $(cat "$work/install.out")"
kube_requests "$writes and r['status'] < 300" >"$work/writes"
"$PY" - "$work/writes" "$kit" nvidia-network-operator <<'EOF' || fail "what network.sh wrote is not what it should (above)"
import base64, gzip, json, sys, yaml
writes = [json.loads(l) for l in open(sys.argv[1])]
kit, ns = sys.argv[2], sys.argv[3]
posts = [r for r in writes if r["method"] == "POST" and isinstance(r["body"], dict)]
def index(pred):
    return next(i for i, r in enumerate(writes) if pred(r))
crds = [r["body"]["metadata"]["name"] for r in posts if r["body"]["kind"] == "CustomResourceDefinition"]
assert "nicclusterpolicies.mellanox.com" in crds and "nodefeaturerules.nfd.k8s-sigs.io" not in crds, crds
# The pull secret, copied from the GPU Operator's namespace with its content.
copied = [r["body"] for r in posts if r["body"]["kind"] == "Secret" and r["body"]["metadata"]["name"] == "site-registry"]
assert copied and copied[0]["type"] == "kubernetes.io/dockerconfigjson", copied
auth = json.loads(base64.b64decode(copied[0]["data"][".dockerconfigjson"]))
assert auth["auths"]["registry.site:5000"]["username"] == "u", auth
# The DOCA build's sources: the Service by its cluster IP (its pods use the host's network).
cms = [r for r in writes if r["method"] in ("POST", "PATCH") and "/configmaps" in r["path"] and f"/namespaces/{ns}/" in r["path"]]
repo = [r["body"] for r in cms if isinstance(r["body"], dict) and r["body"]["metadata"]["name"] == "gpubundle-repo-config"]
assert repo, [r["path"] for r in cms]
listing = repo[0]["data"]["gpubundle.list"]
assert "http://10.96.12.34:8080/ gpubundle main" in listing and "svc.cluster.local" not in listing, listing
assert repo[0]["data"]["gpubundle-repo.asc"].startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----"), repo[0]["data"]
assert index(lambda r: r is cms[0]) < index(lambda r: r["path"] == "/apis/mellanox.com/v1alpha1/nicclusterpolicies")
assert not [c for c in crds if "sriovnetwork" in c or "maintenance.nvidia.com" in c], crds
# The release's objects: in the namespace (or cluster-scoped), every container on the site registry.
kinds = {r["body"]["kind"] for r in posts}
# No DaemonSet: the NFD worker was the chart's only one, and NFD is the GPU Operator's.
assert {"Deployment", "NodeFeatureRule"} <= kinds and "DaemonSet" not in kinds, kinds
images = []
for r in posts:
    b = r["body"]
    assert b["metadata"].get("namespace") in (None, "", ns) and ("/namespaces/" not in r["path"] or f"/namespaces/{ns}/" in r["path"]), (r["path"], b["metadata"])
    pod = ((b.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        images.append((b["kind"] + "/" + b["metadata"]["name"], c["image"]))
assert images and all(i.startswith("registry.site:5000/gpu/") for _, i in images), images
operator = [r["body"] for r in posts if r["body"]["kind"] == "Deployment" and r["body"]["metadata"]["name"] == "network-operator"]
assert operator and operator[0]["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "site-registry"}], operator
# helm stored the kit's values as they are, and the release is deployed.
deployed = [r for r in writes if r["method"] == "PUT" and r["path"] == f"/api/v1/namespaces/{ns}/secrets/sh.helm.release.v1.network-operator.v1"]
release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(deployed[-1]["body"]["data"]["release"]))))
assert release["info"]["status"] == "deployed" and release["namespace"] == ns, release["info"]
assert release["config"] == yaml.safe_load(open(f"{kit}/network-operator-values.yaml")), "helm stored other values"
# The NicClusterPolicy: cluster-scoped, once the chart is deployed, as the kit wrote it.
ncp = index(lambda r: r["path"] == "/apis/mellanox.com/v1alpha1/nicclusterpolicies")
assert ncp > index(lambda r: r is deployed[-1]) > index(lambda r: r["path"].endswith("/customresourcedefinitions")), ncp
want = yaml.safe_load(open(f"{kit}/nic-cluster-policy.yaml"))
got = writes[ncp]["body"]
assert got["spec"] == want["spec"] and got["metadata"]["name"] == "nic-cluster-policy" and "namespace" not in got["metadata"], got
for name in ("ofedDriver", "rdmaSharedDevicePlugin", "nvIpam"):
    assert got["spec"][name]["repository"].startswith("registry.site:5000/gpu/"), got["spec"][name]
    assert got["spec"][name]["imagePullSecrets"] == ["site-registry"], got["spec"][name]
assert got["spec"]["ofedDriver"]["repoConfig"] == {"name": "gpubundle-repo-config"}, got["spec"]["ofedDriver"]
print(f"network.sh: {len(crds)} CRDs, {len(posts)} objects created, {len(images)} containers on the site registry")
EOF
# Again: helm upgrades, the policy unchanged, ready at once.
GPUBUNDLE_POLL=1 "$kit/network.sh" --timeout 120 >"$work/again.out" 2>&1 || fail "network.sh a second time: $(cat "$work/again.out")"
grep -q '^nicclusterpolicy.mellanox.com/nic-cluster-policy unchanged$' "$work/again.out" && grep -q '^REVISION: 2$' "$work/again.out" ||
  fail "second run: $(cat "$work/again.out")"
# Installed, the CRDs are there: a dry run is now helm's own and kubectl's (whose
# client-side dry run says "configured" of any object that exists).
kube_reset_requests
"$kit/network.sh" --dry-run >"$work/dry2.out" 2>&1 || fail "a second --dry-run: $(cat "$work/dry2.out")"
grep -q '^network.sh: helm upgrade --install network-operator$' "$work/dry2.out" && grep -q '^STATUS: pending-upgrade' "$work/dry2.out" &&
  grep -q '^nicclusterpolicy.mellanox.com/nic-cluster-policy configured (dry run)$' "$work/dry2.out" || fail "a second --dry-run: $(cat "$work/dry2.out")"
[ -z "$(kube_requests "$writes")" ] || fail "the second dry run wrote: $(kube_requests "$writes" | cut -c1-300)"
echo "ok: network.sh in nvidia-network-operator, --dry-run and real, with the real kubectl and helm"

# GPUBUNDLE_NETWORK_NAMESPACE on a fresh cluster, and an operator that never gets ready.
kube_start api-net-ops
seed_gpu_operator
"$KUBECTL" create namespace net-ops >/dev/null
"$KUBECTL" -n net-ops create secret docker-registry site-registry --docker-server=registry.site:5000 \
  --docker-username=u --docker-password=p >/dev/null
kube_reset_requests
rc=0
GPUBUNDLE_NETWORK_NAMESPACE=net-ops GPUBUNDLE_POLL=1 "$kit/network.sh" --timeout 15 >"$work/netops.out" 2>&1 &
installer=$!
play_operator '{"state": "notReady", "appliedStates": [{"name": "state-OFED", "state": "notReady"}, {"name": "state-multus-cni", "state": "ready"}, {"name": "state-nv-ipam-cni", "state": "error"}]}'
wait "$installer" || rc=$?
[ "$rc" = 1 ] || fail "net-ops: a policy never ready: exit $rc: $(cat "$work/netops.out")"
[ "$(tail -n 1 "$work/netops.out")" = "network.sh: NicClusterPolicy nic-cluster-policy is not ready after 15s (state 'notReady'; not ready: state-OFED=notReady state-nv-ipam-cni=error); see kubectl get nicclusterpolicies.mellanox.com nic-cluster-policy -o yaml and the pods in net-ops" ] ||
  fail "net-ops: the timeout message: $(cat "$work/netops.out")"
grep -q '^network.sh: context kube-api-standin, namespace net-ops, release network-operator' "$work/netops.out" || fail "net-ops: $(cat "$work/netops.out")"
stored net-ops | grep -q 'Deployment/network-operator .*Secret/sh.helm.release.v1.network-operator.v1 ' || fail "net-ops: stored: $(stored net-ops)"
[ -z "$(stored nvidia-network-operator)" ] || fail "net-ops: objects landed in nvidia-network-operator: $(stored nvidia-network-operator)"
[ -z "$(kube_requests "'nvidia-network-operator' in r['path']")" ] || fail "net-ops: network.sh went to nvidia-network-operator"
echo "PASS: network.sh against the API stand-in"
