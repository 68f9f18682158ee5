#!/usr/bin/env bash
# The kit's NCCL acceptance test, no cluster: resolve a recipe with
# acceptance.nccl against the stand-in chart, make the kit, then
#   - the lock carries the nccl-tests and MPI Operator images (components
#     ncclTests, mpiOperator) and every MPIJob image is on the site registry;
#   - shellcheck nccl-allreduce.sh;
#   - --parse on REAL all_reduce_perf output recorded on an H200
#     (fixtures/nccl/README.md): rows, bandwidths and the average equal the
#     log's columns, as an independent reading of the log finds them;
#   - hand-edited copies of that output (#wrong, also as %g prints a million,
#     out of bounds, truncated, a bad number, garbage) and a bandwidth bound
#     fail with one line; bad usage exits 2;
#   - the transport: copies with NCCL_DEBUG=INFO lines as NCCL prints them
#     (IB, Socket, IB listed but Socket used, lines amid the table) parsed by
#     the script with the fabric required (as a kit with a network section
#     writes it): only IB passes; without INFO lines it fails too; without the
#     fabric required, Socket is recorded and passes.
# Then with the real kubectl against the API stand-in (tests/tools/kube_api.py),
# the failures kit-cluster-nccl (nccl_cluster.sh: --install-mpi-operator, the
# dry runs, a passing run) does not reach:
#   - a kubeconfig without current-context: named as a missing prerequisite;
#   - no MPIJob CRD (the MPI Operator not installed): it stops, writing nothing;
#   - --nodes 3 --gpus-per-node 4 and an MPIJob that fails (the test seeding its
#     Failed condition): the MPIJob created has that size, the run fails with
#     the describe hint and its JSON says passed: false.
# Without the real clients that part is skipped (77) after the rest has passed.
# Usage: nccl_acceptance.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }
fixtures="$src/tests/integration/fixtures/nccl"

