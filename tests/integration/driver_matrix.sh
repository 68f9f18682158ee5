#!/usr/bin/env bash
# The driver build matrix past one machine (issue 32): a precompiled recipe
# with six kernels (two Debian ABIs, three flavours each) whose headers come
# from a signed apt stand-in, and the stand-in installer.
#   1. One machine: `gpubundle build --installer` makes the bundle.
#   2. The matrix: `driver plan --format json`, then its six entries as six
#      `driver build --plan --entry N` processes at once (the stand-in for six
#      Jobs), each with its own empty store, pushing into a real
#      docker-registry; then `build --driver-results` assembles a bundle,
#      which must be byte-identical to the one-machine bundle.
#   3. An entry killed mid-build and run again gives the same digest.
#   4. Assembly refuses: a missing result, a retagged pushed image, a result
#      naming another entry's image, a corrupted blob in the registry; each
#      names the image.
#   5. The k8s-job and argo documents validate against their schemas
#      (batch/v1 from the Kubernetes models; Argo's Workflow CRD v4.1.2 kept
#      in fixtures/argo) and pass `kubectl apply --dry-run=client` against
#      the API stand-in.
set -euo pipefail
GB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
command -v docker-registry skopeo apt-ftparchive gpg >/dev/null ||
  { echo "SKIP: docker-registry, skopeo, apt-ftparchive or gpg missing"; exit 77; }
W=$(mktemp -d -t gb-driver-matrix.XXXXXX)
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  "$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true
  "$PY" "$TOOLS/kube_api.py" stop --dir "$W/api" >/dev/null 2>&1 || true
  standin_stop "$W"
  rm -rf "$W"
}
trap cleanup EXIT
[[ -n ${GB_KEEP:-} ]] && trap - EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
export TMPDIR=$W SOURCE_DATE_EPOCH=1764460800

# shellcheck source=tests/integration/driver_matrix_lib.sh
source "$HERE/driver_matrix_lib.sh"
matrix_setup

# 1. One machine.
t0=$(date +%s)
"$GB" --store "$W/one" -q build "$W/recipe.yaml" -o "$W/one.bundle" --key "$W/release.key" --lock "$W/one.lock.json" \
  --registry-config "$W/registries.yaml" --installer "$run" --driver-base "$base" 2> "$W/one.err" || { cat "$W/one.err"; fail "build"; }
t1=$(date +%s)
echo "ok: one machine built ${#kernels[@]} driver images and the bundle in $((t1 - t0)) s"

# 2. The plan, then every entry at once, each in its own store.
"$GB" driver plan "$W/one.lock.json" --recipe "$W/recipe.yaml" --push "$push" --installer "$run" --base "$base" \
  --registry-config "$W/build-registries.yaml" --format json > "$W/plan.json" || fail "driver plan"
[[ $(jget "$W/plan.json" 'len(d["entries"])') == "${#kernels[@]}" ]] || fail "plan entries: $(cat "$W/plan.json")"
[[ $(jget "$W/plan.json" '",".join(e["kernel"] for e in d["entries"])') == "$klist" ]] || fail "plan kernels"
[[ $(jget "$W/plan.json" 'd["entries"][1]["pushed"]') == "$push/nvidia/driver:580-${kernels[1]}-ubuntu22.04" ]] || fail "pushed name"
# The entry's own args are a working command line too (CI matrices use them).
[[ $(jget "$W/plan.json" '" ".join(d["entries"][2]["args"][:5])') == "driver build $W/recipe.yaml --kernel ${kernels[2]}" ]] ||
  fail "entry args: $(jget "$W/plan.json" 'd["entries"][2]["args"]')"
