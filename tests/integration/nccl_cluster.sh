#!/usr/bin/env bash
# acceptance/nccl-allreduce.sh with the real kubectl against the API stand-in
# (tests/tools/kube_api.py), for the kit of nccl_acceptance.sh's recipe:
#   - --install-mpi-operator MANIFEST --dry-run: a server-side dry run of every
#     object (real kubectl refuses --server-side with --dry-run=client), the
#     controller image moved to the site registry, nothing stored; where the
#     manifest's own namespace does not exist yet (the server cannot dry-run
#     objects in it) a client-side dry run, saying so;
#   - --install-mpi-operator MANIFEST: server-side apply, every object stored;
#     on the real v0.8.0 manifest (../shared) as well when it is there;
#   - --dry-run of the MPIJob: reads only; without the MPIJob CRD (the MPI
#     Operator not installed yet) the warning and the MPIJob, not kubectl's
#     "no matches for kind" error;
#   - a whole run: the MPIJob applied, its Succeeded condition, the launcher's
#     log and the worker pods' nodes read back through kubectl, as seeded.
# Usage: nccl_cluster.sh GPUBUNDLE SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
gpubundle=$1
SRC=$2
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite v26.7.0

sed 's/^extraImages:.*//' "$SRC/examples/conventional.yaml" >"$work/recipe.yaml"
cat >>"$work/recipe.yaml" <<'EOF'
acceptance:
  nccl:
    image: ghcr.io/example/nccl-tests:2.19.6
    nodes: 2
    gpusPerNode: 8
    maxBytes: 8G
    mpiOperator: {install: true}
EOF
"$gpubundle" -q resolve "$work/recipe.yaml" --chart "$chart" -o "$work/lock.json"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$work/kit"
script=$work/kit/acceptance/nccl-allreduce.sh
site_operator=registry.site:5000/gpu/mpioperator/mpi-operator:0.8.0
export PATH="$CLIENTS_BIN:$PATH"
writes='r["method"] in ("POST", "PUT", "PATCH", "DELETE")'

# A small manifest shaped like deploy/v2beta1/mpi-operator.yaml: its namespace,
# a cluster-scoped object and the controller in that namespace.
cat >"$work/mpi-operator.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: mpi-operator
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: mpi-operator
rules: []
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: mpi-operator
  namespace: mpi-operator
spec:
  selector:
    matchLabels: {app: mpi-operator}
  template:
    metadata:
      labels: {app: mpi-operator}
    spec:
      containers:
      - image: mpioperator/mpi-operator:0.8.0
        name: mpi-operator
EOF
# check_applied KIND_PATHS DRY: every recorded write is a server-side apply of
# one of these paths, in order, with (DRY=1) or without dryRun=All; the
# Deployment carries the site image.
check_applied() {
  kube_requests "$writes" >"$work/writes"
  "$PY" - "$work/writes" "$1" "$2" "$site_operator" <<'EOF'
import json, sys
writes = [json.loads(l) for l in open(sys.argv[1])]
paths, dry, image = sys.argv[2].split(), sys.argv[3] == "1", sys.argv[4]
assert [r["path"] for r in writes] == paths, [r["path"] for r in writes]
for r in writes:
    assert r["method"] == "PATCH" and r["contentType"] == "application/apply-patch+yaml", r
    assert r["query"].get("fieldManager") == ["kubectl"] and r["status"] in (200, 201), r
    assert (r["query"].get("dryRun") == ["All"]) == dry, r
for r in writes:
    if r["body"]["kind"] == "Deployment":
        assert r["body"]["spec"]["template"]["spec"]["containers"][0]["image"] == image, r["body"]
        break
else:
    raise AssertionError("no Deployment applied")
EOF
}
paths="/api/v1/namespaces/mpi-operator /apis/rbac.authorization.k8s.io/v1/clusterroles/mpi-operator /apis/apps/v1/namespaces/mpi-operator/deployments/mpi-operator"

# --dry-run where the namespace exists: the server checks every object, stores none.
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: mpi-operator}\n' >"$work/ns.yaml"
kube_start api-ns --seed "$work/ns.yaml"
"$script" --install-mpi-operator "$work/mpi-operator.yaml" --dry-run >"$work/dry.out" 2>&1 ||
  fail "--install-mpi-operator --dry-run: $(cat "$work/dry.out")"
grep -q 'deployment.apps/mpi-operator serverside-applied (server dry run)' "$work/dry.out" || fail "dry run output: $(cat "$work/dry.out")"
check_applied "$paths" 1 || fail "--install-mpi-operator --dry-run: $(cat "$work/writes")"
[ "$(kube_objects | "$PY" -c 'import json,sys; print(sum(o["kind"] in ("Deployment", "ClusterRole") for o in json.load(sys.stdin)))')" = 0 ] ||
  fail "the dry run stored objects"