SRC="$src"
work="$(mktemp -d)"
# shellcheck source=tests/integration/kube_lib.sh
source "$src/tests/integration/kube_lib.sh"
trap 'kube_stop_all; rm -rf "$work"' EXIT
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
# Open MPI 5 ignores the operator's OMPI_MCA_orte_default_hostfile: the hostfile is named.
assert args[:4] == ["--hostfile", "/etc/mpi/hostfile", "-np", "16"] and "all_reduce_perf" in args, args
assert args[args.index("-x") + 1] == "NCCL_DEBUG=INFO", args
assert args[args.index("-e") + 1] == "8G" and args[args.index("-b") + 1] == "8", args
worker = specs["Worker"]["template"]["spec"]
assert worker["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}, worker["containers"][0]["resources"]
# No network section: no RDMA device, capability or secondary network.
assert "securityContext" not in worker["containers"][0] and "annotations" not in specs["Worker"]["template"]["metadata"]
for role in specs.values():
    pod = role["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "site-registry"}]
    for c in pod["containers"]:
        assert c["image"] == "registry.site:5000/gpu/example/nccl-tests:2.19.6", c["image"]
EOF

shellcheck -s bash "$script" || fail "shellcheck nccl-allreduce.sh"
# shellcheck source=tests/integration/kit_help.sh
source "$src/tests/integration/kit_help.sh"
check_kit_help "$script"

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
# The recorded runs were made with NCCL_DEBUG=VERSION: no network logged, none required.
assert j["transport"] == "" and j["fabricRequired"] is False, (j["transport"], j["fabricRequired"])
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
# all_reduce_perf (v2.17.3 on) prints #wrong with %6g: a million or more in exponent form.
for spelled in 1e+06 1.04858e+06; do
  awk -v w="$spelled" '$1 == "4096" { $13 = w } 1' "$real" >"$work/wrong-g.log"
  expect_fail "#wrong $spelled" 'FAIL: 1 rows with #wrong values; results in' "$work/wrong-g.log"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=[r for r in j["rows"] if r["bytes"] == 4096][0]
assert j["passed"] is False and r["inPlace"]["wrong"] == float(sys.argv[2]), r' "$work/neg.json" "$spelled" || fail "#wrong $spelled: the JSON"
done
awk '$1 == "4096" { $13 = "1.5" } 1' "$real" >"$work/wrong-frac.log"
expect_fail "#wrong 1.5" 'wrong-frac.log:[0-9]+: #wrong 1.5 is not a count' "$work/wrong-frac.log"
sed 's/^# Out of bounds values : 0 OK/# Out of bounds values : 2 FAILED/' "$real" >"$work/oob.log"
expect_fail "out of bounds" 'FAIL: 2 out-of-bounds values' "$work/oob.log"
head -n 25 "$real" >"$work/truncated.log"
expect_fail "truncated" 'no "# Avg bus bandwidth" line: the run did not finish' "$work/truncated.log"
[ ! -e "$work/neg.json" ] || fail "truncated: JSON written"
sed '/^ *1024 /s/ [0-9.]*$//' "$real" >"$work/short-row.log"
expect_fail "short row" 'short-row.log:[0-9]+: a table row with 12 columns, not 13' "$work/short-row.log"
sed '/^ *2048 /s/8\.29/8,29/' "$real" >"$work/bad-number.log"
expect_fail "bad number" 'bad-number.log:[0-9]+: time 8,29 is not a number' "$work/bad-number.log"
# Strings from the log reach the JSON only as plain names: a type or host that
# would break out of its JSON string is refused.
awk '$1 == "4096" { $3 = "float\",\"passed\":true,\"x" } 1' "$real" >"$work/inject-type.log"
expect_fail "type injection" 'inject-type.log:[0-9]+: type float",.* is not a plain name' "$work/inject-type.log"
[ ! -e "$work/neg.json" ] || fail "type injection: JSON written"
sed '0,/^#  *Rank  *0 .* on /s/ on \([^ ]*\)/ on \1"]}/' "$real" >"$work/inject-host.log"
grep -q '"]}' "$work/inject-host.log" || fail "inject-host.log: the fixture has no '# Rank 0 ... on HOST' line to edit"
expect_fail "host injection" 'inject-host.log:[0-9]+: host .* is not a plain name' "$work/inject-host.log"
printf 'Segmentation fault\nsome text\n' >"$work/garbage.log"
expect_fail "garbage" 'garbage.log: no all_reduce_perf table' "$work/garbage.log"
sed 's/^min_bus_bw=0$/min_bus_bw=100/' "$script" >"$work/bound.sh" && chmod +x "$work/bound.sh"
expect_fail "bus bandwidth bound" 'FAIL: avg bus bandwidth 0 GB/s below 100 GB/s' "$real" "$work/bound.sh"

# The transport, from NCCL_DEBUG=INFO lines shaped as NCCL prints them
# ("host:pid:tid [dev] NCCL INFO ..."; init.cc "Using network %s", net.cc's
# channel lines "... via NET/%s/%d%s"), put into the real MPI run's log after
# its "NCCL version" line; two go amid the table rows, as mpirun interleaves
# other ranks' output.
mpi_real="$fixtures/h200-mpirun-all_reduce_perf.txt"
pid="$(sed -n 's/^#  *Rank  *0 .* Pid  *\([0-9]*\) on .*/\1/p' "$mpi_real")"
[ -n "$pid" ] || fail "the MPI fixture has no '# Rank 0 ... Pid N on HOST' line"
with_info() {  # OUT LINE... : the MPI log with these NCCL INFO messages (and two more amid the rows)
  local out="$1"; shift
  local line
  for line in "$@"; do printf 'vm:%s:%s [0] NCCL INFO %s\n' "$pid" "$pid" "$line"; done >"$work/info.txt"
  awk -v info="$work/info.txt" -v pre="vm:$pid:$((pid + 7)) [0] NCCL INFO " '
    { print }
    /NCCL version [0-9]/ { while ((getline l < info) > 0) print l }
    $1 == "4096" { print pre "Connected all rings, use ring PXN 0 GDR 1"; print pre "Connected all trees" }' "$mpi_real" >"$out"
  grep -q 'NCCL INFO Connected all trees' "$out" || fail "$out: no INFO line amid the rows"
}
with_info "$work/ib.log" 'Bootstrap: Using eth0:10.244.1.12<0>' 'NET/Plugin: Could not find: libnccl-net.so.' \
  'NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.244.1.12<0>' 'Using network IB' \
  'Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA' 'Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA' \
  'Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1(1)/GDRDMA'
with_info "$work/socket.log" 'Bootstrap: Using eth0:10.244.1.12<0>' 'NET/IB : No device found.' \
  'NET/Socket : Using [0]eth0:10.244.1.12<0>' 'Using network Socket' \
  'Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0' 'Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0'
# NCCL_NET=Socket: IB is found and logged, then skipped by name; sockets carry the data.
with_info "$work/ib-listed.log" 'NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.244.1.12<0>' \
  'NET/Socket : Using [0]eth0:10.244.1.12<0>' 'Using network Socket' 'Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0'
# A network plugin's own name (aws-ofi-nccl) counts as the fabric.
with_info "$work/plugin.log" 'Using network AWS Libfabric' 'Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA'
with_info "$work/bad-net.log" 'Using network IB"}, "passed": true'
sed 's/^fabric=0$/fabric=1/' "$script" >"$work/fabric.sh" && chmod +x "$work/fabric.sh"
cmp -s "$script" "$work/fabric.sh" && fail "nccl-allreduce.sh has no 'fabric=0' line"

out="$("$work/fabric.sh" --parse "$work/ib.log" --json "$work/ib.json")" || fail "fabric over IB: $out"
grep -q 'PASS: 31 sizes, .*, 1 ranks, transport IB; results in ' <<<"$out" || fail "fabric over IB: $out"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert (j["transport"], j["fabricRequired"], j["passed"], len(j["rows"])) == ("IB", True, True, 31), j' \
  "$work/ib.json" || fail "fabric over IB: the JSON"
out="$("$work/fabric.sh" --parse "$work/plugin.log" --json "$work/plugin.json")" || fail "fabric over a plugin: $out"
grep -q 'transport AWS Libfabric; results in ' <<<"$out" || fail "fabric over a plugin: $out"
expect_fail "fabric over sockets" 'FAIL: NCCL used sockets \(transport Socket\), not the fabric; results in' "$work/socket.log" "$work/fabric.sh"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert (j["transport"], j["fabricRequired"], j["passed"]) == ("Socket", True, False), j' \
  "$work/neg.json" || fail "fabric over sockets: the JSON"
expect_fail "IB listed, sockets used" 'FAIL: NCCL used sockets \(transport Socket\), not the fabric' "$work/ib-listed.log" "$work/fabric.sh"
expect_fail "fabric, no INFO lines" 'FAIL: the log does not say which network NCCL used .*so the fabric is untested; results in' "$mpi_real" "$work/fabric.sh"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert (j["transport"], j["passed"]) == ("", False), j' "$work/neg.json" ||
  fail "fabric, no INFO lines: the JSON"
expect_fail "a network name that is no name" 'bad-net.log:[0-9]+: NCCL network IB"}, "passed": true is not a plain name' "$work/bad-net.log" "$work/fabric.sh"
[ ! -e "$work/neg.json" ] || fail "a network name that is no name: JSON written"
# No fabric required: the network is recorded, sockets pass.
out="$("$script" --parse "$work/socket.log" --json "$work/socket.json")" || fail "sockets, no fabric required: $out"
grep -q 'transport Socket; results in ' <<<"$out" || fail "sockets, no fabric required: $out"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert (j["transport"], j["fabricRequired"], j["passed"]) == ("Socket", False, True), j' \
  "$work/socket.json" || fail "sockets, no fabric required: the JSON"
echo "ok: the transport recorded; with the fabric required only IB or a plugin passes"

# Bad usage: exit 2.
for args in "--nodes 0" "--gpus-per-node x" "--bogus" "--parse"; do
  rc=0
  # shellcheck disable=SC2086 # word splitting wanted
  "$script" $args >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "$args: exit $rc, not 2"
done

# --- The real kubectl against the API stand-in -----------------------------------
kube_clients_present || { echo "SKIP: the checks without a cluster passed; the rest needs the real clients: $KUBE_SKIP"; exit 77; }
export PATH="$CLIENTS_BIN:$PATH"
writes='r["method"] in ("POST", "PUT", "PATCH", "DELETE")'
# One cluster: the operator's namespace, and what the MPI Operator would make
# for the job: the launcher Job and its pod (whose log is the real mpirun
# output) and two worker pods. No MPIJob CRD yet.
"$PY" - "$fixtures/h200-mpirun-all_reduce_perf.txt" >"$work/seed.json" <<'PYEOF'
import json, sys
job, ns = "gpubundle-nccl-allreduce", "gpu-operator"
sel = {"batch.kubernetes.io/job-name": job + "-launcher"}
worker = lambda i, node: {"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": f"{job}-worker-{i}", "namespace": ns,
                 "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "worker"}},
    "spec": {"nodeName": node, "containers": [{"name": "worker", "image": "x"}]}, "status": {"phase": "Running"}}
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job + "-launcher", "namespace": ns},
     "spec": {"selector": {"matchLabels": sel}, "template": {"metadata": {"labels": sel},
              "spec": {"containers": [{"name": "launcher", "image": "x"}]}}}},
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": job + "-launcher-abcde", "namespace": ns, "labels": sel,
                  "annotations": {"kube-api-standin/log": open(sys.argv[1]).read()}},
     "spec": {"containers": [{"name": "launcher", "image": "x"}]}, "status": {"phase": "Failed"}},
    worker(0, "gpu-node-b"), worker(1, "gpu-node-a")]}))
