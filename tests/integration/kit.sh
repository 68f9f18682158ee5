#!/usr/bin/env bash
# Install kit end to end: resolve a recipe against the stand-in chart, fill fake
# digests, run `gpubundle overrides`. Without a cluster:
#   - shellcheck install.sh, mig.sh, verify.sh, upgrade.sh; every script's --help in one style;
#     the kit's files; values.yaml's driver.upgradePolicy (one node at a time, drain on);
#   - manifest.json matches the lock (YAML parsing is covered by the unit
#     tests with yaml-cpp);
#   - the DRA and precompiled (time-slicing, plain HTTP, keep-host) kits' contents;
#   - the same lock gives the same bytes; colliding destinations are refused.
# Then with the real kubectl and helm (GB_CLIENTS_BIN) against the API stand-in
# (tests/tools/kube_api.py), the failures and states kit_cluster.sh does not reach:
#   - install.sh names every missing prerequisite at once: no helm on PATH, a
#     kubeconfig without current-context, an API server that does not answer
#     (a kubeconfig naming a closed loopback port), and nothing is written;
#   - verify.sh turns a dead cluster, a missing context or a failed MIG state
#     into its own FAIL lines, and --json writes them (docs/acceptance-results.md):
#     one entry per printed line, in order, same exit code; bad usage: exit 2,
#     nothing asked of the cluster;
#   - a refused query (the stand-in answers kubectl's pod list 403 Forbidden, as
#     RBAC does), also with hostile error text;
#   - mig.sh labels the named nodes and stops at a node that is not there;
#   - the DRA kit's verify.sh reads the GPUs from ResourceSlices;
#   - the precompiled kit's install.sh applies the time-slicing ConfigMap before
#     helm installs the chart, and skips alerts.yaml without the PrometheusRule CRD.
# The dry run, the missing pull secret, a whole install and a healthy verify.sh
# are kit_cluster.sh's (kit-cluster-install). Without the real clients the
# cluster part is skipped (77) after the rest has passed.
# Usage: kit.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }

SRC="$src"
work="$(mktemp -d)"
# shellcheck source=tests/integration/kube_lib.sh
source "$src/tests/integration/kube_lib.sh"
trap 'kube_stop_all; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A chart archive shaped like the NGC one (gpu-operator/ at the top), from tests/tools/releases.yaml.
/usr/bin/python3 "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null

"$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
python3 - "$work/lock.json" <<'EOF'
import hashlib, json, sys
path = sys.argv[1]
lock = json.load(open(path))
for image in lock["images"]:
    image["digest"] = "sha256:" + hashlib.sha256(image["source"].encode()).hexdigest()
json.dump(lock, open(path, "w"), indent=2, sort_keys=True)
EOF

kit="$work/kit"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$kit"
for f in values.yaml install.sh verify.sh mig.sh alerts.yaml manifest.json gpu-operator-v26.7.0.tgz \
         containerd/certs.d/nvcr.io/hosts.toml containerd/certs.d/registry.k8s.io/hosts.toml \
         crio/registries.conf.d/99-gpubundle.conf; do
  [ -f "$kit/$f" ] || fail "kit lacks $f"
done
[ -x "$kit/install.sh" ] || fail "install.sh is not executable"
[ ! -e "$kit/time-slicing.yaml" ] || fail "time-slicing.yaml written although the recipe sets no sharing"
cmp -s "$kit/gpu-operator-v26.7.0.tgz" "$work/gpu-operator-v26.7.0.tgz" || fail "chart copy differs"

shellcheck -s bash "$kit/install.sh" "$kit/mig.sh" "$kit/verify.sh" "$kit/upgrade.sh" || fail "shellcheck"
# The operator's upgrade policy upgrade.sh relies on: one node at a time, drain on.
"$PY" - "$kit/values.yaml" <<'PY' || fail "values.yaml: driver.upgradePolicy"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))["driver"]["upgradePolicy"]
assert p["autoUpgrade"] is True and p["maxParallelUpgrades"] == 1 and p["maxUnavailable"] == 1, p
assert p["drain"] == {"enable": True, "force": False, "deleteEmptyDir": False, "timeoutSeconds": 300}, p
PY
# shellcheck source=tests/integration/kit_help.sh
source "$src/tests/integration/kit_help.sh"
for s in install mig verify upgrade; do check_kit_help "$kit/$s.sh"; done

