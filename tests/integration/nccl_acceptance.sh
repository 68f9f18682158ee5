#!/usr/bin/env bash
# The kit's NCCL acceptance test, no cluster: resolve a recipe with
# acceptance.nccl against the stand-in chart, make the kit, then
#   - the lock carries the nccl-tests and MPI Operator images (components
#     ncclTests, mpiOperator) and every MPIJob image is on the site registry;
#   - shellcheck nccl-allreduce.sh;
#   - --parse on REAL all_reduce_perf output recorded on an H200
#     (fixtures/nccl/README.md): rows, bandwidths and the average equal the
#     log's columns, as an independent reading of the log finds them;
#   - hand-edited copies of that output (#wrong, out of bounds, truncated,
#     a bad number, garbage) and a bandwidth bound fail with one line;
#   - --dry-run and --install-mpi-operator against a stub kubectl.
# Usage: nccl_acceptance.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }
fixtures="$src/tests/integration/fixtures/nccl"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
sed 's/^extraImages:.*//' "$src/examples/conventional.yaml" >"$work/recipe.yaml"
cat >>"$work/recipe.yaml" <<'EOF'
acceptance:
  nccl:
    image: ghcr.io/example/nccl-tests:2.19.6
    nodes: 2
    gpusPerNode: 8
    maxBytes: 8G
    mpiOperator: {install: true}
EOF
"$gpubundle" -q resolve "$work/recipe.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
python3 - "$work/lock.json" <<'EOF' || fail "lock images"
import hashlib, json, sys
path = sys.argv[1]
lock = json.load(open(path))
by = {i["source"]: i["components"] for i in lock["images"]}
assert by.get("ghcr.io/example/nccl-tests:2.19.6") == ["ncclTests"], by
assert by.get("docker.io/mpioperator/mpi-operator:0.8.0") == ["mpiOperator"], by
spec = lock["recipe"]["spec"]
assert spec["acceptance"]["nccl"]["gpusPerNode"] == 8 and spec["acceptance"]["nccl"]["minBytes"] == "8", spec
for image in lock["images"]:
    image["digest"] = "sha256:" + hashlib.sha256(image["source"].encode()).hexdigest()
json.dump(lock, open(path, "w"), indent=2, sort_keys=True)
EOF

kit="$work/kit"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$kit"
script="$kit/acceptance/nccl-allreduce.sh"
[ -x "$script" ] || fail "kit lacks an executable acceptance/nccl-allreduce.sh"
grep -q 'ncclTests\|mpiOperator' "$kit/values.yaml" && fail "values.yaml names an acceptance component"

# The MPIJob: v2beta1, the recipe's size, every image on the site registry, the pull secret.
python3 - "$kit/acceptance/nccl-mpijob.yaml" <<'EOF' || fail "nccl-mpijob.yaml"
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
assert job["apiVersion"] == "kubeflow.org/v2beta1" and job["kind"] == "MPIJob"
spec = job["spec"]
assert spec["slotsPerWorker"] == 8
specs = spec["mpiReplicaSpecs"]
assert specs["Worker"]["replicas"] == 2 and specs["Launcher"]["replicas"] == 1
args = specs["Launcher"]["template"]["spec"]["containers"][0]["args"]
assert args[:2] == ["-np", "16"] and "all_reduce_perf" in args, args
assert args[args.index("-e") + 1] == "8G" and args[args.index("-b") + 1] == "8", args
worker = specs["Worker"]["template"]["spec"]
assert worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
for role in specs.values():
    pod = role["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "site-registry"}]
    for c in pod["containers"]:
        assert c["image"] == "registry.site:5000/gpu/example/nccl-tests:2.19.6", c["image"]
EOF

shellcheck -s bash "$script" || fail "shellcheck nccl-allreduce.sh"

# An independent reading of an all_reduce_perf log: its data rows and the average line.
check_json() {  # LOG JSON RANKS
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
log, out, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [l.split() for l in open(log) if l.strip() and not l.startswith("#") and l.split()[0].isdigit()]
avg = [l.split(":")[1].split()[0] for l in open(log) if l.startswith("# Avg bus bandwidth")][0]
j = json.load(open(out))
assert j["kind"] == "gpubundle.nccl" and j["schemaVersion"] == 1 and j["test"] == "all_reduce_perf"
assert j["image"] == "registry.site:5000/gpu/example/nccl-tests:2.19.6"
assert j["ranks"] == ranks and j["gpusPerNode"] == 1 and j["nodes"] == ["vm"], (j["ranks"], j["nodes"])
assert j["ncclVersion"] == "2.28.3", j["ncclVersion"]
assert j["dataType"] == "float" and j["redOp"] == "sum"
assert len(j["rows"]) == len(rows) > 0, (len(j["rows"]), len(rows))
for r, cols in zip(j["rows"], rows):
    assert r["bytes"] == int(cols[0]) and r["count"] == int(cols[1]) and r["root"] == int(cols[4])
    for side, at in (("outOfPlace", 5), ("inPlace", 9)):
        s = r[side]
        assert (s["timeUs"], s["algBw"], s["busBw"]) == tuple(float(x) for x in cols[at:at + 3]), (s, cols)
        assert s["wrong"] == (None if cols[at + 3] == "N/A" else int(cols[at + 3]))
assert j["avgBusBw"] == float(avg) and j["outOfBounds"] == 0 and j["passed"] is True
EOF
}

for f in h200-all_reduce_perf.txt h200-mpirun-all_reduce_perf.txt h200-all_reduce_perf-c0.txt; do
  out="$("$script" --parse "$fixtures/$f" --json "$work/$f.json")" || fail "--parse $f failed: $out"
  grep -q '^nccl-allreduce.sh: PASS: ' <<<"$out" || fail "--parse $f: $out"
  check_json "$fixtures/$f" "$work/$f.json" 1 || fail "--parse $f: JSON differs from the log"
done
# Sizes 8 B .. 8 GiB, factor 2: 31 rows; a 3e+06 bandwidth kept as written.
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["rows"]) == 31 and j["rows"][-1]["bytes"] == 8589934592' \
  "$work/h200-mpirun-all_reduce_perf.txt.json" || fail "the 8G run's rows"