# --dry-run on a fresh cluster: the server cannot dry-run objects in a namespace
# that is not there yet, so those are checked by kubectl alone, and it says so.
kube_start api-fresh
"$script" --install-mpi-operator "$work/mpi-operator.yaml" --dry-run >"$work/fresh.out" 2>&1 ||
  fail "--install-mpi-operator --dry-run on a fresh cluster: $(cat "$work/fresh.out")"
grep -q "namespace mpi-operator does not exist yet" "$work/fresh.out" || fail "fresh dry run: $(cat "$work/fresh.out")"
grep -q 'deployment.apps/mpi-operator created (dry run)' "$work/fresh.out" || fail "fresh dry run: $(cat "$work/fresh.out")"
[ -z "$(kube_requests "$writes")" ] || fail "the fresh dry run wrote: $(kube_requests "$writes")"

# The real thing: applied server-side and stored, the site image in place.
kube_reset_requests
"$script" --install-mpi-operator "$work/mpi-operator.yaml" >"$work/apply.out" 2>&1 || fail "--install-mpi-operator: $(cat "$work/apply.out")"
check_applied "$paths" 0 || fail "--install-mpi-operator: $(cat "$work/writes")"
[ "$("$KUBECTL" -n mpi-operator get deployment mpi-operator -o jsonpath='{.spec.template.spec.containers[0].image}')" = "$site_operator" ] ||
  fail "the stored controller image"

# The release manifest itself (its CRD is some 9000 lines), when ../shared has it.
upstream=${GB_SHARED_DIR:-$SRC/../shared}/upstream/crds/mpi-operator-v0.8.0/mpi-operator.yaml
if [ -f "$upstream" ]; then
  kube_start api-upstream
  "$script" --install-mpi-operator "$upstream" --dry-run >"$work/up-dry.out" 2>&1 || fail "upstream manifest, --dry-run: $(cat "$work/up-dry.out")"
  "$script" --install-mpi-operator "$upstream" >"$work/up.out" 2>&1 || fail "upstream manifest: $(cat "$work/up.out")"
  [ "$("$KUBECTL" -n mpi-operator get deployment mpi-operator -o jsonpath='{.spec.template.spec.containers[0].image}')" = "$site_operator" ] ||
    fail "upstream manifest: the stored controller image"
  "$KUBECTL" get crd mpijobs.kubeflow.org >/dev/null || fail "upstream manifest: no MPIJob CRD"
  # Now that its namespace exists, a dry run is the server's, for every object.
  kube_reset_requests
  "$script" --install-mpi-operator "$upstream" --dry-run >"$work/up-dry2.out" 2>&1 || fail "upstream manifest, second --dry-run: $(cat "$work/up-dry2.out")"
  [ "$(kube_requests "$writes and r['query'].get('dryRun') == ['All']" | wc -l)" = "$(grep -c '^kind:' "$upstream")" ] ||
    fail "upstream manifest: not every object dry-run by the server: $(kube_requests "$writes" | cut -c1-300)"
  echo "ok: the upstream MPI Operator v0.8.0 manifest"
else
  echo "note: $upstream not found; the upstream manifest is not applied"
fi

# The MPIJob's --dry-run where the MPI Operator is not installed yet: the
# warning, the MPIJob printed, and no kubectl apply, which would stop with
# "no matches for kind "MPIJob"" (the CRD is what tells kubectl the kind).
kube_start api-nocrd
"$script" --dry-run >"$work/nocrd-dry.out" 2>&1 || fail "--dry-run without the MPIJob CRD: $(cat "$work/nocrd-dry.out")"
grep -q 'warning: the MPIJob CRD (mpijobs.kubeflow.org) is not installed' "$work/nocrd-dry.out" &&
  grep -q 'not passed to kubectl: it cannot check an MPIJob before its CRD is installed' "$work/nocrd-dry.out" &&
  grep -q '^kind: MPIJob' "$work/nocrd-dry.out" || fail "--dry-run without the MPIJob CRD: $(cat "$work/nocrd-dry.out")"
[ -z "$(kube_requests "$writes")" ] || fail "the MPIJob dry run wrote: $(kube_requests "$writes")"