# manifest.json: one entry per lock image, same digests.
python3 - "$work/lock.json" "$kit/manifest.json" <<'EOF' || fail "manifest.json"
import json, sys
lock = json.load(open(sys.argv[1])); man = json.load(open(sys.argv[2]))
assert [i["source"] for i in man["images"]] == [i["source"] for i in lock["images"]]
assert [i["digest"] for i in man["images"]] == [i["digest"] for i in lock["images"]]
assert all(i["destination"].startswith("registry.site:5000/gpu/") for i in man["images"])
assert man["chart"]["file"] == "gpu-operator-v26.7.0.tgz" and man["bundleId"] == ""
EOF

# The DRA driver: GPUs are ResourceSlice devices, not nvidia.com/gpu.
sed -e '/^mig:/d' -e 's/^components:/components:\n  draDriver: true/' "$src/examples/conventional.yaml" >"$work/dra.yaml"
"$gpubundle" -q resolve "$work/dra.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/dra.lock.json"
"$gpubundle" -q overrides "$work/dra.lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/drakit"
grep -q "^dra='1' " "$work/drakit/verify.sh" || fail "the DRA kit's verify.sh does not look for ResourceSlices"

# Precompiled recipe with time-slicing, plain HTTP, keep-host: the ConfigMap
# goes in before the chart.
"$gpubundle" -q resolve "$src/examples/precompiled.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/pre.lock.json"
"$gpubundle" -q overrides "$work/pre.lock.json" --registry http://127.0.0.1:5000 --layout keep-host \
  --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/prekit"
[ -f "$work/prekit/time-slicing.yaml" ] || fail "precompiled kit lacks time-slicing.yaml"
grep -q 'usePrecompiled: true' "$work/prekit/values.yaml" || fail "usePrecompiled not set"
grep -q 'version: "580"' "$work/prekit/values.yaml" || fail "driver branch is not the driver version"
grep -q 'repository: "127.0.0.1:5000/nvcr.io/nvidia"' "$work/prekit/values.yaml" || fail "keep-host repository"
grep -q '\[host."http://127.0.0.1:5000/v2/nvcr.io"\]' "$work/prekit/containerd/certs.d/nvcr.io/hosts.toml" || fail "keep-host hosts.toml"

# Deterministic: a second run gives the same bytes.
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/kit2"
diff -r "$kit" "$work/kit2" >/dev/null || fail "second run differs"