mkdir -p "$W/results"
pids=()
t0=$(date +%s)
for i in "${!kernels[@]}"; do
  "$GB" --store "$W/entry-$i" -q driver build --plan "$W/plan.json" --entry "$i" --result "$W/results/$i.json" \
    > "$W/entry-$i.out" 2> "$W/entry-$i.err" &
  pids+=($!)
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || { cat "$W/entry-$i.err"; fail "entry $i"; }; done
t1=$(date +%s)
echo "ok: ${#kernels[@]} entries in parallel, each pushing to $push, in $((t1 - t0)) s"
for i in "${!kernels[@]}"; do
  want=$(jget "$W/one.lock.json" '[x["digest"] for x in d["images"] if x["source"] == "nvcr.io/nvidia/driver:580-'"${kernels[$i]}"'-ubuntu22.04"][0]')
  got=$(jget "$W/results/$i.json" 'd["digest"]')
  [[ $got == "$want" ]] || fail "entry $i (${kernels[$i]}): $got, one machine made $want"
  skopeo inspect --tls-verify=false --raw "docker://$push/nvidia/driver:580-${kernels[$i]}-ubuntu22.04" | sha256sum |
    grep -q "^${got#sha256:} " || fail "the build registry's ${kernels[$i]} image is not $got"
done
echo "ok: every entry's digest is the one-machine digest, and the registry holds it"

