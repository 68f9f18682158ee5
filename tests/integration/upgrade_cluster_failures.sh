#!/usr/bin/env bash
# upgrade.sh's failure paths with the real kubectl and helm against the API
# stand-in (tests/tools/kube_api.py), each case on a cluster of its own: GPU
# nodes gpu-a..c upgrade-done from the last install, gpu-d skipped by the site
# (nvidia.com/gpu-driver-upgrade.skip=true), cpu-1 without GPUs, the release
# installed by install.sh (revision 1). The test plays the operator's driver
# upgrade through the API (tests/tools/upgrade_controller.py: a node path per
# case):
#   - bad usage exits 2 before asking the cluster anything; a missing
#     prerequisite is named and nothing is written: helm or kubectl not on
#     PATH, the release not installed (real helm against a cluster without
#     it), a canary that is no node, no GPU node or skipped by the site, a
#     previous kit that is not there;
#   - the canary ends upgrade-failed: exit 1, the other nodes held and never
#     moved, the rollback printed as `helm rollback` to the installed revision
#     (from the real helm history); that command and the printed release of
#     the held nodes, run as printed, roll back and release them;
#   - a later node ends upgrade-failed, with --previous-kit: exit 1 after the
#     canary and the next node passed, the previous kit's `helm upgrade`
#     printed, and it works as printed. A precompiled driver DaemonSet of
#     another kernel on the same selector, with newer revisions whose names
#     start with the plain DaemonSet's, is never taken for its revision;
#   - a node stuck in drain-required: no progress within --timeout;
#   - no driver pod on the canary: pending, and no progress;
#   - a kit with the same driver (the DaemonSets keep their revision): the
#     nodes upgrade-done from the last install are believed only after
#     GPUBUNDLE_SETTLE.
# The canary order, the site's skipped node, --dry-run and the stale
# upgrade-done (a pod behind its DaemonSet's newest revision) are
# upgrade_cluster.sh's.
# Usage: upgrade_cluster_failures.sh GPUBUNDLE SOURCE_DIR    Skips (77) without the real clients.
set -euo pipefail
gpubundle=$1
SRC=$2
# shellcheck source=tests/integration/kube_lib.sh
source "$SRC/tests/integration/kube_lib.sh"
kube_suite v26.7.0

"$gpubundle" -q resolve "$SRC/examples/conventional.yaml" --chart "$chart" -o "$work/lock.json"
kit=$work/kit
prev=$work/prev-kit
for k in "$kit" "$prev"; do
  "$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$chart" -o "$k"
done
export PATH="$CLIENTS_BIN:$PATH"

cat >"$work/cluster.yaml" <<'EOF'
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: gpu-a, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade-state: upgrade-done}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-b, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade-state: upgrade-done}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-c, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade-state: upgrade-done}}}
- {apiVersion: v1, kind: Node, metadata: {name: gpu-d, labels: {nvidia.com/gpu.present: "true", nvidia.com/gpu-driver-upgrade-state: upgrade-done, nvidia.com/gpu-driver-upgrade.skip: "true"}}}
- {apiVersion: v1, kind: Node, metadata: {name: cpu-1}}
- {apiVersion: v1, kind: Namespace, metadata: {name: gpu-operator}}
- apiVersion: v1
  kind: Secret
  metadata: {name: site-registry, namespace: gpu-operator}
  type: kubernetes.io/dockerconfigjson
  data: {.dockerconfigjson: e30=}