PYEOF
kube_start api --seed "$work/seed.json"

# No current context: named, nothing asked of the server beyond kubectl's config.
kube_kubeconfig_no_context "$work/noctx.kubeconfig"
if KUBECONFIG="$work/noctx.kubeconfig" "$script" --dry-run >"$work/noctx.out" 2>&1; then fail "ran without a context"; fi
grep -qx 'nccl-allreduce.sh: missing prerequisite: kubectl context: none is set (kubectl config use-context NAME, or set KUBECONFIG)' "$work/noctx.out" ||
  fail "no context: $(cat "$work/noctx.out")"
[ -z "$(kube_requests True)" ] || fail "no context, yet the server was asked: $(kube_requests True | cut -c1-200)"

# The MPI Operator not installed: a real run stops at the missing CRD, writing nothing.
if "$script" >"$work/nocrd.out" 2>&1; then fail "ran without the MPIJob CRD"; fi
[ "$(tail -n 1 "$work/nocrd.out")" = "nccl-allreduce.sh: the MPIJob CRD (mpijobs.kubeflow.org) is not installed: install the Kubeflow MPI Operator first (./nccl-allreduce.sh --install-mpi-operator MANIFEST)" ] ||
  fail "no CRD: $(cat "$work/nocrd.out")"
[ -z "$(kube_requests "$writes")" ] || fail "without the CRD it wrote: $(kube_requests "$writes")"
[ -z "$(kube_requests "r['path'].startswith('/apis/kubeflow.org/')")" ] || fail "without the CRD it went on to the MPIJob: $(kube_requests "r['path'].startswith('/apis/kubeflow.org/')")"