# Collisions are refused with exit 2.
python3 - "$work/lock.json" <<'EOF'
import json, sys
lock = json.load(open(sys.argv[1]))
lock["images"].append({"components": ["extraImages"], "source": "docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                       "platforms": ["linux/amd64"], "destination": "", "digest": "", "origin": "upstream"})
lock["images"].sort(key=lambda i: i["source"])
json.dump(lock, open(sys.argv[1], "w"), indent=2, sort_keys=True)
EOF
set +e
"$gpubundle" overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/kit3" 2>"$work/collide.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "collision exit code $rc"
if ! grep -q "docker.io/nvidia/cuda" "$work/collide.err" || ! grep -q "nvcr.io/nvidia/cuda" "$work/collide.err"; then
  fail "collision message: $(cat "$work/collide.err")"
fi


# --- The real kubectl and helm against the API stand-in -------------------------
kube_clients_present || { echo "SKIP: the kit's checks without a cluster passed; the rest needs the real clients: $KUBE_SKIP"; exit 77; }
export PATH="$CLIENTS_BIN:$PATH"
writes='r["method"] in ("POST", "PUT", "PATCH", "DELETE")'
# One cluster for all of it: a GPU node with ResourceSlices for the
# DRA kit, a CPU node, the operator's namespace and a ready operator pod.
cat >"$work/cluster.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {nvidia.com/gpu.present: "true"}}
  status: {allocatable: {cpu: "64", nvidia.com/gpu: "8", pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-a, labels: {kubernetes.io/os: linux}}
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceSlice
  metadata: {name: node-a-gpu}
  spec: {driver: gpu.nvidia.com, nodeName: node-a, pool: {name: node-a, generation: 1, resourceSliceCount: 1}, devices: [{name: gpu-0, basic: {}}, {name: gpu-1, basic: {}}]}
- apiVersion: resource.k8s.io/v1beta1
  kind: ResourceSlice
  metadata: {name: cpu-a-nic}
  spec: {driver: nic.example.com, nodeName: cpu-a, pool: {name: cpu-a, generation: 1, resourceSliceCount: 1}, devices: [{name: nic-0, basic: {}}]}
- apiVersion: v1
  kind: Namespace
  metadata: {name: gpu-operator}
- apiVersion: v1
  kind: Pod
  metadata: {name: gpu-operator-6f7d-x, namespace: gpu-operator}
  spec: {containers: [{name: c, image: x}]}
  status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
EOF
kube_start api --seed "$work/cluster.yaml"
kube_kubeconfig_no_context "$work/noctx.kubeconfig"
kube_kubeconfig_dead "$work/dead.kubeconfig"
# A PATH with the real kubectl and no helm (none of PATH's folders that hold one).
mkdir -p "$work/kubectl-only"
ln -s "$KUBECTL" "$work/kubectl-only/kubectl"
nohelm=$work/kubectl-only
IFS=: read -ra path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do [ -x "$d/helm" ] || nohelm+=":$d"; done

# Missing prerequisites are named, every one, and nothing reaches the server.
# prereqs NAME OUT EXPECTED_LINE... -- COMMAND...: the command fails with exactly
# these "missing prerequisite" lines.
prereqs() {
  local name=$1 out=$2 want=() got
  shift 2
  while [ "$1" != -- ]; do want+=("install.sh: missing prerequisite: $1"); shift; done
  shift
  if "$@" >"$out" 2>&1; then fail "$name: install.sh ran: $(cat "$out")"; fi
  got=$(grep 'missing prerequisite' "$out" || true)
  [ "$got" = "$(printf '%s\n' "${want[@]}")" ] || fail "$name: got"$'\n'"$(cat "$out")"$'\n'"expected"$'\n'"$(printf '%s\n' "${want[@]}")"
}
no_helm="helm: not on PATH (copy the helm binary onto this machine; https://helm.sh)"
no_ctx="kubectl context: none is set (kubectl config use-context NAME, or set KUBECONFIG)"
dead="cluster: the Kubernetes API server of context kube-api-standin at $DEAD_URL does not answer (The connection to the server ${DEAD_URL#http://} was refused - did you specify the right host or port?)"
kube_reset_requests
prereqs "no helm" "$work/nohelm.out" "$no_helm" -- env PATH="$nohelm" "$kit/install.sh" --dry-run
prereqs "no context" "$work/noctx.out" "$no_ctx" -- env KUBECONFIG="$work/noctx.kubeconfig" "$kit/install.sh" --dry-run
prereqs "no helm, no context" "$work/none.out" "$no_helm" "$no_ctx" -- \
  env PATH="$nohelm" KUBECONFIG="$work/noctx.kubeconfig" "$kit/install.sh" --dry-run
for mode in --dry-run ""; do
  prereqs "dead cluster $mode" "$work/dead.out" "$dead" -- env KUBECONFIG="$work/dead.kubeconfig" "$kit/install.sh" ${mode:+"$mode"}
  if grep -e "creating namespace" -e "helm upgrade" "$work/dead.out"; then fail "install.sh $mode went on against a dead cluster"; fi
done
prereqs "no helm, dead cluster" "$work/dead2.out" "$no_helm" "$dead" -- env PATH="$nohelm" KUBECONFIG="$work/dead.kubeconfig" "$kit/install.sh"
[ -z "$(kube_requests "$writes")" ] || fail "install.sh wrote with a prerequisite missing: $(kube_requests "$writes")"
echo "ok: install.sh names every missing prerequisite (real kubectl: no helm, no context, a dead API server)"

# verify.sh against a dead cluster and without a context: its own FAIL line, no
# raw kubectl output; --json says the same.
# check_json FILE STDOUT_FILE NAMES: the JSON is the gpubundle.verify document,
# its checks are the printed PASS/FAIL/SKIP lines in order with these names.
check_json() {
  python3 - "$@" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
lines = [l for l in open(sys.argv[2], encoding="utf-8", newline="").read().split("\n") if l[:6] in ("PASS: ", "FAIL: ", "SKIP: ")]
assert doc["schemaVersion"] == 1 and doc["kind"] == "gpubundle.verify", doc
assert doc["generator"].startswith("gpubundle ") and "(kit of recipe " in doc["generator"], doc["generator"]
assert doc["namespace"] == "gpu-operator", doc["namespace"]
import re
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["startedAt"]), doc["startedAt"]
got = [(c["status"], c["detail"]) for c in doc["checks"]]
assert got == [(l[:4], l[6:]) for l in lines], (got, lines)
assert [c["name"] for c in doc["checks"]] == sys.argv[3].split(), [c["name"] for c in doc["checks"]]
assert set(c.keys() == {"name", "status", "detail"} for c in doc["checks"]) <= {True}
s = doc["summary"]
assert (s["pass"], s["fail"], s["skip"]) == tuple(sum(c["status"] == k for c in doc["checks"]) for k in ("PASS", "FAIL", "SKIP")), s
PYEOF
}
for kc in dead noctx; do
  if KUBECONFIG="$work/$kc.kubeconfig" "$kit/verify.sh" --json "$work/verify.json" >"$work/vdead.out" 2>&1; then fail "verify.sh passed ($kc)"; fi
  case $kc in
    dead) fail_line="FAIL: ${dead#cluster: }" ;;
    noctx) fail_line="FAIL: kubectl has no current context (kubectl config use-context NAME, or set KUBECONFIG)" ;;
  esac
  grep -qxF "$fail_line" "$work/vdead.out" || fail "verify.sh ($kc): no plain FAIL line: $(cat "$work/vdead.out")"
  if grep -v -e '^FAIL: ' -e '^verify.sh: ' "$work/vdead.out"; then fail "verify.sh ($kc) printed raw kubectl output"; fi
  check_json "$work/verify.json" "$work/vdead.out" "cluster" || fail "verify.json ($kc): $(cat "$work/verify.json")"