grep -q '"algBw": 3e+06' "$work/h200-mpirun-all_reduce_perf.txt.json" || fail "3e+06 not kept as the log wrote it"

# Failing cases: exit 1 and one line on stderr naming what failed.
expect_fail() {  # NAME PATTERN LOG [SCRIPT]
  local name="$1" pattern="$2" log="$3" s="${4:-$script}"
  rm -f "$work/neg.json"
  if "$s" --parse "$log" --json "$work/neg.json" >"$work/neg.out" 2>"$work/neg.err"; then fail "$name: --parse passed"; fi
  [ "$(wc -l <"$work/neg.err")" -eq 1 ] || fail "$name: not one line: $(cat "$work/neg.err")"
  grep -qE "$pattern" "$work/neg.err" || fail "$name: $(cat "$work/neg.err")"
}
real="$fixtures/h200-all_reduce_perf.txt"
awk '$1 == "4096" { $9 = "3" } 1' "$real" >"$work/wrong.log"
expect_fail "#wrong" 'FAIL: 1 rows with #wrong values; results in' "$work/wrong.log"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["passed"] is False' "$work/neg.json" || fail "#wrong: passed in JSON"
sed 's/^# Out of bounds values : 0 OK/# Out of bounds values : 2 FAILED/' "$real" >"$work/oob.log"
expect_fail "out of bounds" 'FAIL: 2 out-of-bounds values' "$work/oob.log"
head -n 25 "$real" >"$work/truncated.log"
expect_fail "truncated" 'no "# Avg bus bandwidth" line: the run did not finish' "$work/truncated.log"
[ ! -e "$work/neg.json" ] || fail "truncated: JSON written"
sed '/^ *1024 /s/ [0-9.]*$//' "$real" >"$work/short-row.log"
expect_fail "short row" 'short-row.log:[0-9]+: a table row with 12 columns, not 13' "$work/short-row.log"
sed '/^ *2048 /s/8\.29/8,29/' "$real" >"$work/bad-number.log"
expect_fail "bad number" 'bad-number.log:[0-9]+: time 8,29 is not a number' "$work/bad-number.log"
printf 'Segmentation fault\nsome text\n' >"$work/garbage.log"
expect_fail "garbage" 'garbage.log: no all_reduce_perf table' "$work/garbage.log"
sed 's/^min_bus_bw=0$/min_bus_bw=100/' "$script" >"$work/bound.sh" && chmod +x "$work/bound.sh"
expect_fail "bus bandwidth bound" 'FAIL: avg bus bandwidth 0 GB/s below 100 GB/s' "$real" "$work/bound.sh"

# Bad usage: exit 2.
for args in "--nodes 0" "--gpus-per-node x" "--bogus" "--parse"; do
  rc=0; "$script" $args >/dev/null 2>&1 || rc=$?   # word splitting wanted
  [ "$rc" -eq 2 ] || fail "$args: exit $rc, not 2"
done

