#!/usr/bin/env bash
# The kit's upgrade.sh against stub helm and kubectl that keep node labels in
# files and, once `helm upgrade` ran, move each GPU node not labelled
# nvidia.com/gpu-driver-upgrade.skip=true one step through its scripted
# nvidia.com/gpu-driver-upgrade-state sequence per look, as the operator's
# upgrade controller does:
#   - shellcheck;
#   - --dry-run: helm --dry-run, no label changed, no node moved;
#   - the canary goes to upgrade-done before any other node moves, then the
#     others; a node the site already skips is never touched;
#   - a node that ends upgrade-failed (the canary, or a later one): exit 1, the
#     exact rollback command (--previous-kit, or helm rollback to the revision);
#   - a node counts as upgraded only when its driver pod's controller-revision-hash
#     is its DaemonSet's newest ControllerRevision (the stub serves one of another
#     DaemonSet too, newer and with a longer name: owned elsewhere, so not it).
#     An upgrade-done left from the last upgrade with the pod at the old revision
#     is never passed, before or after GPUBUNDLE_SETTLE, until the pod moves on;
#     no driver pod on the node is pending too;
#   - an unchanged driver (the DaemonSet kept its revision) is believed only after
#     GPUBUNDLE_SETTLE; no progress within --timeout; missing prerequisites; bad usage.
# Usage: kit_upgrade.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail
gpubundle="$1"
src="$2"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
"$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
kit="$work/kit"
prev="$work/prev-kit"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$kit"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$prev"
[ -x "$kit/upgrade.sh" ] || fail "kit lacks an executable upgrade.sh"
shellcheck -s bash "$kit/upgrade.sh" || fail "shellcheck upgrade.sh"
# The operator's upgrade policy: one node at a time, drain on.
python3 - "$kit/values.yaml" <<'PY' || fail "values.yaml: driver.upgradePolicy"
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))["driver"]["upgradePolicy"]
assert p["autoUpgrade"] is True and p["maxParallelUpgrades"] == 1 and p["maxUnavailable"] == 1, p
assert p["drain"] == {"enable": True, "force": False, "deleteEmptyDir": False, "timeoutSeconds": 300}, p
PY

stubs="$work/stubs"
mkdir -p "$stubs"
cat >"$stubs/helm" <<'STUB'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$STUB/helm.args"
case "$1" in
  status) [ -z "${STUB_NOT_INSTALLED:-}" ] ;;
  history) printf 'REVISION\tUPDATED\tSTATUS\tCHART\n3\tnow\tdeployed\tgpu-operator-v26.7.0\n' ;;
  upgrade) [[ " $* " == *" --dry-run "* ]] || touch "$STUB/upgraded" ;;
esac
STUB
cat >"$stubs/kubectl" <<'STUB'
#!/usr/bin/env bash
# Nodes: $STUB/nodes/NAME/{gpu,skip,held,state,seq,pos,podhash,nopod}. One driver
# DaemonSet (uid ds-uid) at revision 1 (hash old), and 2 (hash new) once helm
# upgraded unless STUB_SAME_DRIVER; a GPU node's driver pod runs podhash (default
# old), set to the newest hash when the node passes pod-restart-required.
printf '%s\n' "$*" >>"$STUB/kubectl.args"
n="$STUB/nodes"
get() { cat "$n/$1/$2" 2>/dev/null || true; }
newest() { if [ -f "$STUB/upgraded" ] && [ -z "${STUB_SAME_DRIVER:-}" ]; then echo new; else echo old; fi; }
case "$*" in
  "-n gpu-operator get daemonsets -l app.kubernetes.io/component=nvidia-driver -o "*)
    echo "nvidia-driver-daemonset|ds-uid|app=nvidia-driver-daemonset,"; exit 0 ;;
  "-n gpu-operator get controllerrevisions -l app=nvidia-driver-daemonset -o "*)
    echo "1|nvidia-driver-daemonset-old|ds-uid"
    echo "7|nvidia-driver-daemonset-6.8.0-41-generic-ubuntu24.04-abc|other-ds-uid"
    [ "$(newest)" = old ] || echo "2|nvidia-driver-daemonset-new|ds-uid"
    exit 0 ;;
  "-n gpu-operator get pods -l app.kubernetes.io/component=nvidia-driver -o "*)
    for d in "$n"/*; do
      node="${d##*/}"
      [ "$(get "$node" gpu)" = true ] && [ ! -e "$d/nopod" ] || continue
      hash="$(get "$node" podhash)"
      echo "$node|nvidia-driver-daemonset-$node|${hash:-old}|DaemonSet|ds-uid"
    done
    exit 0 ;;