EOF
clients='(r["userAgent"] or "").startswith(("kubectl/", "Helm/"))'
writes="$clients and r['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')"
# cluster NAME: a fresh stand-in with the nodes above and the release installed;
# the last case's stand-in and controller stopped.
cluster() {
  kube_stop_all
  kube_start "$1" --seed "$work/cluster.yaml"
  "$kit/install.sh" >"$work/$1.install.out" 2>&1 || fail "install.sh: $(cat "$work/$1.install.out")"
}
# controller NAME [ARGS]: the operator's driver upgrade (upgrade_controller.py ARGS),
# logging to $work/NAME.operator.
controller() {
  local name=$1
  shift
  kube_play_upgrade_controller "$work/$name.operator" --tick 0.3 "$@"
}
# up NAME ARGS...: upgrade.sh ARGS, output in $work/NAME.out and .err; its exit code.
# GPUBUNDLE_SETTLE is $SETTLE, else 30: the controller rolls the DaemonSets
# within a tick of the release, long before that. Ended after 60s.
up() {
  local name=$1
  shift
  GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=${SETTLE:-30} timeout 60 "$kit/upgrade.sh" "$@" >"$work/$name.out" 2>"$work/$name.err"
}
out() { cat "$work/$1.out" "$work/$1.err"; echo "operator:"; cat "$work/$1.operator" 2>/dev/null || true; }
label() { "$KUBECTL" get node "$1" -o jsonpath="{.metadata.labels.${2//./\\.}}"; }
# rollback NAME: the command upgrade.sh printed to roll back (the line after
# "to roll back to the previous kit:"), and the one that releases the held nodes.
rollback_line() { sed -n '/to roll back to the previous kit:$/{n;s/^  //p;}' "$work/$1.err"; }
release_line() { sed -n 's/^upgrade.sh: then release the held nodes: //p' "$work/$1.err"; }
# path_without TOOL: $PATH without TOOL: a folder holding one is replaced by a
# folder of links to its other entries (/usr/bin may hold a kubectl).
path_without() {
  local d out="" n=0 dirs
  IFS=: read -ra dirs <<<"$PATH"
  for d in "${dirs[@]}"; do
    if [ -e "$d/$1" ]; then
      n=$((n + 1))
      mkdir -p "$work/without-$1/$n"
      find "$d" -mindepth 1 -maxdepth 1 ! -name "$1" -exec ln -s -t "$work/without-$1/$n" {} +
      d=$work/without-$1/$n
    fi
    out+=${out:+:}$d
  done
  echo "$out"
}

# --- Bad usage and missing prerequisites: nothing written ----------------------
kube_start bare --seed "$work/cluster.yaml"
kube_reset_requests
# usage NAME WANT ARGS...: upgrade.sh exits 2 saying WANT.
usage() {
  local name=$1 want=$2 rc=0
  shift 2
  up usage "$@" || rc=$?
  if [ "$rc" != 2 ] || ! grep -qF "$want" "$work/usage.err"; then fail "$name: exit $rc, wanted 2 and '$want': $(out usage)"; fi
}
usage "no canary" "upgrade.sh: name the canary node: --canary NODE"
usage "--timeout soon" "upgrade.sh: --timeout takes whole seconds, not 'soon'" --canary gpu-a --timeout soon
SETTLE=soon usage "GPUBUNDLE_SETTLE=soon" "upgrade.sh: GPUBUNDLE_SETTLE takes whole seconds, not 'soon'" --canary gpu-a
usage "an unknown argument" "upgrade.sh: unknown argument: --canary-node" --canary-node gpu-a
[ -z "$(kube_requests True)" ] || fail "bad usage asked the cluster: $(kube_requests True | cut -c1-400)"
echo "ok: bad usage exits 2 before asking the cluster"

# refused NAME WANT... -- ARGS...: upgrade.sh exits 1 with exactly these
# "missing prerequisite" lines (PATH and the release as the caller has them).
refused() {
  local name=$1 want=() got rc=0
  shift
  while [ "$1" != -- ]; do want+=("upgrade.sh: missing prerequisite: $1"); shift; done
  shift
  up refused "$@" || rc=$?
  got=$(grep 'missing prerequisite' "$work/refused.err" || true)
  [ "$rc" = 1 ] || fail "$name: exit $rc, wanted 1: $(out refused)"
  [ "$got" = "$(printf '%s\n' "${want[@]}")" ] ||
    fail "$name: exit $rc; got"$'\n'"$(out refused)"$'\n'"expected"$'\n'"$(printf '%s\n' "${want[@]}")"
}
no_release="release: gpu-operator is not installed in namespace gpu-operator (install it with install.sh)"
refused "no release" "$no_release" -- --canary gpu-a
nohelm=$(path_without helm)
nokubectl=$(path_without kubectl)
PATH=$nohelm refused "no helm" "helm: not on PATH (copy the helm binary onto this machine; https://helm.sh)" -- --canary gpu-a
PATH=$nokubectl refused "no kubectl" "kubectl: not on PATH" -- --canary gpu-a
"$kit/install.sh" >"$work/bare.install.out" 2>&1 || fail "install.sh: $(cat "$work/bare.install.out")"
kube_reset_requests
refused "canary not a node" "canary: node gpu-x not found" -- --canary gpu-x
refused "canary not a GPU node" "canary: node cpu-1 is not a GPU node (no nvidia.com/gpu.present=true)" -- --canary cpu-1
refused "canary skipped by the site" \
  "canary: node gpu-d is labelled nvidia.com/gpu-driver-upgrade.skip=true, so the operator would never upgrade it" -- --canary gpu-d