# --dry-run against a stub kubectl that records its arguments and what it is given.
stubs="$work/stubs"
mkdir -p "$stubs" "$work/log"
cat >"$stubs/kubectl" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB_LOG/kubectl.args"
case "$*" in
  "config current-context") [ -n "${STUB_NO_CONTEXT:-}" ] && exit 1; echo stub-context ;;
  "get crd mpijobs.kubeflow.org") [ -n "${STUB_NO_CRD:-}" ] && exit 1 ;;
  *" -f - "*|*" -f -") cat >>"$STUB_LOG/applied.yaml" ;;
  *"get mpijob gpubundle-nccl-allreduce -o jsonpath="*) echo "Created Running ${STUB_JOB_STATE:-Succeeded}" ;;
  *"logs job/gpubundle-nccl-allreduce-launcher") cat "$STUB_LAUNCHER_LOG" ;;
  *"get pods -l training.kubeflow.org/job-name=gpubundle-nccl-allreduce,training.kubeflow.org/job-role=worker "*)
    printf 'gpu-node-b\ngpu-node-a\n' ;;
esac
exit 0
EOF
chmod +x "$stubs/kubectl"
export STUB_LOG="$work/log"
out="$(PATH="$stubs:$PATH" "$script" --dry-run --nodes 3 --gpus-per-node 4)" || fail "--dry-run failed: $out"
grep -qx 'apply -f - --dry-run=client' "$STUB_LOG/kubectl.args" || fail "--dry-run: no kubectl apply --dry-run=client: $(cat "$STUB_LOG/kubectl.args")"
grep -q 'delete\|logs' "$STUB_LOG/kubectl.args" && fail "--dry-run deleted or read logs"
python3 - "$STUB_LOG/applied.yaml" <<'EOF' || fail "--dry-run: the MPIJob applied"
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
specs = job["spec"]["mpiReplicaSpecs"]
assert job["spec"]["slotsPerWorker"] == 4 and specs["Worker"]["replicas"] == 3
assert specs["Launcher"]["template"]["spec"]["containers"][0]["args"][:2] == ["-np", "12"]
assert job["metadata"]["namespace"] == "gpu-operator"
EOF
if STUB_NO_CRD=1 PATH="$stubs:$PATH" "$script" >"$work/nocrd.out" 2>&1; then fail "ran without the MPIJob CRD"; fi
grep -q 'the MPIJob CRD (mpijobs.kubeflow.org) is not installed' "$work/nocrd.out" || fail "no CRD: $(cat "$work/nocrd.out")"
if STUB_NO_CONTEXT=1 PATH="$stubs:$PATH" "$script" --dry-run >"$work/noctx.out" 2>&1; then fail "ran without a context"; fi
grep -q 'missing prerequisite: kubectl context: none is set' "$work/noctx.out" || fail "no context: $(cat "$work/noctx.out")"

# A whole run against the stub: the job succeeds, the launcher's log is the real
# mpirun output; the JSON names the worker pods' nodes and keeps the log beside it.
export STUB_LAUNCHER_LOG="$fixtures/h200-mpirun-all_reduce_perf.txt"
out="$(PATH="$stubs:$PATH" "$script" --json "$work/run.json")" || fail "run: $out"
cmp -s "$work/run.log" "$STUB_LAUNCHER_LOG" || fail "run: the launcher's log was not kept as run.log"
grep -qx 'apply -f -' "$STUB_LOG/kubectl.args" || fail "run: no kubectl apply"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["nodes"] == ["gpu-node-a", "gpu-node-b"] and len(j["rows"]) == 31 and j["passed"], j["nodes"]' \
  "$work/run.json" || fail "run: JSON"
if STUB_JOB_STATE=Failed PATH="$stubs:$PATH" "$script" --json "$work/failed.json" >"$work/failed.out" 2>&1; then fail "a failed MPIJob passed"; fi
grep -q 'MPIJob gpubundle-nccl-allreduce failed (kubectl -n gpu-operator describe mpijob gpubundle-nccl-allreduce)' "$work/failed.out" ||
  fail "failed MPIJob: $(cat "$work/failed.out")"
grep -q 'FAIL: the MPIJob failed; results in' "$work/failed.out" || fail "failed MPIJob: $(cat "$work/failed.out")"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["passed"] is False' "$work/failed.json" || fail "failed MPIJob: passed in JSON"

# --install-mpi-operator: the release manifest's controller image moved to the site registry.
printf 'kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: mpioperator/mpi-operator:0.8.0\n        name: mpi-operator\n' \
  >"$work/mpi-operator.yaml"
rm -f "$STUB_LOG/applied.yaml"
PATH="$stubs:$PATH" "$script" --install-mpi-operator "$work/mpi-operator.yaml" --dry-run >/dev/null || fail "--install-mpi-operator"
grep -q 'image: registry.site:5000/gpu/mpioperator/mpi-operator:0.8.0' "$STUB_LOG/applied.yaml" || fail "operator image: $(cat "$STUB_LOG/applied.yaml")"
# (the stub takes anything; kit-cluster-nccl runs it with the real kubectl)
grep -qx 'apply -f - --server-side --dry-run=server' "$STUB_LOG/kubectl.args" || fail "--install-mpi-operator: kubectl apply"
echo "PASS: nccl acceptance"