esac
case "$*" in
  "config current-context") echo stub-context; exit 0 ;;
  "config view"*) echo https://127.0.0.1:6443; exit 0 ;;
  "get --raw /version"*) echo '{}'; exit 0 ;;
esac
case "$1 $2" in
  "get node")
    [ -d "$n/$3" ] || { echo "Error from server (NotFound): nodes \"$3\" not found" >&2; exit 1; }
    echo "$(get "$3" gpu)|$(get "$3" skip)" ;;
  "get nodes")
    for d in "$n"/*; do
      node="${d##*/}"
      [ "$(get "$node" gpu)" = true ] || continue
      if [ -f "$STUB/upgraded" ] && [ "$(get "$node" skip)" != true ]; then
        read -r -a seq <"$d/seq"
        pos="$(get "$node" pos)"; pos="${pos:-0}"
        if [ "$pos" -lt "${#seq[@]}" ]; then
          echo "${seq[$pos]}" >"$d/state"; echo $((pos + 1)) >"$d/pos"
          [ "${seq[$pos]}" != pod-restart-required ] || newest >"$d/podhash"
          echo "$node ${seq[$pos]}" >>"$STUB/transitions"
        fi
      fi
      echo "$node|$(get "$node" state)|$(get "$node" skip)"
    done ;;
  "label node")
    node="$3"; shift 3
    for l in "$@"; do
      case "$l" in
        nvidia.com/gpu-driver-upgrade.skip=true) echo true >"$n/$node/skip" ;;
        nvidia.com/gpu-driver-upgrade.skip-) rm -f "$n/$node/skip" ;;
        gpubundle.io/upgrade-held=true) echo true >"$n/$node/held" ;;
        gpubundle.io/upgrade-held-) rm -f "$n/$node/held" ;;
      esac
    done ;;
  "-n gpu-operator")
    node="$(sed -n 's/.*spec.nodeName=\([^ ]*\).*/\1/p' <<<"$*")"
    [ "$(get "$node" state)" = upgrade-done ] && echo Running || echo Pending ;;
esac
exit 0
STUB
chmod +x "$stubs/helm" "$stubs/kubectl"

ok_seq="upgrade-required cordon-required wait-for-jobs-required pod-deletion-required pod-restart-required validation-required uncordon-required upgrade-done"
# cluster SEQ_A SEQ_B SEQ_C: GPU nodes gpu-a..c with those sequences, gpu-d
# skipped by the site, cpu-1 without GPUs; all upgrade-done from the last install.
cluster() {
  export STUB="$work/stub.$RANDOM"
  mkdir -p "$STUB/nodes"
  local i=0 seqs=("$@")
  for node in gpu-a gpu-b gpu-c gpu-d cpu-1; do
    mkdir -p "$STUB/nodes/$node"
    [ "$node" = cpu-1 ] || { echo true >"$STUB/nodes/$node/gpu"; echo upgrade-done >"$STUB/nodes/$node/state"; }
    echo "${seqs[$i]:-$ok_seq}" >"$STUB/nodes/$node/seq"
    i=$((i + 1))
  done
  echo true >"$STUB/nodes/gpu-d/skip"
}
up() { GPUBUNDLE_POLL=0 GPUBUNDLE_SETTLE=0 PATH="$stubs:$PATH" "$kit/upgrade.sh" "$@"; }

# --dry-run: helm --dry-run, nothing labelled, nothing moves.
cluster
out="$(up --canary gpu-a --dry-run)" || fail "--dry-run failed: $out"
grep -q "^upgrade gpu-operator $kit/gpu-operator-v26.7.0.tgz -f $kit/values.yaml --namespace gpu-operator --wait --timeout 15m --dry-run$" \
  "$STUB/helm.args" || fail "--dry-run: helm args: $(cat "$STUB/helm.args")"
if grep -q '^label' "$STUB/kubectl.args"; then fail "--dry-run labelled a node: $(cat "$STUB/kubectl.args")"; fi
[ ! -e "$STUB/upgraded" ] && [ ! -e "$STUB/transitions" ] || fail "--dry-run changed the cluster"
grep -qxF "+ kubectl label node gpu-b --overwrite nvidia.com/gpu-driver-upgrade.skip=true gpubundle.io/upgrade-held=true" <<<"$out" ||
  fail "--dry-run does not show the hold: $out"
grep -qF "rollback would be: helm rollback gpu-operator 3 --namespace gpu-operator" <<<"$out" || fail "--dry-run: no rollback line: $out"
echo "ok: --dry-run changes nothing"

