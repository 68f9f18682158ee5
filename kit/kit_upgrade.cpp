// upgrade.sh: `helm upgrade` to this kit with the driver rolled one node at a
// time by the GPU Operator's own upgrade controller, one canary node first.
//
// What it relies on (GPU Operator docs, "GPU Driver Upgrades", and
// gpu-operator-facts.md): with driver.upgradePolicy.autoUpgrade the operator
// upgrades the driver node by node, showing each node's progress in the label
// nvidia.com/gpu-driver-upgrade-state (upgrade-required, cordon-required,
// wait-for-jobs-required, pod-deletion-required, drain-required,
// pod-restart-required, validation-required (the operator-validator pod),
// uncordon-required, upgrade-done, upgrade-failed), and leaves out every node
// labelled nvidia.com/gpu-driver-upgrade.skip=true. The canary is therefore
// made by holding every other GPU node with that label (and a label of ours,
// gpubundle.io/upgrade-held=true, so that only our holds are released), then
// releasing them once the canary is upgraded with its validator running.
// The kit's values set maxParallelUpgrades 1 (kit_values.cpp).
//
// A node's upgrade-done label alone proves nothing: it stays from the last
// upgrade until the operator notices the new driver. So a node counts as
// upgraded only when every driver pod on it runs its DaemonSet's newest
// revision, compared the way the upgrade controller compares them
// (k8s-operator-libs pkg/upgrade, podInSyncWithDS and
// GetDaemonsetControllerRevisionHash): the pod's controller-revision-hash
// label against the newest ControllerRevision selected by the DaemonSet's
// spec.selector.matchLabels and named <daemonset>-<hash>. DaemonSetStatus has
// no update revision to read instead.

#include "kit/kit.hpp"
#include "kit/kit_detail.hpp"
#include "common/strings.hpp"

namespace gb::kit::detail {

namespace {

constexpr const char* k_upgrade = R"SH(#!/usr/bin/env bash
# upgrade.sh: upgrade the GPU Operator to this kit (chart and values.yaml), the
# driver one node at a time, the canary node first.
#
# Usage: ./upgrade.sh --canary NODE [--previous-kit DIR] [--dry-run] [--timeout S]
#   --canary NODE       the GPU node whose driver upgrades first; the others wait until it is done
#   --previous-kit DIR  the kit installed now: the rollback command names its chart and values
#   --dry-run           check everything and pass --dry-run to helm; changes nothing
#   --timeout S         stop when no node's upgrade state changed for S seconds (default 1800)
#   -h, --help          print this help
#
# Environment:
#   GPUBUNDLE_CHART      the chart .tgz or folder (default: the .tgz next to this script)
#   GPUBUNDLE_NAMESPACE  the release namespace (default @NAMESPACE@)
#   GPUBUNDLE_TIMEOUT    helm --timeout (default 15m)
#   GPUBUNDLE_POLL       seconds between looks (default 10)
#   GPUBUNDLE_SETTLE     seconds after helm upgrade in which a node whose driver DaemonSet
#                        kept its revision is not yet believed, as the operator may not
#                        have applied the new driver to it yet (default 120)
@HEADER@
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
release=@RELEASE@
namespace="${GPUBUNDLE_NAMESPACE:-@NAMESPACE@}"
chart="${GPUBUNDLE_CHART:-$here/@CHART_FILE@}"
helm_timeout="${GPUBUNDLE_TIMEOUT:-15m}"
poll="${GPUBUNDLE_POLL:-10}"
settle="${GPUBUNDLE_SETTLE:-120}"
skip_label=nvidia.com/gpu-driver-upgrade.skip
held_label=gpubundle.io/upgrade-held
# Every driver DaemonSet and its pods carry this label, whether the ClusterPolicy
# (one DaemonSet, or one per kernel when precompiled) or NVIDIADriver CRs make them.
driver_label=app.kubernetes.io/component=nvidia-driver

@USAGE@
say() { echo "upgrade.sh: $*"; }
fail() { echo "upgrade.sh: $*" >&2; exit 1; }

canary=""
previous=""
dry_run=0
timeout=1800
while [ "$#" -gt 0 ]; do
  case "$1" in
    --canary) [ "$#" -ge 2 ] || { usage >&2; exit 2; }; canary="$2"; shift ;;
    --canary=*) canary="${1#*=}" ;;
    --previous-kit) [ "$#" -ge 2 ] || { usage >&2; exit 2; }; previous="$2"; shift ;;
    --previous-kit=*) previous="${1#*=}" ;;
    --timeout) [ "$#" -ge 2 ] || { usage >&2; exit 2; }; timeout="$2"; shift ;;
    --timeout=*) timeout="${1#*=}" ;;
    --dry-run) dry_run=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "upgrade.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ -n "$canary" ] || { echo "upgrade.sh: name the canary node: --canary NODE" >&2; usage >&2; exit 2; }
