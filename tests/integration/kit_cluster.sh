#!/usr/bin/env bash
# install.sh, mig.sh and verify.sh with the real kubectl and helm against the API stand-in
# (tests/tools/kube_api.py), for the kit of kit.sh's recipe
# (examples/conventional.yaml, the stand-in chart) with a site package
# repository added to its lock, so that package-repo.yaml is in the kit:
#   - --dry-run: nothing written reaches the server; what kubectl and helm read;
#   - without the pull secret: the namespace is made, then it stops with the
#     kubectl command to make the secret, and helm is not run;
#   - with it: the package repository's ConfigMap, Deployment and Service, the
#     helm release (values from the kit) and the alerts reach the server;
#   - GPUBUNDLE_NAMESPACE=nvidia-gpu-operator, dry run and real: every object
#     in that namespace, the apt source naming the Service there, nothing in
#     gpu-operator (real kubectl refuses `apply -n` of an object pinned to
#     another namespace);
#   - mig.sh --all-gpu-nodes labels the GPU node only; verify.sh --json passes on
#     a healthy cluster (the test seeding the MIG state and the smoke pod's phase);
#   - the real v26.7.0 chart from ../shared (when there) with the kit's values:
#     --dry-run on a fresh cluster only renders it (helm's dry run cannot map the
#     ClusterPolicy before its CRD exists) and says so; every container helm
#     creates and the ClusterPolicy's operands on the site registry; a second
#     --dry-run is helm's own;
#   - a GPUBUNDLE_NAMESPACE that is no namespace name is refused before kubectl runs.
# Usage: kit_cluster.sh GPUBUNDLE SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
gpubundle=$1
SRC=$2
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite v26.7.0

# The kit: kit.sh's recipe, fake digests, plus a site package repository.
"$gpubundle" -q resolve "$SRC/examples/conventional.yaml" --chart "$chart" -o "$work/lock.json"
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
kit=$work/kit
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$kit"
[ -f "$kit/package-repo.yaml" ] || fail "the kit has no package-repo.yaml"

export PATH="$CLIENTS_BIN:$PATH"
writes='r["method"] in ("POST", "PUT", "PATCH", "DELETE")'
# stored NAMESPACE: "kind/name" of every object the stand-in holds in NAMESPACE, sorted
# (the ReplicaSets the stand-in makes for Deployments left out).
stored() {
  kube_objects | "$PY" -c '
import json, sys
objs = json.load(sys.stdin)
print(" ".join(sorted(o["kind"] + "/" + o["metadata"]["name"] for o in objs if o["metadata"].get("namespace") == sys.argv[1] and o["kind"] != "ReplicaSet")))' "$1"
}
# A cluster with the PrometheusRule CRD, so that install.sh applies alerts.yaml too.
cat >"$work/seed.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: PrometheusRule, plural: prometheusrules}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
EOF

for ns in gpu-operator nvidia-gpu-operator; do
  kube_start "api-$ns" --seed "$work/seed.yaml"
  if [ "$ns" = gpu-operator ]; then run=("$kit/install.sh"); else run=(env GPUBUNDLE_NAMESPACE="$ns" "$kit/install.sh"); fi

  # --dry-run: reads only.
  "${run[@]}" --dry-run >"$work/dry.out" 2>&1 || fail "$ns: install.sh --dry-run: $(cat "$work/dry.out")"
  grep -q "pull secret site-registry is missing in namespace $ns" "$work/dry.out" || fail "$ns: no pull secret warning: $(cat "$work/dry.out")"
  [ -z "$(kube_requests "$writes")" ] || fail "$ns: the dry run wrote: $(kube_requests "$writes")"
  for p in "/api/v1/namespaces/$ns/configmaps/gpubundle-repo-config" "/apis/apps/v1/namespaces/$ns/deployments/gpubundle-package-repo" \
           "/api/v1/namespaces/$ns/services/gpubundle-package-repo" "/api/v1/namespaces/$ns/secrets" \
           "/apis/monitoring.coreos.com/v1/namespaces/$ns/prometheusrules/gpubundle-gpu-alerts"; do
    [ -n "$(kube_requests "r['method'] == 'GET' and r['path'] == '$p'")" ] || fail "$ns: dry run never read $p"
  done
  [ -z "$(kube_requests "'/namespaces/gpu-operator/' in r['path'] and '$ns' != 'gpu-operator'")" ] ||
    fail "$ns: the dry run looked into gpu-operator: $(kube_requests "'/namespaces/gpu-operator/' in r['path']")"

  # No pull secret: the namespace is made, then it stops before anything else.
  kube_reset_requests
  if "${run[@]}" >"$work/nosecret.out" 2>&1; then fail "$ns: install.sh ran without its pull secret"; fi
  grep -q "kubectl -n $ns create secret docker-registry site-registry --docker-server=registry.site:5000" "$work/nosecret.out" ||
    fail "$ns: no hint for the secret: $(cat "$work/nosecret.out")"
  [ "$(kube_requests "$writes" | "$PY" -c 'import json,sys; print(" ".join(json.loads(l)["method"] + " " + json.loads(l)["path"] for l in sys.stdin))')" = \
    "POST /api/v1/namespaces" ] || fail "$ns: without the secret: $(kube_requests "$writes")"

  # With it: the whole install.
  "$KUBECTL" -n "$ns" create secret docker-registry site-registry --docker-server=registry.site:5000 \
    --docker-username=u --docker-password=p >/dev/null
  kube_reset_requests
  "${run[@]}" >"$work/install.out" 2>&1 || fail "$ns: install.sh: $(cat "$work/install.out")"
  kube_requests "$writes" >"$work/writes"
  "$PY" - "$work/writes" "$ns" "$kit/values.yaml" <<'EOF' || fail "$ns: what install.sh wrote is not what it should (above)"