# The canary first, then the rest; the site's skipped node untouched.
cluster
out="$(up --canary gpu-a --previous-kit "$prev")" || fail "upgrade failed: $out"
first_other="$(grep -n -m1 -E '^gpu-(b|c) ' "$STUB/transitions" | cut -d: -f1)"
canary_done="$(grep -n -x 'gpu-a upgrade-done' "$STUB/transitions" | cut -d: -f1)"
[ -n "$canary_done" ] && [ -n "$first_other" ] && [ "$canary_done" -lt "$first_other" ] ||
  fail "the canary was not done before the others moved: $(cat "$STUB/transitions")"
for node in gpu-b gpu-c; do
  grep -qx "$node upgrade-done" "$STUB/transitions" || fail "$node not upgraded"
  [ ! -e "$STUB/nodes/$node/skip" ] && [ ! -e "$STUB/nodes/$node/held" ] || fail "$node still held"
done
if grep -q '^gpu-d ' "$STUB/transitions"; then fail "the site-skipped node moved"; fi
[ "$(cat "$STUB/nodes/gpu-d/skip")" = true ] || fail "the site's skip label on gpu-d was removed"
grep -q "done: every GPU node's driver is upgraded and validated (left out: gpu-d)" <<<"$out" || fail "no done line: $out"
echo "ok: canary, then the other nodes"

# A kit that leaves the driver alone: the nodes stay upgrade-done, their pods
# at the DaemonSet's unchanged revision; that is believed only after
# GPUBUNDLE_SETTLE, as the operator may not have applied the new values yet.
cluster upgrade-done upgrade-done upgrade-done
t0=$SECONDS
out="$(STUB_SAME_DRIVER=1 GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=3 PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a)" ||
  fail "no-driver-change upgrade: $out"
[ $((SECONDS - t0)) -ge 3 ] || fail "upgrade-done believed before GPUBUNDLE_SETTLE"
grep -qF "waiting on: gpu-a(driver DaemonSet unchanged so far; believed after 3s)" <<<"$out" || fail "no settle line: $out"
echo "ok: an unchanged driver is done after the settle time"

# A new driver the operator has not rolled out yet: every node still upgrade-done
# from the last upgrade, its pod at the old revision. Never passed, not even
# after the settle time: no progress, naming the revisions.
stale="upgrade-done upgrade-done upgrade-done upgrade-done"
for settle in 0 2; do
  cluster "$stale" "$stale" "$stale"
  if GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE="$settle" PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a --timeout 4 \
    >"$work/out" 2>"$work/err"; then
    fail "a stale upgrade-done passed (settle $settle): $(cat "$work/out")"
  fi
  grep -qxF "upgrade.sh: no progress for 4s; waiting on: gpu-a(driver pod at revision old, DaemonSet nvidia-driver-daemonset at new)" \
    "$work/err" || fail "stale upgrade-done (settle $settle): $(cat "$work/out" "$work/err")"
  if grep -q "canary gpu-a upgraded" "$work/out"; then fail "stale canary reported upgraded: $(cat "$work/out")"; fi
  [ "$(cat "$STUB/nodes/gpu-b/skip")" = true ] || fail "gpu-b released after a stale canary"
done
echo "ok: a stale upgrade-done with the old driver pod is never passed"

# The same, until the pods move on: the canary passes once its pod runs the new
# revision, the others only once theirs do.
cluster "$stale" "$stale" "$stale"
GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=0 PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a --timeout 60 >"$work/out" 2>&1 &
pid=$!
waitfor() {  # waitfor TEXT: until the running upgrade.sh printed TEXT
  local i
  for i in $(seq 100); do
    ! grep -qF "$1" "$work/out" || return 0
    kill -0 "$pid" 2>/dev/null || fail "upgrade.sh ended before '$1': $(cat "$work/out")"
    sleep 0.1
  done
  fail "upgrade.sh never printed '$1': $(cat "$work/out")"
}
waitfor "waiting on: gpu-a(driver pod at revision old, DaemonSet nvidia-driver-daemonset at new)"
sleep 2
if grep -q "canary gpu-a upgraded" "$work/out"; then fail "canary passed at the old revision: $(cat "$work/out")"; fi
echo new >"$STUB/nodes/gpu-a/podhash"
waitfor "canary gpu-a upgraded and validated"
waitfor "waiting on: gpu-b(driver pod at revision old, DaemonSet nvidia-driver-daemonset at new) gpu-c(driver pod at revision old, DaemonSet nvidia-driver-daemonset at new)"
echo new >"$STUB/nodes/gpu-b/podhash"
sleep 2
if grep -q "done: every GPU node" "$work/out"; then fail "done with gpu-c at the old revision: $(cat "$work/out")"; fi
echo new >"$STUB/nodes/gpu-c/podhash"
wait "$pid" || fail "upgrade.sh failed after the pods moved on: $(cat "$work/out")"
grep -q "done: every GPU node's driver is upgraded and validated" "$work/out" || fail "no done line: $(cat "$work/out")"
echo "ok: a stale upgrade-done passes once the driver pod runs the new revision"