case "$timeout" in ''|*[!0-9]*) echo "upgrade.sh: --timeout takes whole seconds, not '$timeout'" >&2; exit 2 ;; esac
case "$settle" in ''|*[!0-9]*) echo "upgrade.sh: GPUBUNDLE_SETTLE takes whole seconds, not '$settle'" >&2; exit 2 ;; esac
@NAMESPACE_CHECK@

@API_CHECK@

@CLUSTER_CHECK@

@PACKAGE_REPO_APPLY@

missing=()
check_cluster
[ -e "$chart" ] || missing+=("chart: $chart not found (put @CHART_FILE@ next to this script, or set GPUBUNDLE_CHART)")
[ -f "$here/values.yaml" ] || missing+=("values: $here/values.yaml not found")
previous_chart=""
if [ -n "$previous" ] && [ ! -d "$previous" ]; then
  missing+=("previous kit: $previous is not a folder")
elif [ -n "$previous" ]; then
  previous="$(cd "$previous" && pwd)"
  charts=("$previous"/*.tgz)
  if [ ! -f "$previous/values.yaml" ]; then
    missing+=("previous kit: $previous/values.yaml not found")
  elif [ "${#charts[@]}" -ne 1 ] || [ ! -f "${charts[0]}" ]; then
    missing+=("previous kit: $previous should hold its chart, one .tgz")
  else
    previous_chart="${charts[0]}"
  fi
fi
if [ "${#missing[@]}" -eq 0 ]; then
  if ! helm status "$release" --namespace "$namespace" >/dev/null 2>&1; then
    missing+=("release: $release is not installed in namespace $namespace (install it with install.sh)")
  fi
  if ! labels="$(kubectl get node "$canary" -o \
    jsonpath='{.metadata.labels.nvidia\.com/gpu\.present}|{.metadata.labels.nvidia\.com/gpu-driver-upgrade\.skip}' 2>/dev/null)"; then
    missing+=("canary: node $canary not found")
  elif [ "${labels%%|*}" != "true" ]; then
    missing+=("canary: node $canary is not a GPU node (no nvidia.com/gpu.present=true)")
  elif [ "${labels#*|}" = "true" ]; then
    missing+=("canary: node $canary is labelled $skip_label=true, so the operator would never upgrade it")
  fi
fi
if [ "${#missing[@]}" -gt 0 ]; then
  for m in "${missing[@]}"; do echo "upgrade.sh: missing prerequisite: $m" >&2; done
  exit 1
fi

revision="$(helm history "$release" --namespace "$namespace" --max 1 2>/dev/null | awk 'NR == 2 {print $1}')"
if [ -n "$previous_chart" ]; then
  rollback="helm upgrade $release $previous_chart -f $previous/values.yaml --namespace $namespace --wait --timeout $helm_timeout"
else
  rollback="helm rollback $release ${revision:-PREVIOUS_REVISION} --namespace $namespace --wait --timeout $helm_timeout"
fi
release_held="kubectl label nodes -l $held_label=true $skip_label- $held_label-"

# node|state|skip for every GPU node.
gpu_nodes() {
  kubectl get nodes -l nvidia.com/gpu.present=true -o \
    jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.labels.nvidia\.com/gpu-driver-upgrade-state}{"|"}{.metadata.labels.nvidia\.com/gpu-driver-upgrade\.skip}{"\n"}{end}'
}
validator_phase() {
  kubectl -n "$namespace" get pods -l app=nvidia-operator-validator --field-selector "spec.nodeName=$1" \
    -o jsonpath='{.items[*].status.phase}' 2>/dev/null || true
}
# NAME|UID|HASH for every driver DaemonSet, HASH from its newest ControllerRevision
# as the upgrade controller finds it. The DaemonSet must also own the revision:
# precompiled drivers run one DaemonSet per kernel with one selector, and their
# names can share a prefix. HASH is empty when none is found.
driver_revisions() {
  local ds uid sel
  # shellcheck disable=SC2016 # a go-template, not shell
  kubectl -n "$namespace" get daemonsets -l "$driver_label" -o \
    go-template='{{range .items}}{{.metadata.name}}|{{.metadata.uid}}|{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}{{"\n"}}{{end}}' |
    while IFS='|' read -r ds uid sel; do
      if [ -z "$ds" ] || [ -z "$sel" ]; then continue; fi
      kubectl -n "$namespace" get controllerrevisions -l "${sel%,}" -o \
        jsonpath='{range .items[*]}{.revision}{"|"}{.metadata.name}{"|"}{.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}' |
        awk -F'|' -v ds="$ds" -v uid="$uid" '
          index($2, ds "-") == 1 && $3 == uid && (best == "" || $1 + 0 > max) { max = $1 + 0; best = substr($2, length(ds) + 2) }
          END { print ds "|" uid "|" best }'
    done
}
# NODE|POD|HASH|OWNER_KIND|OWNER_UID for every driver pod.
driver_pods() {
  kubectl -n "$namespace" get pods -l "$driver_label" -o \
    jsonpath='{range .items[*]}{.spec.nodeName}{"|"}{.metadata.name}{"|"}{.metadata.labels.controller-revision-hash}{"|"}{.metadata.ownerReferences[?(@.controller==true)].kind}{"|"}{.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}'
}
# driver_sync NODE REVISIONS PODS BEFORE: "new" when every driver pod on NODE runs its
# DaemonSet's newest revision and some DaemonSet moved on since BEFORE (driver_revisions
# before helm upgrade), "same" when in sync but none moved on; else why NODE is not.
driver_sync() {
  awk -F'|' -v node="$1" '
    FILENAME == ARGV[1] { before[$1 "|" $2] = $3; next }
    FILENAME == ARGV[2] { if ($2 != "") { name[$2] = $1; hash[$2] = $3 }; next }
    $1 != node || $2 == "" { next }
    { pods++ }
    $4 != "DaemonSet" || !($5 in hash) { why = why sep "driver pod " $2 " not owned by a driver DaemonSet"; sep = "; "; next }
    hash[$5] == "" { why = why sep "DaemonSet " name[$5] " has no ControllerRevision"; sep = "; "; next }
    $3 != hash[$5] {
      why = why sep "driver pod at revision " ($3 == "" ? "(none)" : $3) ", DaemonSet " name[$5] " at " hash[$5]; sep = "; "; next
    }
    before[name[$5] "|" $5] != hash[$5] { moved = 1 }
    END {
      if (!pods) why = "no driver pod"
      print (why != "" ? why : moved ? "new" : "same")
    }' <(printf '%s\n' "$4") <(printf '%s\n' "$2") <(printf '%s\n' "$3")
}
run() {
  if [ "$dry_run" -eq 1 ]; then echo "+ $*"; else "$@" >/dev/null; fi
}
stop_failed() {
  echo "upgrade.sh: node $1 is upgrade-failed: stopping; see kubectl describe node $1 and the driver pod's logs" >&2
  if [ -n "$held" ]; then
    echo "upgrade.sh: nodes still held back (not upgraded):$held" >&2
  fi
  echo "upgrade.sh: to roll back to the previous kit:" >&2
  echo "  $rollback" >&2
  echo "upgrade.sh: then release the held nodes: $release_held" >&2
  exit 1
}

nodes="$(gpu_nodes)"
held=""
site_skipped=""
others=""
while IFS='|' read -r node _ skip; do
  if [ -z "$node" ] || [ "$node" = "$canary" ]; then continue; fi
  if [ "$skip" = "true" ]; then site_skipped+=" $node"; else others+=" $node"; fi
done <<<"$nodes"

say "context $context, namespace $namespace, release $release (revision ${revision:-?}), chart $chart"
say "canary $canary; then${others:- no other nodes}${site_skipped:+; left out (already labelled $skip_label=true):$site_skipped}"
[ "$dry_run" -eq 0 ] || say "dry run: nothing in the cluster changes"

for node in $others; do
  run kubectl label node "$node" --overwrite "$skip_label=true" "$held_label=true"
  held+=" $node"
done

helm_flags=()
kubectl_flags=()
if [ "$dry_run" -eq 1 ]; then helm_flags=(--dry-run); kubectl_flags=(--dry-run=client); fi
if [ -f "$here/package-repo.yaml" ]; then
  say "applying package-repo.yaml"
  apply_package_repo "${kubectl_flags[@]}"
fi
if [ -f "$here/time-slicing.yaml" ]; then
  say "applying time-slicing.yaml"
  kubectl apply -n "$namespace" -f "$here/time-slicing.yaml" "${kubectl_flags[@]}"
fi
# The driver DaemonSets' revisions before: a node whose DaemonSet moved on since
# then and whose pod runs the new revision was upgraded by this run.
revisions_before="$(driver_revisions || true)"
say "helm upgrade $release"
if ! helm upgrade "$release" "$chart" -f "$here/values.yaml" --namespace "$namespace" --wait --timeout "$helm_timeout" \
  "${helm_flags[@]}"; then
  echo "upgrade.sh: helm upgrade failed" >&2
  echo "upgrade.sh: to roll back: $rollback; then: $release_held" >&2
  exit 1
fi
if [ "$dry_run" -eq 1 ]; then
  say "dry run complete: would watch $canary, then release and watch:${others:- none}"
  say "rollback would be: $rollback"
  exit 0
fi

# wait_for NODE...: until each is upgrade-done, its driver pods at their
# DaemonSet's newest revision and its validator running. An upgrade-done whose
# pod runs an older revision is left from the last upgrade: pending, however
# long. One whose DaemonSet kept its revision through helm upgrade (a kit with
# the same driver, or an operator that has not yet applied the new one) is
# believed once the node was seen moving, or after $settle seconds.
# Stops on upgrade-failed, or when nothing changed for $timeout seconds.
started=$SECONDS
wait_for() {
  local want=" $* " node state _ last="" last_pending="" now changed=$SECONDS pending revisions pods sync
  while :; do
    now="$(gpu_nodes)"
    revisions="$(driver_revisions || true)"
    pods="$(driver_pods || true)"
    pending=""
    while IFS='|' read -r node state _; do
      [[ $want == *" $node "* ]] || continue
      case "$state" in
        upgrade-failed) stop_failed "$node" ;;
        upgrade-done)
          sync="$(driver_sync "$node" "$revisions" "$pods" "$revisions_before")"
          case "$sync" in
            new) ;;
            same)
              if [ $((SECONDS - started)) -lt "$settle" ] && [[ " $seen " != *" $node "* ]]; then
                pending+=" $node(driver DaemonSet unchanged so far; believed after ${settle}s)"; continue
              fi ;;
            *) pending+=" $node($sync)"; continue ;;
          esac
          if [ "$(validator_phase "$node")" != "Running" ]; then pending+=" $node(validator)"; fi ;;
        *) pending+=" $node"; seen+=" $node" ;;
      esac
    done <<<"$now"
    for node in $want; do  # a node that left the GPU node list is not done
      [[ $'\n'$now == *$'\n'"$node|"* ]] || pending+=" $node(not a GPU node now)"
    done
    # A state or a driver pod's revision that changed is progress.
    if [ "$now" != "$last" ]; then
      changed=$SECONDS
      last="$now"
      while IFS='|' read -r node state _; do
        [[ $want == *" $node "* ]] && say "$node: ${state:-no upgrade state yet}"
      done <<<"$now"
    fi
    if [ "$pending" != "$last_pending" ]; then
      changed=$SECONDS
      last_pending="$pending"
      [[ $pending != *"("* ]] || say "waiting on:$pending"
    fi
    [ -n "$pending" ] || return 0
    if [ $((SECONDS - changed)) -ge "$timeout" ]; then
      echo "upgrade.sh: no progress for ${timeout}s; waiting on:$pending" >&2
      [ -z "$held" ] || echo "upgrade.sh: nodes still held back (not upgraded):$held" >&2
      echo "upgrade.sh: to roll back to the previous kit:" >&2
      echo "  $rollback" >&2
      echo "upgrade.sh: then release the held nodes: $release_held" >&2
      exit 1
    fi
    sleep "$poll"
  done
}
seen=""

say "watching the canary $canary"
wait_for "$canary"
say "canary $canary upgraded and validated"
for node in $held; do
  kubectl label node "$node" "$skip_label-" "$held_label-" >/dev/null
done
held=""
if [ -n "$others" ]; then
  say "released:$others; the operator now upgrades them one at a time"
  # shellcheck disable=SC2086 # one word per node
  wait_for $others
fi
say "done: every GPU node's driver is upgraded and validated${site_skipped:+ (left out:$site_skipped)}"
say "run $here/verify.sh to check the GPU nodes"
)SH";

}  // namespace

std::string upgrade_sh(const recipes::Lock& lock, const KitRecipe& /*recipe*/, const KitOptions& options) {
  return fill_script(k_upgrade, lock, options, {{"RELEASE", shell_quote(k_release_name)}, {"CHART_FILE", kit_chart_file(lock)}});
}

}  // namespace gb::kit::detail