# A whole run. The test plays the MPI Operator: the launcher Job and its pod
# (whose log is the real mpirun output of fixtures/nccl) and two worker pods are
# there from the start; once the MPIJob arrives, its Succeeded condition is seeded.
fixture=$SRC/tests/integration/fixtures/nccl/h200-mpirun-all_reduce_perf.txt
"$PY" - "$fixture" >"$work/run-seed.json" <<'PYEOF'
import json, sys
job, ns = "gpubundle-nccl-allreduce", "gpu-operator"
sel = {"batch.kubernetes.io/job-name": job + "-launcher"}
worker = lambda i, node: {"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": f"{job}-worker-{i}", "namespace": ns,
                 "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "worker"}},
    "spec": {"nodeName": node, "containers": [{"name": "worker", "image": "x"}]}, "status": {"phase": "Running"}}
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "mpijobs.kubeflow.org"},
     "spec": {"group": "kubeflow.org", "names": {"kind": "MPIJob", "plural": "mpijobs"}, "scope": "Namespaced",
              "versions": [{"name": "v2beta1", "served": True, "storage": True}]}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job + "-launcher", "namespace": ns},
     "spec": {"selector": {"matchLabels": sel}, "template": {"metadata": {"labels": sel},
              "spec": {"containers": [{"name": "launcher", "image": "x"}]}}}},
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": job + "-launcher-abcde", "namespace": ns, "labels": sel,
                  "annotations": {"kube-api-standin/log": open(sys.argv[1]).read()}},
     "spec": {"containers": [{"name": "launcher", "image": "x"}]}, "status": {"phase": "Succeeded"}},
    worker(0, "gpu-node-b"), worker(1, "gpu-node-a")]}))
PYEOF
kube_start api-run --seed "$work/run-seed.json"
# With the CRD, --dry-run is kubectl's client-side dry run, reading only.
"$script" --dry-run >"$work/job-dry.out" 2>&1 || fail "--dry-run: $(cat "$work/job-dry.out")"
grep -q 'mpijob.kubeflow.org/gpubundle-nccl-allreduce created (dry run)' "$work/job-dry.out" || fail "MPIJob dry run: $(cat "$work/job-dry.out")"
[ -z "$(kube_requests "$writes")" ] || fail "the MPIJob dry run wrote: $(kube_requests "$writes")"
(cd "$work" && GPUBUNDLE_TIMEOUT=120 "$script" --json "$work/run.json" >"$work/run.out" 2>&1) &
runner=$!
for _ in $(seq 150); do
  "$KUBECTL" -n gpu-operator get mpijob gpubundle-nccl-allreduce -o json >"$work/mpijob.json" 2>/dev/null && break
  sleep 0.2
done
"$PY" - "$work/mpijob.json" <<'PYEOF' || fail "no MPIJob arrived: $(cat "$work/run.out")"
import json, sys
job = json.load(open(sys.argv[1]))
job["status"] = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "False"},
                                {"type": "Succeeded", "status": "True"}]}
json.dump(job, open(sys.argv[1], "w"))
PYEOF
"$PY" "$KUBE_TOOLS/kube_api.py" seed --dir "$KUBE_DIR" "$work/mpijob.json" >/dev/null
wait "$runner" || fail "a whole run: $(cat "$work/run.out")"
mpijob_crd=${GB_SHARED_DIR:-$SRC/../shared}/upstream/crds/mpi-operator-v0.8.0/kubeflow.org_mpijobs.yaml
if [[ -f $mpijob_crd ]]; then
  kube_schema_check "nccl-allreduce.sh's MPIJob" 'r["path"].endswith("/mpijobs")' --crd "$mpijob_crd"
else
  echo "note: $mpijob_crd is absent: the MPIJob not checked against its CRD"
fi
cmp -s "$work/run.log" "$fixture" || fail "the launcher's log was not kept as run.log"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["nodes"] == ["gpu-node-a", "gpu-node-b"] and len(j["rows"]) == 31 and j["passed"], j["nodes"]' \
  "$work/run.json" || fail "a whole run: the JSON"
kube_requests "$writes" >"$work/writes"
"$PY" - "$work/writes" <<'PYEOF' || fail "a whole run: the writes (above)"
import json, sys
w = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["method"], r["path"], r["status"]) for r in w]
assert got == [("DELETE", "/apis/kubeflow.org/v2beta1/namespaces/gpu-operator/mpijobs/gpubundle-nccl-allreduce", 404),
               ("POST", "/apis/kubeflow.org/v2beta1/namespaces/gpu-operator/mpijobs", 201)], got
spec = w[1]["body"]["spec"]
assert spec["slotsPerWorker"] == 8 and spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 2, spec
PYEOF
[ -n "$(kube_requests "r['path'] == '/api/v1/namespaces/gpu-operator/pods/gpubundle-nccl-allreduce-launcher-abcde/log'")" ] ||
  fail "kubectl logs job/... never read the launcher pod's log"
echo "ok: a whole run through the real kubectl"
echo "PASS: nccl-allreduce.sh against the API stand-in"