import base64, gzip, json, sys, yaml
writes = [json.loads(l) for l in open(sys.argv[1])]
ns = sys.argv[2]
got = [(r["method"], r["path"], r["status"]) for r in writes]
want = [("POST", f"/api/v1/namespaces/{ns}/configmaps", 201),              # package-repo.yaml, in its order
        ("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", 201),
        ("POST", f"/api/v1/namespaces/{ns}/services", 201),
        ("POST", "/api/v1/namespaces", 409),                                # helm --create-namespace: there already
        ("POST", f"/api/v1/namespaces/{ns}/secrets", 201),                 # helm: the release, pending
        ("PUT", f"/api/v1/namespaces/{ns}/secrets/sh.helm.release.v1.gpu-operator.v1", 200),  # ... deployed
        ("POST", f"/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheusrules", 201)]
assert got == want, "\n".join(map(str, got))
cm = writes[0]["body"]
assert cm["metadata"]["name"] == "gpubundle-repo-config", cm
src = cm["data"]["gpubundle.list"]
assert f" http://gpubundle-package-repo.{ns}.svc.cluster.local:8080/ gpubundle main" in src, src
deploy = writes[1]["body"]["spec"]["template"]["spec"]
assert deploy["containers"][0]["image"].startswith("registry.site:5000/gpu/gpubundle/package-repo:"), deploy
assert deploy["imagePullSecrets"] == [{"name": "site-registry"}], deploy
# The release helm stored carries the kit's values as they are.
release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(writes[5]["body"]["data"]["release"]))))
assert release["namespace"] == ns and release["info"]["status"] == "deployed", release["info"]
assert release["config"] == yaml.safe_load(open(sys.argv[3])), "helm stored other values than values.yaml"
assert release["config"]["driver"]["repoConfig"]["configMapName"] == "gpubundle-repo-config"
# The rule carries the label kube-prometheus-stack's Prometheus selects rules by.
rule = writes[6]["body"]
assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack", rule["metadata"]
assert release["config"]["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}
EOF
  grep -q 'applying alerts.yaml (labels for the Prometheus that selects it: release: "kube-prometheus-stack"' "$work/install.out" ||
    fail "$ns: install.sh did not say which labels: $(cat "$work/install.out")"
  [ "$(stored "$ns")" = "ConfigMap/gpubundle-repo-config Deployment/gpubundle-package-repo PrometheusRule/gpubundle-gpu-alerts Secret/sh.helm.release.v1.gpu-operator.v1 Secret/site-registry Service/gpubundle-package-repo" ] ||
    fail "$ns: stored: $(stored "$ns")"
  if [ "$ns" != gpu-operator ]; then
    [ -z "$(stored gpu-operator)" ] || fail "$ns: objects landed in gpu-operator: $(stored gpu-operator)"
    [ -z "$(kube_requests "'/namespaces/gpu-operator' in r['path']")" ] || fail "$ns: install.sh went to gpu-operator"
  fi
  # Again: everything unchanged, helm upgrades.
  "${run[@]}" >"$work/again.out" 2>&1 || fail "$ns: install.sh a second time: $(cat "$work/again.out")"
  grep -q 'configmap/gpubundle-repo-config unchanged' "$work/again.out" || fail "$ns: second run: $(cat "$work/again.out")"
  echo "ok: install.sh in $ns, --dry-run and real, with the real kubectl and helm"
done

# mig.sh and verify.sh on a cluster with one GPU node and one CPU node, the
# operator's pods ready; the test plays the MIG manager (the state label) and
# the kubelet (the smoke pod's phase).
cat >"$work/nodes.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true"}}
  status: {allocatable: {cpu: "64", nvidia.com/gpu: "8", pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-a, labels: {kubernetes.io/os: linux}}
- apiVersion: v1
  kind: Namespace
  metadata: {name: gpu-operator}
- apiVersion: v1
  kind: Pod
  metadata: {name: gpu-operator-6f7d-x, namespace: gpu-operator}
  spec: {containers: [{name: c, image: x}]}
  status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
EOF
kube_start api-verify --seed "$work/nodes.yaml"
"$kit/mig.sh" --all-gpu-nodes >"$work/mig.out" 2>&1 || fail "mig.sh --all-gpu-nodes: $(cat "$work/mig.out")"
[ "$(kube_requests "$writes" | "$PY" -c 'import json,sys; print(" ".join(json.loads(l)["method"] + " " + json.loads(l)["path"] + " " + json.dumps(json.loads(l)["body"], sort_keys=True) for l in sys.stdin))')" = \
  'PATCH /api/v1/nodes/gpu-a {"metadata": {"labels": {"nvidia.com/mig.config": "all-balanced"}}}' ] ||
  fail "mig.sh wrote: $(kube_requests "$writes")"
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-balanced, nvidia.com/mig.config.state: success}}\nstatus: {allocatable: {cpu: "64", nvidia.com/gpu: "8", pods: "110"}}\n' >"$work/mig-done.yaml"
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/mig-done.yaml" >/dev/null
kube_reset_requests
(cd "$work" && VERIFY_TIMEOUT=60 "$kit/verify.sh" --json "$work/verify.json" >"$work/verify.out" 2>&1) &
verifier=$!
for _ in $(seq 150); do
  "$KUBECTL" -n gpu-operator get pod gpubundle-cuda-smoke -o json >"$work/smoke.json" 2>/dev/null && break
  sleep 0.2