done

# Bad usage: exit 2, nothing asked of the cluster.
kube_reset_requests
for args in "--json" "--json $work/no-such-folder/verify.json" "--frobnicate"; do
  rc=0
  # shellcheck disable=SC2086 # the words of $args are the arguments
  "$kit/verify.sh" $args >"$work/vusage.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "verify.sh $args: exit $rc, expected 2: $(cat "$work/vusage.out")"
  grep -q '^verify.sh: ' "$work/vusage.out" || fail "verify.sh $args: no line saying why: $(cat "$work/vusage.out")"
done
rc=0
"$kit/mig.sh" >"$work/vusage.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "mig.sh without nodes: exit $rc: $(cat "$work/vusage.out")"
[ -z "$(kube_requests True)" ] || fail "verify.sh or mig.sh asked the cluster after bad usage: $(kube_requests True)"

# mig.sh NODE...: one label patch per named node; a node that is not there stops it.
"$kit/mig.sh" node-a cpu-a >"$work/mig.out" 2>&1 || fail "mig.sh node-a cpu-a: $(cat "$work/mig.out")"
[ "$(kube_requests "$writes" | "$PY" -c 'import json,sys; print(" ".join(json.loads(l)["method"] + " " + json.loads(l)["path"] + " " + json.dumps(json.loads(l)["body"], sort_keys=True) for l in sys.stdin))')" = \
  'PATCH /api/v1/nodes/node-a {"metadata": {"labels": {"nvidia.com/mig.config": "all-balanced"}}} PATCH /api/v1/nodes/cpu-a {"metadata": {"labels": {"nvidia.com/mig.config": "all-balanced"}}}' ] ||
  fail "mig.sh node-a cpu-a wrote: $(kube_requests "$writes")"