# The script applies the kit's own nccl-mpijob.yaml, a site's edits included,
# with only the marked values replaced; bad values and broken markers are refused.
mkdir -p "$work/edited"
cp "$kit/acceptance/nccl-allreduce.sh" "$kit/acceptance/nccl-mpijob.yaml" "$work/edited/"
sed -i 's/cpu: 500m/cpu: 750m/' "$work/edited/nccl-mpijob.yaml"
GPUBUNDLE_NAMESPACE=nccl-site "$work/edited/nccl-allreduce.sh" --dry-run --nodes 5 --gpus-per-node 2 >"$work/edited.out" 2>&1 ||
  fail "dry run of the edited kit: $(cat "$work/edited.out")"
grep -v '^nccl-allreduce.sh: ' "$work/edited.out" | python3 -c '
import sys, yaml
job = yaml.safe_load(sys.stdin)
spec = job["spec"]; specs = spec["mpiReplicaSpecs"]
launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
assert job["metadata"]["namespace"] == "nccl-site", job["metadata"]
assert spec["slotsPerWorker"] == 2 and specs["Worker"]["replicas"] == 5, spec
assert launcher["args"][2:4] == ["-np", "10"], launcher["args"]
assert launcher["resources"]["requests"]["cpu"] == "750m", launcher["resources"]
assert specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
' || fail "the edited kit's MPIJob (above): $(cat "$work/edited.out")"
for ns in 'x$(touch pwned)' $'gpu-operator\n  hostPID: true' 'Upper' '-lead'; do
  rc=0
  (cd "$work" && GPUBUNDLE_NAMESPACE="$ns" "$work/edited/nccl-allreduce.sh" --dry-run >"$work/badns.out" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/badns.out")" -eq 1 ] &&
    grep -qF "nccl-allreduce.sh: GPUBUNDLE_NAMESPACE $(printf '%q' "$ns") is not a namespace name (at most 63" "$work/badns.out" ||
    fail "namespace '$ns' (rc $rc): $(cat "$work/badns.out")"