done
"$PY" - "$work/smoke.json" <<'PYEOF' || fail "verify.sh made no smoke pod: $(cat "$work/verify.out")"
import json, sys
pod = json.load(open(sys.argv[1]))
pod["status"] = {"phase": "Succeeded"}
json.dump(pod, open(sys.argv[1], "w"))
PYEOF
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/smoke.json" >/dev/null
wait "$verifier" || fail "verify.sh on a healthy stand-in cluster: $(cat "$work/verify.out")"
kube_schema_check "verify.sh's smoke pod" 'r["path"].endswith("/pods")'
"$PY" - "$work/verify.json" "$work/smoke.json" <<'PYEOF' || fail "verify.sh: $(cat "$work/verify.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert [(c["name"], c["status"]) for c in doc["checks"]] == [("pods", "PASS"), ("node-gpus", "PASS"), ("mig", "PASS"), ("cuda-smoke", "PASS")], doc["checks"]
assert doc["checks"][1]["detail"] == "node gpu-a allocatable: nvidia.com/gpu=8", doc["checks"][1]
pod = json.load(open(sys.argv[2]))["spec"]
assert pod["containers"][0]["image"] == "registry.site:5000/gpu/nvidia/cuda:12.4.1-base-ubuntu22.04", pod
assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1} and pod["imagePullSecrets"] == [{"name": "site-registry"}], pod
PYEOF
echo "ok: mig.sh and verify.sh with the real kubectl"