if "$kit/mig.sh" node-z >"$work/mig.out" 2>&1; then fail "mig.sh labelled a node that is not there"; fi
grep -q 'nodes "node-z" not found' "$work/mig.out" || fail "mig.sh node-z: $(cat "$work/mig.out")"
# mig_state STATE: the test plays the MIG manager, reporting STATE on node-a.
mig_state() {
  printf 'apiVersion: v1\nkind: Node\nmetadata: {name: node-a, labels: {nvidia.com/gpu.present: "true", nvidia.com/mig.config: all-balanced, nvidia.com/mig.config.state: %s}}\nstatus: {allocatable: {cpu: "64", nvidia.com/gpu: "8", pods: "110"}}\n' "$1" >"$work/mig-state.yaml"
  "$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/mig-state.yaml" >/dev/null
}
mig_state success

# verify VERIFY_SH OUT [ARGS]: verify.sh, the test playing the kubelet (the smoke
# pod Succeeded once made); fails unless a smoke pod was made.
verify() {
  local script=$1 out=$2 rc=0 player
  shift 2
  kube_play_status Pod gpu-operator gpubundle-cuda-smoke '{"phase": "Succeeded"}' 30 &
  player=$!
  VERIFY_TIMEOUT=30 "$script" "$@" >"$out" 2>&1 || rc=$?
  wait "$player" || fail "verify.sh made no smoke pod: $(cat "$out")"
  return "$rc"
}

# A query the API server refuses (RBAC) is a FAIL line, and the other checks
# still run: the stand-in refuses kubectl's pod list 403 Forbidden, as the
# real server does for a user without "list pods".
pods=/api/v1/namespaces/gpu-operator/pods
message='pods is forbidden: User "viewer" cannot list resource "pods" in API group "" in the namespace "gpu-operator"'
forbidden="Error from server (Forbidden): $message"
"$PY" "$KUBE_TOOLS/kube_api.py" forbid --dir "$KUBE_DIR" "$pods" "$message" >/dev/null
if verify "$kit/verify.sh" "$work/vforbid.out"; then fail "verify.sh passed without pods"; fi
grep -qxF "FAIL: cannot list the pods in namespace gpu-operator ($forbidden)" "$work/vforbid.out" || fail "verify.sh: pods FAIL line: $(cat "$work/vforbid.out")"
[ "$(grep -c '^PASS:' "$work/vforbid.out")" -eq 3 ] || fail "verify.sh stopped after a refused query: $(cat "$work/vforbid.out")"
if grep -v -e '^FAIL: ' -e '^PASS: ' -e '^verify.sh: ' "$work/vforbid.out"; then fail "verify.sh printed raw kubectl output"; fi
# Whatever kubectl says lands in the JSON escaped: quotes, backslashes, tabs,
# carriage returns, other control characters, non-ASCII text, from the server.
hostile=$'"quoted" back\\slash\\n\ttab\rcr \x01\x1b[31m\x7f caf\xc3\xa9 \xe2\x82\xac %s %d'
"$PY" "$KUBE_TOOLS/kube_api.py" forbid --dir "$KUBE_DIR" "$pods" "$hostile" >/dev/null
said=$("$KUBECTL" -n gpu-operator get pods -o jsonpath='{.items[*].metadata.name}' 2>&1 >/dev/null) && fail "kubectl listed the forbidden pods"
[[ $said == *"$hostile"* ]] || fail "kubectl did not pass the server's text on: $said"
if verify "$kit/verify.sh" "$work/vjson.out" --json "$work/verify.json"; then
  fail "verify.sh --json passed without pods"
