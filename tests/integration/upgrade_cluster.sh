#!/usr/bin/env bash
# upgrade.sh with the real kubectl and helm against the API stand-in
# (tests/tools/kube_api.py). The test plays the operator's upgrade controller
# through the same API (tests/tools/upgrade_controller.py, told apart from
# kubectl and helm by its User-Agent): once the new release is deployed it
# moves each GPU node not labelled nvidia.com/gpu-driver-upgrade.skip=true
# through upgrade-required -> pod-restart-required -> upgrade-done, one at a
# time, and starts that node's validator pod.
#   - --dry-run: no label and no object written, helm's own dry run, the
#     rollback to the installed revision (from the real helm history);
#   - the real run: the other GPU node held before helm upgrades, the canary
#     upgrade-done and validated before the other is released, the site's
#     skipped node never touched, every hold released at the end;
#   - driver pods and two precompiled driver DaemonSets (one selector) with
#     their ControllerRevisions: after the next release the operator rolls the
#     DaemonSets but leaves the nodes upgrade-done with their pods a revision
#     behind: upgrade.sh makes no progress, naming both revisions, and never
#     passes the canary, even after GPUBUNDLE_SETTLE; once the upgrade
#     controller moves, the canary passes only after its pod restarted at the
#     newest revision, and every driver pod ends there.
# The failure paths (a failed node, no progress, no driver pod, an unchanged
# driver, missing prerequisites, bad usage) are upgrade_cluster_failures.sh's.
# Usage: upgrade_cluster.sh GPUBUNDLE SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
gpubundle=$1
SRC=$2
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite v26.7.0

"$gpubundle" -q resolve "$SRC/examples/conventional.yaml" --chart "$chart" -o "$work/lock.json"
kit=$work/kit
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$kit"
export PATH="$CLIENTS_BIN:$PATH"

cat >"$work/cluster.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-b, labels: {nvidia.com/gpu.present: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-site, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade.skip: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: cpu-a}}
- {apiVersion: v1, kind: Namespace, metadata: {name: gpu-operator}}
- apiVersion: v1
  kind: Secret
  metadata: {name: site-registry, namespace: gpu-operator}
  type: kubernetes.io/dockerconfigjson
  data: {.dockerconfigjson: e30=}
EOF
kube_start api --seed "$work/cluster.yaml"
"$kit/install.sh" >"$work/install.out" 2>&1 || fail "install.sh: $(cat "$work/install.out")"
clients='(r["userAgent"] or "").startswith(("kubectl/", "Helm/"))'
writes="$clients and r['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')"

# --dry-run: helm's dry run (the release it would make, pending), nothing
# written; the rollback names the revision installed, from helm history.
kube_reset_requests
"$kit/upgrade.sh" --canary gpu-a --dry-run >"$work/dry.out" 2>&1 || fail "upgrade.sh --dry-run: $(cat "$work/dry.out")"
grep -qx '+ kubectl label node gpu-b --overwrite nvidia.com/gpu-driver-upgrade.skip=true gpubundle.io/upgrade-held=true' "$work/dry.out" ||
  fail "--dry-run: $(cat "$work/dry.out")"
grep -qx 'STATUS: pending-upgrade' "$work/dry.out" || fail "--dry-run: no helm dry run: $(cat "$work/dry.out")"
grep -qxF 'upgrade.sh: rollback would be: helm rollback gpu-operator 1 --namespace gpu-operator --wait --timeout 15m' "$work/dry.out" ||
  fail "--dry-run: no rollback line: $(cat "$work/dry.out")"
[ -z "$(kube_requests "$writes")" ] || fail "--dry-run wrote: $(kube_requests "$writes" | cut -c1-400)"

# The operator, played through the API (tests/tools/upgrade_controller.py): at
# start, two precompiled driver DaemonSets (one per kernel, one selector, as the
# ClusterPolicy makes them) with their first ControllerRevision and a driver pod
# on each GPU node. Each release deployed from revision 2 on rolls both
# DaemonSets to a new revision. Unless $work/controller-paused exists, the
# upgrade controller then moves each node not labelled skip whose state is not
# upgrade-done or whose driver pod is not at its DaemonSet's newest revision,
# one at a time: upgrade-required -> pod-restart-required (driver pod replaced
# at the new revision, validator gone) -> upgrade-done (validator Running).
ds_a=nvidia-driver-daemonset-6.8.0-1015-nvidia-ubuntu22.04
ds_b=nvidia-driver-daemonset-6.8.0-1015-nvidia-64k-ubuntu22.04
# A node stays pod-restart-required 4 s: upgrade.sh polls each second, and
# the test checks that it saw the canary's pod restart before passing it.
kube_play_upgrade_controller "$work/operator.log" --daemonset "$ds_a=gpu-a,gpu-site" --daemonset "$ds_b=gpu-b" \
  --paused "$work/controller-paused" --hold pod-restart-required=4

kube_reset_requests
GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=30 "$kit/upgrade.sh" --canary gpu-a --timeout 60 >"$work/up.out" 2>&1 ||
  fail "upgrade.sh: $(cat "$work/up.out"; echo "operator:"; cat "$work/operator.log")"