# The real chart (../shared: v26.7.0 with its templates and CRDs) with the kit's
# values.yaml: what helm sends is every container and the ClusterPolicy's
# operands on the site registry, the driver's package repository named.
real_chart=${GB_SHARED_DIR:-$SRC/../shared}/upstream/gpu-operator/v26.7.0/chart
if [ -d "$real_chart" ]; then
  kube_start api-real-chart --seed "$work/seed.yaml"
  "$KUBECTL" create namespace gpu-operator >/dev/null
  "$KUBECTL" -n gpu-operator create secret docker-registry site-registry --docker-server=registry.site:5000 \
    --docker-username=u --docker-password=p >/dev/null
  kube_reset_requests
  # A fresh cluster lacks the chart's CRDs: helm's dry run could not map the
  # ClusterPolicy ("no matches for kind"), so install.sh renders the chart only.
  GPUBUNDLE_CHART=$real_chart "$kit/install.sh" --dry-run >"$work/real-dry.out" 2>&1 || fail "real chart: --dry-run: $(cat "$work/real-dry.out")"
  grep -q "the chart's CRDs are not installed yet (clusterpolicies.nvidia.com gpuclusters.nvidia.com nvidiadrivers.nvidia.com " \
    "$work/real-dry.out" || fail "real chart: --dry-run on a fresh cluster: $(cat "$work/real-dry.out")"
  [ -z "$(kube_requests "$writes")" ] || fail "real chart: the dry run wrote: $(kube_requests "$writes" | cut -c1-300)"
  GPUBUNDLE_CHART=$real_chart "$kit/install.sh" >"$work/real.out" 2>&1 || fail "real chart: $(cat "$work/real.out")"
  kube_requests "$writes and r['status'] < 300" >"$work/writes"
  "$PY" - "$work/writes" <<'PYEOF' || fail "real chart: what helm sent (above)"
import json, sys
writes = [json.loads(l) for l in open(sys.argv[1])]
bodies = [r["body"] for r in writes if r["method"] == "POST" and isinstance(r["body"], dict)]
kinds = {b["kind"] for b in bodies}
assert {"CustomResourceDefinition", "ClusterPolicy", "Deployment", "DaemonSet"} <= kinds, kinds
crds = sorted(b["metadata"]["name"] for b in bodies if b["kind"] == "CustomResourceDefinition")
assert "clusterpolicies.nvidia.com" in crds and "nvidiadrivers.nvidia.com" in crds, crds
images = []
for b in bodies:
    pod = ((b.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        images.append((b["kind"] + "/" + b["metadata"]["name"], c["image"]))
assert images and all(i.startswith("registry.site:5000/gpu/") for _, i in images), images
cp = [b for b in bodies if b["kind"] == "ClusterPolicy"][0]["spec"]
assert cp["driver"]["repository"] == "registry.site:5000/gpu/nvidia", cp["driver"]
assert cp["driver"]["repoConfig"]["configMapName"] == "gpubundle-repo-config", cp["driver"]
for operand in ("toolkit", "devicePlugin", "dcgmExporter", "gfd", "validator"):
    assert cp[operand]["repository"].startswith("registry.site:5000/gpu/"), (operand, cp[operand])
# kube-prometheus-stack's Prometheus scrapes the operator's ServiceMonitor only with its release label.
assert cp["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}, cp["dcgmExporter"]
print(f"real chart: {len(bodies)} objects created, {len(images)} containers, all on the site registry")
PYEOF
  # Installed, the CRDs are there: now helm dry-runs the release itself.
  kube_reset_requests
  GPUBUNDLE_CHART=$real_chart "$kit/install.sh" --dry-run >"$work/real-dry2.out" 2>&1 || fail "real chart: a second --dry-run: $(cat "$work/real-dry2.out")"
  grep -q '^install.sh: helm upgrade --install gpu-operator' "$work/real-dry2.out" && grep -q '^STATUS: pending-upgrade' "$work/real-dry2.out" ||
    fail "real chart: a second --dry-run: $(cat "$work/real-dry2.out")"
  [ -z "$(kube_requests "$writes")" ] || fail "real chart: the second dry run wrote: $(kube_requests "$writes" | cut -c1-300)"
  echo "ok: install.sh with the real v26.7.0 chart"
else
  echo "note: $real_chart not found; install.sh not run with the real chart"
fi

# A namespace name kubectl would refuse later (or sed would misread) is refused first.
kube_reset_requests
rc=0
GPUBUNDLE_NAMESPACE='GPU_Operator' "$kit/install.sh" --dry-run >"$work/badns.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a bad GPUBUNDLE_NAMESPACE: exit $rc: $(cat "$work/badns.out")"
grep -q "GPUBUNDLE_NAMESPACE GPU_Operator is not a namespace name" "$work/badns.out" || fail "bad namespace: $(cat "$work/badns.out")"
[ -z "$(kube_requests True)" ] || fail "install.sh asked the cluster with a bad namespace"
echo "PASS: install.sh against the API stand-in"