fi
check_json "$work/verify.json" "$work/vjson.out" "pods node-gpus mig cuda-smoke" || fail "verify.json (hostile kubectl error): $(cat "$work/verify.json")"
python3 - "$work/verify.json" "$said" <<'PYEOF' || fail "verify.json: the hostile kubectl error did not come back unchanged"
import json, os, sys
detail = json.load(open(sys.argv[1], encoding="utf-8"))["checks"][0]["detail"]
assert detail == "cannot list the pods in namespace gpu-operator (" + os.fsdecode(os.fsencode(sys.argv[2])) + ")", repr(detail)
PYEOF
if compgen -G "$work/verify.json.*" >/dev/null; then fail "verify.sh --json left a temporary file"; fi
"$PY" "$KUBE_TOOLS/kube_api.py" forbid --dir "$KUBE_DIR" "$pods" >/dev/null

# The MIG manager reports failure: a FAIL line naming the node, in the JSON too.
mig_state failed
if verify "$kit/verify.sh" "$work/vjson.out" --json "$work/verify.json"; then fail "verify.sh --json passed with a failed MIG state"; fi
grep -qx "FAIL: node node-a: nvidia.com/mig.config.state is 'failed', expected success" "$work/vjson.out" || fail "verify.sh MIG failure line: $(cat "$work/vjson.out")"
check_json "$work/verify.json" "$work/vjson.out" "pods node-gpus mig cuda-smoke" || fail "verify.json (MIG failed): $(cat "$work/verify.json")"
grep -q '"summary": {"pass": 3, "fail": 1, "skip": 0}' "$work/verify.json" || fail "verify.json summary (MIG failed): $(cat "$work/verify.json")"
echo "ok: verify.sh's FAIL lines and JSON (real kubectl: a dead API server, no context, a failed MIG state, a list RBAC refuses)"

# The smoke pod is the kit's cuda-smoke-pod.yaml, a site's edits kept, with the
# node's GPU resource on its marked line; a resource name that is no NVIDIA GPU
# resource never reaches the manifest.
mig_state success
mkdir -p "$work/vedit"
cp "$kit/verify.sh" "$kit/cuda-smoke-pod.yaml" "$work/vedit/"
sed -i 's|^    app.kubernetes.io/managed-by: gpubundle$|&\n    site.example/edited: "yes"|' "$work/vedit/cuda-smoke-pod.yaml"
kube_reset_requests
verify "$work/vedit/verify.sh" "$work/vedit.out" || fail "verify.sh with an edited smoke pod: $(cat "$work/vedit.out")"
kube_requests "$writes and r['path'].endswith('/pods')" >"$work/vedit.writes"
"$PY" - "$work/vedit.writes" <<'PYEOF' || fail "the edited smoke pod (above)"
import json, sys
pods = [json.loads(l)["body"] for l in open(sys.argv[1])]
assert len(pods) == 1, pods
pod = pods[0]
assert pod["metadata"]["labels"]["site.example/edited"] == "yes", pod["metadata"]
assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}, pod["spec"]["containers"][0]
PYEOF
"$PY" - "$work/hostile-node.json" <<'PYEOF'
import json, sys
json.dump({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "node-a", "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/mig.config": "all-balanced",
                                                    "nvidia.com/mig.config.state": "success"}},
           "status": {"allocatable": {"cpu": "64", 'nvidia.com/mig-1g.5gb"}],"hostPID":true,"x":[{': "1", "pods": "110"}}},
          open(sys.argv[1], "w"))