done
[ ! -e "$work/pwned" ] || fail "a namespace value ran a command"
sed -i 's/  # nccl-allreduce.sh: nodes$//' "$work/edited/nccl-mpijob.yaml"
if "$work/edited/nccl-allreduce.sh" --dry-run >"$work/nomark.out" 2>&1; then fail "ran with a marker missing"; fi
grep -q 'nccl-mpijob.yaml: its marked lines ("# nccl-allreduce.sh: ...") are not the kit'"'"'s; write the kit again' "$work/nomark.out" ||
  fail "marker missing: $(cat "$work/nomark.out")"
rm "$work/edited/nccl-mpijob.yaml"
if "$work/edited/nccl-allreduce.sh" --dry-run >"$work/nofile.out" 2>&1; then fail "ran without nccl-mpijob.yaml"; fi
grep -q 'nccl-mpijob.yaml is missing: the kit is incomplete' "$work/nofile.out" || fail "no yaml: $(cat "$work/nofile.out")"
echo "ok: the kit's MPIJob file applied with its marked values, a site's edit kept; bad namespaces and markers refused"

# With the CRD, a run of another size whose MPIJob fails: the test plays the MPI
# Operator, giving the MPIJob a Failed condition once it is there.
printf '%s\n' 'apiVersion: apiextensions.k8s.io/v1' 'kind: CustomResourceDefinition' 'metadata: {name: mpijobs.kubeflow.org}' \
  'spec: {group: kubeflow.org, names: {kind: MPIJob, plural: mpijobs}, scope: Namespaced, versions: [{name: v2beta1, served: true, storage: true}]}' \
  >"$work/crd.yaml"
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/crd.yaml" >/dev/null
kube_play_status MPIJob gpu-operator gpubundle-nccl-allreduce \
  '{"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "False"}, {"type": "Failed", "status": "True"}]}' 60 &
player=$!
if (cd "$work" && GPUBUNDLE_TIMEOUT=60 "$script" --nodes 3 --gpus-per-node 4 --json "$work/failed.json" >"$work/failed.out" 2>&1); then
  fail "a failed MPIJob passed"
fi
wait "$player" || fail "no MPIJob was made: $(cat "$work/failed.out")"
grep -q 'MPIJob gpubundle-nccl-allreduce failed (kubectl -n gpu-operator describe mpijob gpubundle-nccl-allreduce)' "$work/failed.out" ||
  fail "failed MPIJob: $(cat "$work/failed.out")"
grep -q 'FAIL: the MPIJob failed; results in' "$work/failed.out" || fail "failed MPIJob: $(cat "$work/failed.out")"
"$PY" -c 'import json,sys; j = json.load(open(sys.argv[1])); assert j["passed"] is False and j["nodes"] == ["gpu-node-a", "gpu-node-b"], j' \
  "$work/failed.json" || fail "failed MPIJob: the JSON"
kube_requests "$writes and r['method'] == 'POST'" >"$work/writes"
"$PY" - "$work/writes" <<'PYEOF' || fail "the MPIJob created (above)"
import json, sys
w = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["path"], r["status"]) for r in w] == [("/apis/kubeflow.org/v2beta1/namespaces/gpu-operator/mpijobs", 201)], w
job = w[0]["body"]
specs = job["spec"]["mpiReplicaSpecs"]
assert job["metadata"]["namespace"] == "gpu-operator", job["metadata"]
assert job["spec"]["slotsPerWorker"] == 4 and specs["Worker"]["replicas"] == 3, job["spec"]
assert specs["Launcher"]["template"]["spec"]["containers"][0]["args"][2:4] == ["-np", "12"]
assert specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 4
PYEOF
echo "ok: no context, no CRD and a failed MPIJob through the real kubectl"
echo "PASS: nccl acceptance"
