#!/usr/bin/env bash
# Install kit end to end, no cluster: resolve a recipe against the stand-in chart,
# fill fake digests, run `gpubundle overrides`, then
#   - shellcheck install.sh, mig.sh, verify.sh;
#   - manifest.json matches the lock (YAML parsing is covered by the unit
#     tests with yaml-cpp);
#   - install.sh --dry-run with stub helm and kubectl on PATH that record their
#     arguments, and assert on those arguments;
#   - install.sh names every missing prerequisite at once, and says plainly when
#     the API server does not answer (stub kubectl failing as real kubectl does);
#   - verify.sh turns a dead cluster or a refused query into its own FAIL lines;
#   - verify.sh --json writes the gpubundle.verify JSON (docs/acceptance-results.md):
#     one entry per printed line, in order, hostile text escaped, same exit code;
#   - mig.sh labels nodes through the stub kubectl;
#   - the same lock gives the same bytes.
# Usage: kit.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
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

shellcheck -s bash "$kit/install.sh" "$kit/mig.sh" "$kit/verify.sh" || fail "shellcheck"

# manifest.json: one entry per lock image, same digests.
python3 - "$work/lock.json" "$kit/manifest.json" <<'EOF' || fail "manifest.json"
import json, sys
lock = json.load(open(sys.argv[1])); man = json.load(open(sys.argv[2]))
assert [i["source"] for i in man["images"]] == [i["source"] for i in lock["images"]]
assert [i["digest"] for i in man["images"]] == [i["digest"] for i in lock["images"]]
assert all(i["destination"].startswith("registry.site:5000/gpu/") for i in man["images"])
assert man["chart"]["file"] == "gpu-operator-v26.7.0.tgz" and man["bundleId"] == ""
EOF

# Stub helm and kubectl: record arguments, answer the queries install.sh makes.
stubs="$work/stubs"
mkdir -p "$stubs"
cat >"$stubs/helm" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/helm.args"
EOF
cat >"$stubs/kubectl" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/kubectl.args"
case "$*" in
  "config current-context") [ -n "${STUB_NO_CONTEXT:-}" ] && exit 1; echo stub-context ;;
  "get namespace gpu-operator") exit 1 ;;            # not there yet
  "-n gpu-operator get secret site-registry") exit 1 ;;
  "get crd prometheusrules.monitoring.coreos.com") exit 0 ;;
esac
exit 0
EOF
chmod +x "$stubs/helm" "$stubs/kubectl"
export STUB_LOG="$work/log"
mkdir -p "$STUB_LOG"

out="$(PATH="$stubs:$PATH" "$kit/install.sh" --dry-run)" || fail "install.sh --dry-run failed: $out"
echo "$out"
# (a dry run first asks for the chart's CRDs: the stub's chart has none; kit-cluster-install
# runs the real chart, whose CRDs a fresh cluster lacks)
expected_helm="show crds $kit/gpu-operator-v26.7.0.tgz
upgrade --install gpu-operator $kit/gpu-operator-v26.7.0.tgz -f $kit/values.yaml --namespace gpu-operator --create-namespace --wait --timeout 15m --dry-run"
[ "$(cat "$STUB_LOG/helm.args")" = "$expected_helm" ] || fail "helm got: $(cat "$STUB_LOG/helm.args")"$'\n'"expected: $expected_helm"
grep -qx "create namespace gpu-operator --dry-run=client" "$STUB_LOG/kubectl.args" || fail "no dry-run namespace create"
grep -qx "apply -n gpu-operator -f $kit/alerts.yaml --dry-run=client" "$STUB_LOG/kubectl.args" || fail "alerts not applied in dry-run mode"
if grep -v -e '--dry-run=client' "$STUB_LOG/kubectl.args" | grep -E '^(apply|create|label|delete)' >/dev/null; then
  fail "dry run changed something: $(cat "$STUB_LOG/kubectl.args")"
fi
grep -q "pull secret site-registry is missing" <<<"$out" || fail "no warning about the missing pull secret"