PYEOF
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/hostile-node.json" >/dev/null
kube_reset_requests
if VERIFY_TIMEOUT=5 "$work/vedit/verify.sh" >"$work/vhostile.out" 2>&1; then fail "verify.sh passed with a hostile resource name"; fi
grep -qF "FAIL: CUDA smoke pod: the node's resource $(printf '%q' 'nvidia.com/mig-1g.5gb"}],"hostPID":true,"x":[{') is no NVIDIA GPU resource name" "$work/vhostile.out" ||
  fail "verify.sh, hostile resource name: $(cat "$work/vhostile.out")"
[ -z "$(kube_requests "$writes and r['path'].endswith('/pods')")" ] || fail "verify.sh made a pod for a hostile resource name"
mig_state success
sed -i 's/  # verify.sh: resource$//' "$work/vedit/cuda-smoke-pod.yaml"
if VERIFY_TIMEOUT=5 "$work/vedit/verify.sh" >"$work/vnomark.out" 2>&1; then fail "verify.sh passed without the marked line"; fi
grep -qF 'FAIL: CUDA smoke pod: '"$work/vedit"'/cuda-smoke-pod.yaml is missing, or its marked line ("# verify.sh: resource") is not the kit'"'"'s' "$work/vnomark.out" ||
  fail "verify.sh without the marked line: $(cat "$work/vnomark.out")"
for bad in 'GPUBUNDLE_NAMESPACE=x$(id)' 'VERIFY_TIMEOUT=1;id'; do
  rc=0
  env "$bad" "$kit/verify.sh" >"$work/vbadenv.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/vbadenv.out")" -eq 1 ] || fail "verify.sh with $bad: exit $rc: $(cat "$work/vbadenv.out")"
done
echo "ok: verify.sh's smoke pod is the kit's file (a site's edit kept); a hostile resource name, a missing marker, bad environment refused"

# The DRA kit: the GPUs are the gpu.nvidia.com ResourceSlices' devices, no node
# resources asked for, no smoke pod.
kube_reset_requests
"$work/drakit/verify.sh" >"$work/dra.out" 2>&1 || fail "verify.sh (DRA): $(cat "$work/dra.out")"
grep -qx 'PASS: node node-a DRA devices: gpu-0 gpu-1' "$work/dra.out" || fail "verify.sh (DRA): no ResourceSlice line: $(cat "$work/dra.out")"
[ "$(grep -c '^PASS: node ' "$work/dra.out")" -eq 1 ] || fail "verify.sh (DRA): a slice of another driver counted: $(cat "$work/dra.out")"
grep -q '^SKIP: CUDA smoke pod: the DRA stack' "$work/dra.out" || fail "verify.sh (DRA): smoke pod: $(cat "$work/dra.out")"
if [ -z "$(kube_requests "r['path'] == '/apis/resource.k8s.io/v1beta1/resourceslices'")" ] || [ -n "$(kube_requests "r['path'] == '/api/v1/nodes'")" ]; then
  fail "verify.sh (DRA) queries: $(kube_requests "r['method'] == 'GET'" | cut -c1-200)"
fi

# The precompiled kit (no pull secret): the time-slicing ConfigMap goes in
# before helm installs the chart; alerts.yaml is skipped, the cluster having no
# PrometheusRule CRD.
kube_reset_requests
"$work/prekit/install.sh" >"$work/pre.out" 2>&1 || fail "precompiled install.sh: $(cat "$work/pre.out")"
grep -q "skipping alerts.yaml" "$work/pre.out" || fail "alerts not skipped without the CRD: $(cat "$work/pre.out")"
kube_requests "$writes" >"$work/writes"
"$PY" - "$work/writes" "$work/prekit/time-slicing.yaml" <<'PYEOF' || fail "precompiled install.sh wrote (above)"
import json, sys, yaml
w = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["method"], r["path"], r["status"]) for r in w]
assert got == [("POST", "/api/v1/namespaces/gpu-operator/configmaps", 201),
               ("POST", "/api/v1/namespaces", 409),
               ("POST", "/api/v1/namespaces/gpu-operator/secrets", 201),
               ("PUT", "/api/v1/namespaces/gpu-operator/secrets/sh.helm.release.v1.gpu-operator.v1", 200)], "\n".join(map(str, got))
assert w[0]["body"]["metadata"]["name"] == yaml.safe_load(open(sys.argv[2]))["metadata"]["name"], w[0]["body"]
PYEOF
echo "ok: the DRA and precompiled kits with the real clients"
echo "PASS: install kit"