refused "no previous kit" "previous kit: $work/nowhere is not a folder" -- --canary gpu-a --previous-kit "$work/nowhere"
[ -z "$(kube_requests "$writes")" ] || fail "a refused upgrade.sh wrote: $(kube_requests "$writes" | cut -c1-400)"
[ "$("$HELM" history gpu-operator -n gpu-operator --max 1 | awk 'NR == 2 {print $1}')" = 1 ] || fail "a refused run upgraded"
echo "ok: missing prerequisites are named and nothing is written (real helm and kubectl)"

# --- The same driver: upgrade-done believed only after GPUBUNDLE_SETTLE --------
# (on the cluster above, which nothing has changed)
controller same --daemonset nvidia-driver-daemonset=gpu-a,gpu-b,gpu-c,gpu-d --same-driver
t0=$SECONDS
SETTLE=4 up same --canary gpu-a --timeout 20 || fail "upgrade.sh with the same driver: $(out same)"
[ $((SECONDS - t0)) -ge 4 ] || fail "upgrade-done believed before GPUBUNDLE_SETTLE: $(out same)"
grep -qxF "upgrade.sh: waiting on: gpu-a(driver DaemonSet unchanged so far; believed after 4s)" "$work/same.out" ||
  fail "no settle line: $(out same)"
grep -q "^upgrade.sh: done: every GPU node's driver is upgraded and validated (left out: gpu-d)" "$work/same.out" || fail "$(out same)"
grep -qx "release 2 deployed" "$work/same.operator" || fail "the release was not upgraded: $(out same)"
echo "ok: an unchanged driver is believed after GPUBUNDLE_SETTLE"

# --- The canary fails: the others stay held; helm rollback to revision 1 --------
cluster canary
controller canary --daemonset nvidia-driver-daemonset=gpu-a,gpu-b,gpu-c,gpu-d \
  --path gpu-a=upgrade-required,cordon-required,upgrade-failed
if up canary --canary gpu-a --timeout 20; then fail "upgrade.sh passed a failed canary: $(out canary)"; fi
grep -qx "gpu-a upgrade-failed" "$work/canary.operator" || fail "the canary never failed: $(out canary)"
grep -qxF "upgrade.sh: node gpu-a is upgrade-failed: stopping; see kubectl describe node gpu-a and the driver pod's logs" \
  "$work/canary.err" || fail "failed canary not named: $(out canary)"
grep -qxF "upgrade.sh: nodes still held back (not upgraded): gpu-b gpu-c" "$work/canary.err" || fail "held nodes not named: $(out canary)"
[ "$(rollback_line canary)" = "helm rollback gpu-operator 1 --namespace gpu-operator --wait --timeout 15m" ] ||
  fail "rollback: $(out canary)"
kube_stop_upgrade_controller
if grep -E '^gpu-(b|c) ' "$work/canary.operator"; then fail "other nodes moved after the canary failed"; fi
for node in gpu-b gpu-c; do
  [ "$(label "$node" nvidia.com/gpu-driver-upgrade.skip)|$(label "$node" gpubundle.io/upgrade-held)" = "true|true" ] ||
    fail "$node released after the canary failed"