# Without --dry-run the missing pull secret stops the install before helm runs.
rm -f "$STUB_LOG"/*.args
if PATH="$stubs:$PATH" "$kit/install.sh" >"$work/real.out" 2>&1; then fail "install.sh ran without its pull secret"; fi
grep -q "kubectl -n gpu-operator create secret docker-registry site-registry --docker-server=registry.site:5000" "$work/real.out" ||
  fail "no hint how to create the secret: $(cat "$work/real.out")"
[ ! -e "$STUB_LOG/helm.args" ] || fail "helm ran although the pull secret is missing"

# Missing prerequisites are named.
mkdir -p "$work/nohelm"
ln -s "$stubs/kubectl" "$work/nohelm/kubectl"
if PATH="$work/nohelm:/usr/bin:/bin" bash "$kit/install.sh" --dry-run >"$work/nohelm.out" 2>&1; then fail "install.sh ran without helm"; fi
grep -q "missing prerequisite: helm" "$work/nohelm.out" || fail "helm not named as missing: $(cat "$work/nohelm.out")"
if STUB_NO_CONTEXT=1 PATH="$stubs:$PATH" "$kit/install.sh" --dry-run >"$work/noctx.out" 2>&1; then fail "install.sh ran without a context"; fi
grep -q "missing prerequisite: kubectl context" "$work/noctx.out" || fail "context not named: $(cat "$work/noctx.out")"

# ...all of them at once: no helm and no context are both named.
if STUB_NO_CONTEXT=1 PATH="$work/nohelm:/usr/bin:/bin" bash "$kit/install.sh" --dry-run >"$work/none.out" 2>&1; then fail "install.sh ran without helm or a context"; fi
grep -q "missing prerequisite: helm" "$work/none.out" && grep -q "missing prerequisite: kubectl context" "$work/none.out" ||
  fail "not every missing prerequisite named: $(cat "$work/none.out")"

# A cluster that does not answer: kubectl's local config works, every request
# fails the way real kubectl fails when the API server is down.
dstubs="$work/dstubs"
mkdir -p "$dstubs"
cat >"$dstubs/kubectl" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/dead.args"
case "$*" in
  "config current-context") echo stub-context; exit 0 ;;
  "config view --minify -o jsonpath="*) printf 'https://127.0.0.1:6443'; exit 0 ;;
  "create "*|"apply "*)
    echo 'error: error validating "STDIN": error validating data: failed to download openapi: Get "https://127.0.0.1:6443/openapi/v2?timeout=32s": dial tcp 127.0.0.1:6443: connect: connection refused; if you choose to ignore these errors, turn validation off with --validate=false' >&2 ;;
  *)
    echo 'E1201 06:00:00.000000    4242 memcache.go:265] couldn'"'"'t get current server API group list: Get "https://127.0.0.1:6443/api?timeout=32s": dial tcp 127.0.0.1:6443: connect: connection refused' >&2
    echo 'The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?' >&2 ;;
esac
exit 1
EOF
chmod +x "$dstubs/kubectl"
ln -s "$stubs/helm" "$dstubs/helm"
rm -f "$STUB_LOG"/*.args
dead_line="cluster: the Kubernetes API server of context stub-context at https://127.0.0.1:6443 does not answer (The connection to the server 127.0.0.1:6443 was refused"
for mode in --dry-run ""; do
  if PATH="$dstubs:$PATH" "$kit/install.sh" ${mode:+"$mode"} >"$work/dead.out" 2>&1; then fail "install.sh $mode succeeded against a dead cluster"; fi
  grep -qF "install.sh: missing prerequisite: $dead_line" "$work/dead.out" || fail "install.sh $mode: no plain dead-cluster line: $(cat "$work/dead.out")"
  if grep -e "creating namespace" -e "--validate=false" "$work/dead.out"; then fail "install.sh $mode went on against a dead cluster"; fi
done
[ ! -e "$STUB_LOG/helm.args" ] || fail "helm ran against a dead cluster"
if grep -E '^(apply|create|label|delete)' "$STUB_LOG/dead.args"; then fail "install.sh tried to change a dead cluster"; fi
# No helm as well: both are named in one run.
mkdir -p "$work/deadnohelm"
ln -s "$dstubs/kubectl" "$work/deadnohelm/kubectl"
if PATH="$work/deadnohelm:/usr/bin:/bin" bash "$kit/install.sh" >"$work/dead2.out" 2>&1; then fail "install.sh ran without helm"; fi
grep -q "missing prerequisite: helm" "$work/dead2.out" && grep -qF "$dead_line" "$work/dead2.out" ||
  fail "no helm and a dead cluster not both named: $(cat "$work/dead2.out")"

# verify.sh against the dead cluster: its own FAIL line, no raw kubectl output.
if PATH="$dstubs:$PATH" "$kit/verify.sh" >"$work/vdead.out" 2>&1; then fail "verify.sh passed against a dead cluster"; fi
grep -qxF "FAIL: the Kubernetes API server of context stub-context at https://127.0.0.1:6443 does not answer (The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?)" \
  "$work/vdead.out" || fail "verify.sh: no plain dead-cluster FAIL line: $(cat "$work/vdead.out")"
if grep -v -e '^FAIL: ' -e '^verify.sh: ' "$work/vdead.out"; then fail "verify.sh printed raw kubectl output against a dead cluster"; fi

# mig.sh.
rm -f "$STUB_LOG"/*.args
PATH="$stubs:$PATH" "$kit/mig.sh" node-a node-b >/dev/null
[ "$(cat "$STUB_LOG/kubectl.args")" = "label node node-a --overwrite nvidia.com/mig.config=all-balanced
label node node-b --overwrite nvidia.com/mig.config=all-balanced" ] || fail "mig.sh: $(cat "$STUB_LOG/kubectl.args")"
rm -f "$STUB_LOG"/*.args
PATH="$stubs:$PATH" "$kit/mig.sh" --all-gpu-nodes >/dev/null
[ "$(cat "$STUB_LOG/kubectl.args")" = "label nodes -l nvidia.com/gpu.present=true --overwrite nvidia.com/mig.config=all-balanced" ] ||
  fail "mig.sh --all-gpu-nodes: $(cat "$STUB_LOG/kubectl.args")"
if PATH="$stubs:$PATH" "$kit/mig.sh" >/dev/null 2>&1; then fail "mig.sh without nodes succeeded"; fi

# verify.sh against a stub cluster: one GPU node, MIG applied, smoke pod succeeds.
vstubs="$work/vstubs"
mkdir -p "$vstubs"
cat >"$vstubs/kubectl" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/verify.args"
case "$*" in
  "config current-context") echo stub-context ;;
  "-n gpu-operator get pods -o jsonpath="*)
    if [ -n "${STUB_PODS_FORBIDDEN:-}" ]; then
      printf '%s\n' "${STUB_PODS_ERROR:-Error from server (Forbidden): pods is forbidden: User \"viewer\" cannot list resource \"pods\" in API group \"\" in the namespace \"gpu-operator\"}" >&2
      exit 1
    fi
    printf 'gpu-operator-1 Running True\nnvidia-cuda-validator-x Succeeded False\n' ;;
  "get nodes -l nvidia.com/gpu.present=true -o go-template="*) printf 'node-a cpu=64 nvidia.com/gpu=8 pods=110\n' ;;
  "get resourceslices -o jsonpath="*) printf 'node-a gpu-0 gpu-1\n' ;;
  "get nodes -l nvidia.com/gpu.present=true -o jsonpath="*) printf 'node-a all-balanced %s\n' "${STUB_MIG_STATE:-success}" ;;
  "-n gpu-operator apply -f -") cat >"$STUB_LOG/smoke-pod.yaml" ;;
  "-n gpu-operator get pod gpubundle-cuda-smoke -o jsonpath={.status.phase}") echo Succeeded ;;
esac
exit 0
EOF
chmod +x "$vstubs/kubectl"
vout="$(PATH="$vstubs:$PATH" "$kit/verify.sh")" || fail "verify.sh failed on a healthy stub cluster: $vout"
[ "$(grep -c '^PASS:' <<<"$vout")" -eq 4 ] || fail "verify.sh: expected 4 PASS lines: $vout"
grep -q 'image: "registry.site:5000/gpu/nvidia/cuda:12.4.1-base-ubuntu22.04"' "$STUB_LOG/smoke-pod.yaml" ||
  fail "smoke pod image: $(cat "$STUB_LOG/smoke-pod.yaml")"
grep -q '"nvidia.com/gpu": 1' "$STUB_LOG/smoke-pod.yaml" || fail "smoke pod resource"
grep -q 'imagePullSecrets: \[{name: "site-registry"}\]' "$STUB_LOG/smoke-pod.yaml" || fail "smoke pod pull secret"
if vout="$(STUB_MIG_STATE=failed PATH="$vstubs:$PATH" "$kit/verify.sh")"; then fail "verify.sh passed with a failed MIG state"; fi
grep -q "^FAIL: node node-a: nvidia.com/mig.config.state is 'failed'" <<<"$vout" || fail "verify.sh MIG failure line: $vout"
# A query the API server refuses is a FAIL line too, and the other checks still run.
if STUB_PODS_FORBIDDEN=1 PATH="$vstubs:$PATH" "$kit/verify.sh" >"$work/vforbid.out" 2>&1; then fail "verify.sh passed without pods"; fi
grep -qxF "FAIL: cannot list the pods in namespace gpu-operator (Error from server (Forbidden): pods is forbidden: User \"viewer\" cannot list resource \"pods\" in API group \"\" in the namespace \"gpu-operator\")" \
  "$work/vforbid.out" || fail "verify.sh: pods FAIL line: $(cat "$work/vforbid.out")"
[ "$(grep -c '^PASS:' "$work/vforbid.out")" -eq 3 ] || fail "verify.sh stopped after a refused query: $(cat "$work/vforbid.out")"
if grep -v -e '^FAIL: ' -e '^PASS: ' -e '^verify.sh: ' "$work/vforbid.out"; then fail "verify.sh printed raw kubectl output"; fi

# verify.sh --json: the same lines as JSON, the same exit code.
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
PATH="$vstubs:$PATH" "$kit/verify.sh" --json "$work/verify.json" >"$work/vjson.out" || fail "verify.sh --json failed: $(cat "$work/vjson.out")"
check_json "$work/verify.json" "$work/vjson.out" "pods node-gpus mig cuda-smoke" || fail "verify.json: $(cat "$work/verify.json")"
if compgen -G "$work/*.tmp.*" >/dev/null; then fail "verify.sh --json left a temporary file"; fi
if STUB_MIG_STATE=failed PATH="$vstubs:$PATH" "$kit/verify.sh" --json "$work/verify.json" >"$work/vjson.out"; then fail "verify.sh --json passed with a failed MIG state"; fi
check_json "$work/verify.json" "$work/vjson.out" "pods node-gpus mig cuda-smoke" || fail "verify.json (MIG failed): $(cat "$work/verify.json")"
grep -q '"summary": {"pass": 3, "fail": 1, "skip": 0}' "$work/verify.json" || fail "verify.json summary (MIG failed): $(cat "$work/verify.json")"
if PATH="$dstubs:$PATH" "$kit/verify.sh" --json "$work/verify.json" >"$work/vjson.out" 2>&1; then fail "verify.sh --json passed against a dead cluster"; fi
check_json "$work/verify.json" "$work/vjson.out" "cluster" || fail "verify.json (dead cluster): $(cat "$work/verify.json")"
# Whatever kubectl says lands in the JSON escaped: quotes, backslashes, tabs,
# carriage returns, other control characters, non-ASCII text.
hostile=$'Error from server: "quoted" back\\slash\\n\ttab\rcr \x01\x1b[31m\x7f caf\xc3\xa9 \xe2\x82\xac %s %d'
if STUB_PODS_FORBIDDEN=1 STUB_PODS_ERROR="$hostile" PATH="$vstubs:$PATH" "$kit/verify.sh" --json "$work/verify.json" >"$work/vjson.out" 2>&1; then
  fail "verify.sh --json passed without pods"
fi
check_json "$work/verify.json" "$work/vjson.out" "pods node-gpus mig cuda-smoke" || fail "verify.json (hostile kubectl error): $(cat "$work/verify.json")"
python3 - "$work/verify.json" "$hostile" <<'PYEOF' || fail "verify.json: the hostile kubectl error did not come back unchanged"
import json, os, sys
detail = json.load(open(sys.argv[1], encoding="utf-8"))["checks"][0]["detail"]
assert detail == "cannot list the pods in namespace gpu-operator (" + os.fsdecode(os.fsencode(sys.argv[2])) + ")", repr(detail)
PYEOF
# Bad usage: exit 2, nothing run.
: >"$STUB_LOG/verify.args"
for args in "--json" "--json $work/no-such-folder/verify.json" "--frobnicate"; do
  rc=0
  # shellcheck disable=SC2086 # the words of $args are the arguments
  PATH="$vstubs:$PATH" "$kit/verify.sh" $args >"$work/vusage.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "verify.sh $args: exit $rc, expected 2: $(cat "$work/vusage.out")"
  grep -q '^verify.sh: ' "$work/vusage.out" || fail "verify.sh $args: no line saying why: $(cat "$work/vusage.out")"
done
[ ! -s "$STUB_LOG/verify.args" ] || fail "verify.sh ran kubectl after bad usage"

# The DRA driver: GPUs are ResourceSlice devices, not nvidia.com/gpu.
sed -e '/^mig:/d' -e 's/^components:/components:\n  draDriver: true/' "$src/examples/conventional.yaml" >"$work/dra.yaml"
"$gpubundle" -q resolve "$work/dra.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/dra.lock.json"
"$gpubundle" -q overrides "$work/dra.lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/drakit"
: >"$STUB_LOG/verify.args"
vout="$(PATH="$vstubs:$PATH" "$work/drakit/verify.sh")" || fail "verify.sh (DRA) failed on a healthy stub cluster: $vout"
grep -qx 'PASS: node node-a DRA devices: gpu-0 gpu-1' <<<"$vout" || fail "verify.sh (DRA): no ResourceSlice line: $vout"
grep -q '^SKIP: CUDA smoke pod: the DRA stack' <<<"$vout" || fail "verify.sh (DRA): smoke pod: $vout"
grep -q '^get resourceslices' "$STUB_LOG/verify.args" && ! grep -q 'go-template' "$STUB_LOG/verify.args" ||
  fail "verify.sh (DRA) queries: $(cat "$STUB_LOG/verify.args")"

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
ostubs="$work/ostubs"
mkdir -p "$ostubs"
cat >"$ostubs/helm" <<'EOF'
#!/usr/bin/env bash
printf 'helm %s\n' "$*" >>"$STUB_LOG/order.args"
EOF
cat >"$ostubs/kubectl" <<'EOF'
#!/usr/bin/env bash
printf 'kubectl %s\n' "$*" >>"$STUB_LOG/order.args"
case "$*" in
  "config current-context") echo stub-context ;;
  "get namespace gpu-operator") exit 0 ;;
  "get crd prometheusrules.monitoring.coreos.com") exit 1 ;;
esac
exit 0
EOF
chmod +x "$ostubs/helm" "$ostubs/kubectl"
pout="$(PATH="$ostubs:$PATH" "$work/prekit/install.sh")" || fail "precompiled install.sh: $pout"
grep -q "skipping alerts.yaml" <<<"$pout" || fail "alerts not skipped without the CRD"
order="$(grep -E '^(helm upgrade|kubectl apply)' "$STUB_LOG/order.args")"
[ "$order" = "kubectl apply -n gpu-operator -f $work/prekit/time-slicing.yaml
helm upgrade --install gpu-operator $work/prekit/gpu-operator-v26.7.0.tgz -f $work/prekit/values.yaml --namespace gpu-operator --create-namespace --wait --timeout 15m" ] ||
  fail "install order: $order"

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
grep -q "docker.io/nvidia/cuda" "$work/collide.err" && grep -q "nvcr.io/nvidia/cuda" "$work/collide.err" || fail "collision message: $(cat "$work/collide.err")"

echo "PASS: install kit"