"$GB" --store "$W/assembly" -q build "$W/recipe.yaml" -o "$W/matrix.bundle" --key "$W/release.key" --lock "$W/matrix.lock.json" \
  --registry-config "$W/build-registries.yaml" --driver-results "$W"/results/*.json 2> "$W/assembly.err" ||
  { cat "$W/assembly.err"; fail "assembly"; }
cmp "$W/one.bundle" "$W/matrix.bundle" || fail "the assembled bundle differs from the one-machine bundle"
cmp "$W/one.lock.json" "$W/matrix.lock.json" || fail "the assembled lock differs"
echo "ok: the assembled bundle is byte-identical to the one-machine bundle"
# mirror takes the results too: the same lock, the images in its store.
"$GB" --store "$W/mirrored" -q mirror "$W/recipe.yaml" -o "$W/mirrored.lock.json" --registry-config "$W/build-registries.yaml" \
  --driver-results "$W"/results/*.json 2> "$W/mirrored.err" || { cat "$W/mirrored.err"; fail "mirror --driver-results"; }
cmp "$W/one.lock.json" "$W/mirrored.lock.json" || fail "mirror --driver-results wrote another lock"
echo "ok: mirror --driver-results records the same lock"

# 3. A killed entry, run again in the same store. It is killed while its
# module build runs (headers fetched and stored, nothing pushed): a `make`
# first on PATH says so and waits, whatever the disk's speed.
mkdir -p "$W/stall"
cat > "$W/stall/make" <<'SH'
#!/bin/sh
echo $$ > "$STALL_MARK.tmp" && mv "$STALL_MARK.tmp" "$STALL_MARK"
exec sleep 60
SH
chmod +x "$W/stall/make"
STALL_MARK=$W/stall/started PATH=$W/stall:$PATH \
  "$GB" --store "$W/killed" -q driver build --plan "$W/plan.json" --entry 4 --result "$W/killed.json" > /dev/null 2>&1 &
victim=$!
for _ in $(seq 1 600); do
  [[ -s $W/stall/started ]] && break
  kill -0 "$victim" 2>/dev/null || fail "entry 4 ended before its module build"
  sleep 0.1
done
[[ -s $W/stall/started ]] || fail "entry 4 did not reach its module build in 60 s"
kill -9 "$victim" 2>/dev/null || fail "entry 4 ended before it could be killed"
kill "$(cat "$W/stall/started")" 2>/dev/null || true
wait "$victim" 2>/dev/null || true
[[ ! -e $W/killed.json ]] || fail "a killed entry left a result"
"$GB" --store "$W/killed" -q driver build --plan "$W/plan.json" --entry 4 --result "$W/killed.json" 2> "$W/killed.err" ||
  { cat "$W/killed.err"; fail "entry 4 again"; }
[[ $(jget "$W/killed.json" 'd["digest"]') == $(jget "$W/results/4.json" 'd["digest"]') ]] || fail "entry 4 again: another digest"
echo "ok: entry 4 killed and run again: the same digest, the push skipped what was there"

# 4. Assembly refuses what does not match, naming the image; the store keeps nothing of it.
expect() {  # expect RC PATTERN... -- command
  local want=$1; shift
  local pats=()
  while [[ $1 != -- ]]; do pats+=("$1"); shift; done; shift
  set +e; "$@" > "$W/x.out" 2> "$W/x.err"; local rc=$?; set -e
  [[ $rc == "$want" ]] || fail "$* -> rc $rc, want $want: $(cat "$W/x.err")"
  for p in "${pats[@]}"; do grep -qF -- "$p" "$W/x.err" || fail "$* -> no '$p' in: $(cat "$W/x.err")"; done
}
assemble() {  # assemble BUNDLE RESULT...
  local out=$1; shift
  "$GB" --store "$W/store-$out" -q build "$W/recipe.yaml" -o "$W/$out" --key "$W/release.key" --lock "$W/$out.lock.json" \
    --registry-config "$W/build-registries.yaml" --driver-results "$@"
}
few=("$W"/results/[0-4].json)
expect 2 "no driver result for nvcr.io/nvidia/driver:580-${kernels[5]}-ubuntu22.04" "driver plan" -- assemble missing.bundle "${few[@]}"
"$PY" - "$W/results/1.json" "$W/results/2.json" "$W/swapped.json" <<'PY'
import json, sys
one, two = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
one["pushed"], one["digest"] = two["pushed"], two["digest"]   # entry 1's name, entry 2's image
open(sys.argv[3], "w").write(json.dumps(one) + "\n")
PY
others=("$W"/results/0.json "$W"/results/[2-5].json)
expect 2 "nvcr.io/nvidia/driver:580-${kernels[1]}-ubuntu22.04" "built for kernel" -- assemble swapped.bundle "${others[@]}" "$W/swapped.json"
# The build registry's tag of entry 3 moved to entry 0's image.
skopeo copy -q --src-tls-verify=false --dest-tls-verify=false "docker://$push/nvidia/driver:580-${kernels[0]}-ubuntu22.04" \
  "docker://$push/nvidia/driver:580-${kernels[3]}-ubuntu22.04"
expect 1 "nvcr.io/nvidia/driver:580-${kernels[3]}-ubuntu22.04" "$(jget "$W/results/3.json" 'd["digest"]')" -- \
  assemble moved.bundle "$W"/results/*.json
[[ ! -e $W/missing.bundle && ! -e $W/swapped.bundle && ! -e $W/moved.bundle ]] || fail "a refused assembly wrote a bundle"
echo "ok: assembly refused a missing entry, a swapped result and a moved tag, each naming the image"
# Put entry 3's tag back, then corrupt one of its layers in the registry's storage.
skopeo copy -q --src-tls-verify=false --dest-tls-verify=false \
  "docker://$push/nvidia/driver@$(jget "$W/results/3.json" 'd["digest"]')" "docker://$push/nvidia/driver:580-${kernels[3]}-ubuntu22.04"
layer=$(skopeo inspect --tls-verify=false --raw "docker://$push/nvidia/driver:580-${kernels[3]}-ubuntu22.04" |
  "$PY" -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"].split(":")[1])')
data=$(find "$W/reg" -path "*/blobs/sha256/${layer:0:2}/$layer/data" | head -n1)
[[ -n $data ]] || fail "no blob file for layer $layer in the build registry"
printf 'X' | dd of="$data" bs=1 seek=100 conv=notrunc status=none
expect 1 "nvcr.io/nvidia/driver:580-${kernels[3]}-ubuntu22.04" -- assemble corrupt.bundle "$W"/results/*.json
[[ ! -e $W/corrupt.bundle ]] || fail "a corrupted layer was assembled"
echo "ok: a layer corrupted in the build registry is refused at assembly"

# 5. The Kubernetes documents.
for fmt in k8s-job argo; do
  "$GB" driver plan "$W/one.lock.json" --recipe recipe.yaml --installer NVIDIA-Linux-x86_64-580.95.05.run --push "$push" \
    --sign-key signing.key --sign-cert signing.crt --sign-secret gpubundle-signing \
    --registry-config registries.yaml --registry-secret gpubundle-registry --parallelism 3 --format "$fmt" > "$W/$fmt.yaml" ||
    fail "driver plan --format $fmt"
done
"$PY" - "$W/k8s-job.yaml" "$W/argo.yaml" "${#kernels[@]}" <<'PY' || fail "documents"
import json, sys, yaml
job = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d][1]
n = int(sys.argv[3])
s = job["spec"]
assert (s["completionMode"], s["completions"], s["parallelism"]) == ("Indexed", n, 3), s
c = s["template"]["spec"]["containers"][0]
assert c["args"][:8] == ["--store", "/work/store", "driver", "build", "--plan", "/plan/plan.json", "--entry", "$(GPUBUNDLE_ENTRY)"], c["args"]
cm = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d][0]
plan = json.loads(cm["data"]["plan.json"])
assert plan["signKey"] == "/keys/signing.key" and plan["registryConfig"] == "/registry/registries.yaml", plan
assert len(plan["entries"]) == n
wf = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d][1]
step = wf["spec"]["templates"][0]["steps"][0][0]
assert step["withSequence"]["count"] == str(n) and wf["spec"]["parallelism"] == 3, wf["spec"]
PY
xz -dc "$HERE/fixtures/argo/workflows-crd-v4.1.2.yaml.xz" > "$W/argo-crd.yaml"
if /usr/bin/python3 -c 'import jsonschema, kubernetes, yaml' 2>/dev/null; then
  "$PY" "$TOOLS/k8s_schema.py" --crd "$W/argo-crd.yaml" "$W/k8s-job.yaml" "$W/argo.yaml" || fail "schema"
  # A broken copy must be refused: an unknown field in the Workflow's template.
  sed 's/^\(\s*\)retryStrategy:/\1retryStrategi:/' "$W/argo.yaml" > "$W/argo-bad.yaml"
  if "$PY" "$TOOLS/k8s_schema.py" --crd "$W/argo-crd.yaml" "$W/argo-bad.yaml" > /dev/null 2>&1; then fail "schema passed a broken Workflow"; fi
  sed 's/^\(\s*\)completionMode:/\1completionMood:/' "$W/k8s-job.yaml" > "$W/job-bad.yaml"
  if "$PY" "$TOOLS/k8s_schema.py" "$W/job-bad.yaml" > /dev/null 2>&1; then fail "schema passed a broken Job"; fi
  echo "ok: the Indexed Job and the Argo Workflow validate against their schemas; broken copies do not"
else
  echo "note: python3-jsonschema or python3-kubernetes missing: schema checks skipped"
fi
SRC=$HERE/../..
work=$W
source "$HERE/kube_lib.sh"
if kube_clients_present; then
  kube_start api --seed "$W/argo-crd.yaml"
  for fmt in k8s-job argo; do
    "$KUBECTL" apply --dry-run=client -f "$W/$fmt.yaml" > "$W/$fmt.dry" 2>&1 || { cat "$W/$fmt.dry"; fail "kubectl dry-run $fmt"; }
    grep -q "created (dry run)" "$W/$fmt.dry" || fail "kubectl dry-run $fmt: $(cat "$W/$fmt.dry")"
  done
  echo "ok: kubectl apply --dry-run=client takes both"
else
  echo "note: $KUBE_SKIP: kubectl checks skipped"
fi
echo "PASS driver-matrix"