done
bash -c "$(rollback_line canary)" >"$work/canary.rollback" 2>&1 || fail "the printed rollback: $(cat "$work/canary.rollback")"
"$HELM" history gpu-operator -n gpu-operator --max 1 >"$work/canary.history"
grep -qE '^3\s.*\sdeployed\s.*Rollback to 1' "$work/canary.history" || fail "not rolled back: $(cat "$work/canary.history")"
bash -c "$(release_line canary)" >/dev/null || fail "the printed release of the held nodes: $(out canary)"
[ "$("$KUBECTL" get nodes -l nvidia.com/gpu-driver-upgrade.skip=true -o name)" = node/gpu-d ] ||
  fail "after the printed release: $("$KUBECTL" get nodes --show-labels)"
echo "ok: a failed canary holds the others; the printed rollback and release work"

# --- A later node fails, --previous-kit: that kit's helm upgrade ----------------
# A DaemonSet of another kernel on the driver selector, its revisions newer
# (from 7) and named nvidia-driver-daemonset-6.8.0-41-...: owned by it, so never
# taken for the plain DaemonSet's, or the canary would never pass.
cluster later
controller later --daemonset nvidia-driver-daemonset=gpu-a,gpu-b,gpu-c,gpu-d \
  --daemonset nvidia-driver-daemonset-6.8.0-41-generic-ubuntu24.04=@7 \
  --path gpu-c=upgrade-required,cordon-required,pod-restart-required,upgrade-failed
if up later --canary gpu-a --previous-kit "$prev" --timeout 20; then fail "upgrade.sh passed a failed node: $(out later)"; fi
grep -qx "upgrade.sh: canary gpu-a upgraded and validated" "$work/later.out" || fail "the canary did not pass: $(out later)"
grep -qx "gpu-b upgrade-done" "$work/later.operator" || fail "gpu-b was not upgraded: $(out later)"
grep -qxF "upgrade.sh: node gpu-c is upgrade-failed: stopping; see kubectl describe node gpu-c and the driver pod's logs" \
  "$work/later.err" || fail "failed node not named: $(out later)"
if grep -q "still held back" "$work/later.err"; then fail "held nodes named after their release: $(out later)"; fi
cmd="helm upgrade gpu-operator $prev/gpu-operator-v26.7.0.tgz -f $prev/values.yaml --namespace gpu-operator --wait --timeout 15m"
[ "$(rollback_line later)" = "$cmd" ] || fail "rollback: wanted '$cmd': $(out later)"
kube_stop_upgrade_controller
bash -c "$(rollback_line later)" >"$work/later.rollback" 2>&1 || fail "the printed rollback: $(cat "$work/later.rollback")"
"$HELM" history gpu-operator -n gpu-operator --max 1 >"$work/later.history"
grep -qE '^3\s.*\sdeployed\s.*Upgrade complete' "$work/later.history" || fail "not rolled back: $(cat "$work/later.history")"
echo "ok: a later failed node stops the upgrade with the previous kit's helm upgrade, which works"

# --- No progress within --timeout: a node stuck draining ------------------------
cluster stuck
controller stuck --daemonset nvidia-driver-daemonset=gpu-a,gpu-b,gpu-c,gpu-d --path gpu-a=upgrade-required,drain-required
if up stuck --canary gpu-a --timeout 3; then fail "upgrade.sh passed a stuck canary: $(out stuck)"; fi
grep -qx "gpu-a drain-required" "$work/stuck.operator" || fail "the canary never got to drain-required: $(out stuck)"
grep -qx "upgrade.sh: gpu-a: drain-required" "$work/stuck.out" || fail "upgrade.sh never saw drain-required: $(out stuck)"
grep -qxF "upgrade.sh: no progress for 3s; waiting on: gpu-a" "$work/stuck.err" || fail "timeout: $(out stuck)"
echo "ok: --timeout"

# --- No driver pod on the canary: pending however long --------------------------
cluster nopod
controller nopod --daemonset nvidia-driver-daemonset=gpu-b,gpu-c,gpu-d
if up nopod --canary gpu-a --timeout 2; then fail "upgrade.sh passed a canary without a driver pod: $(out nopod)"; fi
grep -qxF "upgrade.sh: no progress for 2s; waiting on: gpu-a(no driver pod)" "$work/nopod.err" || fail "no driver pod: $(out nopod)"
echo "PASS: upgrade.sh's failure paths against the API stand-in"