grep -q "^upgrade.sh: done: every GPU node's driver is upgraded and validated (left out: gpu-site)" "$work/up.out" || fail "upgrade.sh: $(cat "$work/up.out")"
kube_requests True >"$work/requests"
"$PY" - "$work/requests" <<'PYEOF' || fail "upgrade.sh's requests and the operator's (above)"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
client = lambda r: (r["userAgent"] or "").startswith(("kubectl/", "Helm/"))
events = []
for r in reqs:
    if r["method"] not in ("POST", "PUT", "PATCH") or r["status"] >= 300:
        continue
    if r["path"].startswith("/api/v1/nodes/"):
        node = r["path"].rsplit("/", 1)[1]
        labels = r["body"]["metadata"]["labels"]
        who = "script" if client(r) else "operator"
        events.append((who, node, json.dumps(labels, sort_keys=True)))
    elif client(r) and "/secrets" in r["path"] and r["userAgent"].startswith("Helm/"):
        events.append(("helm", r["method"], r["body"]["metadata"]["labels"]["status"]))
for e in events:
    print(e)
held = '{"gpubundle.io/upgrade-held": "true", "nvidia.com/gpu-driver-upgrade.skip": "true"}'
released = '{"gpubundle.io/upgrade-held": null, "nvidia.com/gpu-driver-upgrade.skip": null}'
state = lambda s: '{"nvidia.com/gpu-driver-upgrade-state": "%s"}' % s
i = events.index(("script", "gpu-b", held))
assert events.index(("helm", "POST", "pending-upgrade")) > i, "helm upgraded before gpu-b was held"
canary_done = events.index(("operator", "gpu-a", state("upgrade-done")))
release = events.index(("script", "gpu-b", released))
assert canary_done < release, "gpu-b released before the canary was done"
assert not any(e[1] == "gpu-b" and e[0] == "operator" for e in events[:release]), "gpu-b moved while held"
assert ("operator", "gpu-b", state("upgrade-done")) in events[release:], "gpu-b never upgraded"
assert not any(e[1] in ("gpu-site", "cpu-a") for e in events), "a node the upgrade should leave alone was written"
PYEOF
[ "$("$KUBECTL" get nodes -l gpubundle.io/upgrade-held=true -o name)" = "" ] || fail "holds left behind"
[ "$("$KUBECTL" get node gpu-site -o jsonpath='{.metadata.labels.nvidia\.com/gpu-driver-upgrade\.skip}')" = true ] ||
  fail "the site's own skip label was removed"
echo "ok: canary, then the other node"

last_hash() {  # last_hash daemonset NAME | pod NODE: the newest hash the operator wrote for it
  awk -v kind="$1" -v name="$2" '$1 == kind && $2 == name {h = $NF} END {print h}' "$work/operator.log"
}
# The next release: the operator rolls its DaemonSets, but its upgrade
# controller has not reached the nodes, still upgrade-done from the run above
# with their pods a revision behind. Not passed, not even after the settle time.
touch "$work/controller-paused"
if GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=6 "$kit/upgrade.sh" --canary gpu-a --timeout 8 >"$work/stale.out" 2>&1; then
  fail "a stale upgrade-done passed: $(cat "$work/stale.out")"
fi
grep -qx "release 3 deployed" "$work/operator.log" || fail "release 3 never deployed: $(cat "$work/operator.log")"
want="upgrade.sh: no progress for 8s; waiting on: gpu-a(driver pod at revision $(last_hash pod gpu-a), DaemonSet $ds_a at $(last_hash daemonset "$ds_a"))"
grep -qxF "$want" "$work/stale.out" || fail "stale upgrade-done: wanted '$want': $(cat "$work/stale.out")"
[ "$(last_hash pod gpu-a)" != "$(last_hash daemonset "$ds_a")" ] || fail "the pod was at the new revision"
if grep -q "canary gpu-a upgraded" "$work/stale.out"; then fail "stale canary passed: $(cat "$work/stale.out")"; fi
"$KUBECTL" label nodes -l gpubundle.io/upgrade-held=true nvidia.com/gpu-driver-upgrade.skip- gpubundle.io/upgrade-held- >/dev/null
echo "ok: a stale upgrade-done is not passed"

# Once the upgrade controller moves again (after the next release rolled the
# DaemonSets), the canary passes when its pod runs the newest revision.
GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=60 "$kit/upgrade.sh" --canary gpu-a --timeout 60 >"$work/up2.out" 2>&1 &
up2=$!
for _ in $(seq 300); do grep -qx "release 4 deployed" "$work/operator.log" && break; sleep 0.1; done
grep -qx "release 4 deployed" "$work/operator.log" || fail "release 4 never deployed: $(cat "$work/up2.out")"
rm "$work/controller-paused"
wait "$up2" || fail "upgrade.sh after the stale run: $(cat "$work/up2.out"; echo "operator:"; cat "$work/operator.log")"
restart="$(grep -n -m1 -x "upgrade.sh: gpu-a: pod-restart-required" "$work/up2.out" | cut -d: -f1)"
passed="$(grep -n -m1 "^upgrade.sh: canary gpu-a upgraded" "$work/up2.out" | cut -d: -f1)"
if [ -z "$restart" ] || [ -z "$passed" ] || [ "$restart" -gt "$passed" ]; then
  fail "the canary passed before its driver pod restarted: $(cat "$work/up2.out")"
fi
for node in gpu-a gpu-b; do
  ds=$ds_a
  [ "$node" = gpu-a ] || ds=$ds_b
  got="$("$KUBECTL" -n gpu-operator get pods -l app=nvidia-driver-daemonset --field-selector "spec.nodeName=$node" \
    -o jsonpath='{.items[*].metadata.labels.controller-revision-hash}')"
  [ "$got" = "$(last_hash daemonset "$ds")" ] || fail "$node's driver pod at '$got', not $ds's newest: $(cat "$work/operator.log")"
done
grep -q "^upgrade.sh: done: every GPU node's driver is upgraded and validated" "$work/up2.out" || fail "upgrade.sh: $(cat "$work/up2.out")"
echo "PASS: upgrade.sh against the API stand-in"