# No driver pod on the canary: not upgraded.
cluster
touch "$STUB/nodes/gpu-a/nopod"
if GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=0 PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a --timeout 3 >"$work/out" 2>"$work/err"; then
  fail "passed a canary without a driver pod"
fi
grep -qxF "upgrade.sh: no progress for 3s; waiting on: gpu-a(no driver pod)" "$work/err" || fail "no driver pod: $(cat "$work/err")"
echo "ok: a node without a driver pod is pending"

# A later node fails: stop, exit 1, the previous kit's helm upgrade printed.
cluster "$ok_seq" "$ok_seq" "upgrade-required cordon-required pod-restart-required upgrade-failed"
if up --canary gpu-a --previous-kit "$prev" >"$work/out" 2>"$work/err"; then fail "upgrade.sh succeeded with a failed node"; fi
grep -q "node gpu-c is upgrade-failed" "$work/err" || fail "failed node not named: $(cat "$work/err")"
grep -qxF "  helm upgrade gpu-operator $prev/gpu-operator-v26.7.0.tgz -f $prev/values.yaml --namespace gpu-operator --wait --timeout 15m" \
  "$work/err" || fail "no rollback command: $(cat "$work/err")"
echo "ok: a failed node stops the upgrade with the rollback command"

# The canary fails: the others stay held and never move; helm rollback to the revision.
cluster "upgrade-required cordon-required upgrade-failed"
if up --canary gpu-a >"$work/out" 2>"$work/err"; then fail "upgrade.sh succeeded with a failed canary"; fi
grep -q "node gpu-a is upgrade-failed" "$work/err" || fail "failed canary not named: $(cat "$work/err")"
grep -q "nodes still held back (not upgraded): gpu-b gpu-c" "$work/err" || fail "held nodes not named: $(cat "$work/err")"
grep -qxF "  helm rollback gpu-operator 3 --namespace gpu-operator --wait --timeout 15m" "$work/err" ||
  fail "no helm rollback: $(cat "$work/err")"
if grep -q -E '^gpu-(b|c) ' "$STUB/transitions"; then fail "other nodes moved after the canary failed"; fi
[ "$(cat "$STUB/nodes/gpu-b/skip")" = true ] || fail "gpu-b released after the canary failed"
echo "ok: a failed canary holds the other nodes"

# No progress within --timeout.
cluster "upgrade-required drain-required"
if GPUBUNDLE_POLL=1 GPUBUNDLE_SETTLE=0 PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a --timeout 2 >"$work/out" 2>"$work/err"; then
  fail "upgrade.sh succeeded with a stuck node"
fi
grep -q "no progress for 2s; waiting on: gpu-a" "$work/err" || fail "timeout: $(cat "$work/err")"
echo "ok: --timeout"

# Missing prerequisites and bad usage.
cluster
mkdir -p "$work/nohelm"
ln -sf "$stubs/kubectl" "$work/nohelm/kubectl"
if GPUBUNDLE_POLL=0 PATH="$work/nohelm:/usr/bin:/bin" "$kit/upgrade.sh" --canary gpu-a >"$work/out" 2>"$work/err"; then fail "ran without helm"; fi
grep -q "missing prerequisite: helm: not on PATH" "$work/err" || fail "helm not named: $(cat "$work/err")"
refused() {  # refused WANT ARGS...: upgrade.sh exits 1 and says WANT
  local want="$1"; shift
  if up "$@" >"$work/out" 2>&1; then fail "ran with $*"; fi
  grep -qF "$want" "$work/out" || fail "$*: wanted '$want', got: $(cat "$work/out")"
}
refused "canary: node cpu-1 is not a GPU node" --canary cpu-1
refused "canary: node gpu-x not found" --canary gpu-x
refused "canary: node gpu-d is labelled nvidia.com/gpu-driver-upgrade.skip=true" --canary gpu-d
STUB_NOT_INSTALLED=1 refused "release: gpu-operator is not installed" --canary gpu-a
refused "previous kit: $work/nowhere is not a folder" --canary gpu-a --previous-kit "$work/nowhere"
set +e
up >/dev/null 2>&1; rc1=$?
up --canary gpu-a --timeout soon >/dev/null 2>&1; rc2=$?
GPUBUNDLE_SETTLE=soon PATH="$stubs:$PATH" "$kit/upgrade.sh" --canary gpu-a >/dev/null 2>&1; rc3=$?
set -e
[ "$rc1$rc2$rc3" = 222 ] || fail "bad usage exits $rc1, $rc2 and $rc3, wanted 2"
[ ! -e "$STUB/upgraded" ] || fail "a refused run upgraded"
echo "ok: prerequisites and usage"
