// The kit's NCCL acceptance test (recipe acceptance.nccl): an MPIJob for the
// Kubeflow MPI Operator (kubeflow.org/v2beta1) that runs all_reduce_perf
// across the GPU nodes, and nccl-allreduce.sh, which applies it, waits, and
// turns the launcher's log into the JSON of docs/acceptance-results.md. The
// MPIJob is nccl-mpijob.yaml, filled with the recipe's numbers. Its lines
// that --nodes, --gpus-per-node and GPUBUNDLE_NAMESPACE change end in a
// marker comment; the script applies that file with those values put in
// place by awk (validated numbers and a DNS label, passed through the
// environment): no document is pasted together in a heredoc.

#include "common/strings.hpp"
#include "kit/kit.hpp"
#include "kit/kit_detail.hpp"
#include "recipes/network.hpp"

namespace gb::kit::detail {

namespace {

constexpr const char* k_job_name = "gpubundle-nccl-allreduce";

// One worker per node (required anti-affinity), one MPI slot per GPU, the
// launcher on any node without GPUs of its own. OpenMPI refuses to run as
// root unless told; nccl-tests images run as root. NCCL needs more /dev/shm
// than a container's default 64 MiB. The hostfile the MPI Operator mounts is
// named to mpirun: Open MPI 5 ignores the OMPI_MCA_orte_* variables the
// operator sets and would run every rank on the launcher. NCCL_DEBUG=INFO
// logs the network NCCL picks, which the script records. With a fabric the
// workers get the RDMA device, IPC_LOCK (RDMA pins memory) and the secondary
// network where the recipe names one.
constexpr const char* k_mpijob = R"Y(apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: @JOB@
  namespace: @NAMESPACE@  # nccl-allreduce.sh: namespace
  labels:
    app.kubernetes.io/managed-by: gpubundle
spec:
  slotsPerWorker: @GPUS@  # nccl-allreduce.sh: gpus
  runPolicy:
    cleanPodPolicy: Running
    backoffLimit: 0
  mpiImplementation: OpenMPI
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      restartPolicy: Never
      template:
        spec:@PULL_SECRET@
          containers:
          - name: launcher
            image: @IMAGE@
            env:
            - name: OMPI_ALLOW_RUN_AS_ROOT
              value: "1"
            - name: OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
              value: "1"
            command: ["mpirun"]
            args:
            - --hostfile
            - /etc/mpi/hostfile
            - -np
            - "@RANKS@"  # nccl-allreduce.sh: ranks
            - --bind-to
            - none
            - -x
            - NCCL_DEBUG=INFO
            - all_reduce_perf
            - -b
            - "@MIN_BYTES@"
            - -e
            - "@MAX_BYTES@"
            - -f
            - "2"
            - -g
            - "1"
            resources:
              requests:
                cpu: 500m
                memory: 512Mi
    Worker:
      replicas: @NODES@  # nccl-allreduce.sh: nodes
      template:
        metadata:
          labels:
            app.kubernetes.io/managed-by: gpubundle@ANNOTATIONS@
        spec:@PULL_SECRET@
          nodeSelector:
            nvidia.com/gpu.present: "true"
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    training.kubeflow.org/job-name: @JOB@
                    training.kubeflow.org/job-role: worker
          containers:
          - name: worker
            image: @IMAGE@
            command: ["/usr/sbin/sshd"]
            args: ["-De"]@SECURITY@
            resources:@REQUESTS@
              limits:
                nvidia.com/gpu: @GPUS@  # nccl-allreduce.sh: gpus@LIMITS@
            volumeMounts:
            - name: dshm
              mountPath: /dev/shm
          volumes:
          - name: dshm
            emptyDir:
              medium: Memory
)Y";

constexpr const char* k_nccl_sh = R"SH(#!/usr/bin/env bash
# nccl-allreduce.sh: the NCCL all-reduce acceptance test across GPU nodes.
#
# Usage: ./nccl-allreduce.sh [--nodes N] [--gpus-per-node G] [--json FILE] [--dry-run]
#        ./nccl-allreduce.sh --parse LOG [--json FILE]
#        ./nccl-allreduce.sh --install-mpi-operator MANIFEST [--dry-run]
#   --nodes N, --gpus-per-node G   the job's size (recipe: @NODES@ nodes x @GPUS@ GPUs)
#   --json FILE    the results (docs/acceptance-results.md); default nccl-allreduce-<UTC time>.json,
#                  with the launcher's log next to it as FILE.log
#   --dry-run      check the prerequisites and the MPIJob with kubectl --dry-run=client (the MPI
#                  Operator's manifest: --dry-run=server); changes nothing
#   --parse LOG    only turn a saved all_reduce_perf log into the JSON (no cluster)
#   --install-mpi-operator MANIFEST   apply the Kubeflow MPI Operator's release manifest
#                  (deploy/v2beta1/mpi-operator.yaml) with its image moved to the site registry
#   -h, --help     print this help
#
# Exit: 0 passed, 1 failed (job failed, #wrong values, out-of-bounds values, avg bus bandwidth
# below the recipe's minBusBw (@MIN_BUS_BW@ GB/s; 0: no bound),@FABRIC_WORDS@ or a log that is no
# all_reduce_perf table), 2 bad usage.
#
# Environment:
#   GPUBUNDLE_NAMESPACE  the namespace of the MPIJob (default @NAMESPACE@)
#   GPUBUNDLE_TIMEOUT    seconds for the job (default 1800)
@HEADER@
set -euo pipefail
@USAGE@

job=@JOB@
namespace="${GPUBUNDLE_NAMESPACE:-@NAMESPACE@}"
timeout="${GPUBUNDLE_TIMEOUT:-1800}"
image=@IMAGE@
operator_image=@OPERATOR_IMAGE@
min_bus_bw=@MIN_BUS_BW@
# 1: the lock has a network section, so NCCL must reach the other nodes over the fabric.
fabric=@FABRIC@
nodes=@NODES@
gpus=@GPUS@

usage="usage: ./nccl-allreduce.sh [--nodes N] [--gpus-per-node G] [--json FILE] [--dry-run] | --parse LOG [--json FILE] | --install-mpi-operator MANIFEST [--dry-run]"
say() { echo "nccl-allreduce.sh: $*"; }
fail() { echo "nccl-allreduce.sh: $*" >&2; exit 1; }
bad_usage() { echo "nccl-allreduce.sh: $* ($usage; see --help)" >&2; exit 2; }

dry_run=0
no_crd=""
job_failed=0
json=""
parse=""
operator_manifest=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --nodes|--gpus-per-node|--json|--parse|--install-mpi-operator)
      [ "$#" -ge 2 ] || bad_usage "$1 needs a value"
      case "$1" in
        --nodes) nodes="$2" ;;
        --gpus-per-node) gpus="$2" ;;
        --json) json="$2" ;;
        --parse) parse="$2" ;;
        --install-mpi-operator) operator_manifest="$2" ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) bad_usage "unknown argument: $1" ;;
  esac
  shift
done
# Values are shown with %q: one line, whatever they hold.
[[ "$nodes" =~ ^[1-9][0-9]{0,3}$ ]] || bad_usage "--nodes $(printf '%q' "$nodes") is not a number of nodes"
[[ "$gpus" =~ ^[1-9][0-9]?$ ]] || bad_usage "--gpus-per-node $(printf '%q' "$gpus") is not a number of GPUs"
@NAMESPACE_CHECK@
ranks=$((nodes * gpus))
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# parse_log LOG OUT NODES_JSON STARTED: all_reduce_perf's table as the JSON of
# docs/acceptance-results.md in OUT. Exit 0 passed, 1 failed (OUT written),
# 3 not a finished all_reduce_perf table (OUT not written). One line on stdout.
# With job_failed=1 the results never pass, whatever the log says. The
# transport is the network NCCL's channels went through ("via NET/IB/0"), else
# the one each communicator chose ("Using network IB"), from NCCL_DEBUG=INFO;
# with fabric=1 a run over sockets, or one whose log does not say, fails.
parse_log() {
  awk -v out="$2" -v nodes_json="$3" -v started="$4" -v image="$image" -v gpus="$gpus" -v ranks="$ranks" \
      -v min_bw="$min_bus_bw" -v fabric="$fabric" -v job_failed="$job_failed" -v file="$1" '
    function bad(why) { print file ":" FNR ": " why; broken = 1; exit 3 }
    # Numbers go into the JSON as the log spells them (3e+06 too), never reformatted.
    function num(s, what) { if (s !~ /^-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$/) bad(what " " s " is not a number"); return s }
    # all_reduce_perf prints #wrong with %g: 1000000 is "1e+06", 1048576 "1.04858e+06".
    function wrong(s) {
      if (s == "N/A") return "null"
      if (s !~ /^[0-9]+$/ && s !~ /^[1-9](\.[0-9]+)?e\+[0-9]+$/) bad("#wrong " s " is not a count")
      if (s + 0 > 0) wrongs++
      return s
    }
    # A network name NCCL logged, kept once per kind in the order seen.
    function net(s, kind) {
      sub(/[ \t\r]+$/, "", s)
      if (s !~ /^[A-Za-z0-9_.:()+ -]+$/ || length(s) > 64) bad("NCCL network " s " is not a plain name")
      if ((kind, s) in net_seen) return
      net_seen[kind, s] = 1
      nets[kind] = nets[kind] (nets[kind] == "" ? "" : ", ") s
    }
    # Every string from the log goes into the JSON through jstr: a type, op or
    # host name that is not a plain word is refused, and escaping is kept anyway.
    function word(s, what) { if (s !~ /^[A-Za-z0-9_.:-]+$/ || length(s) > 253) bad(what " " s " is not a plain name"); return s }
    function jstr(s,   out, i, c) {
      out = ""
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\\" || c == "\"") out = out "\\" c
        else if (c < " ") out = out sprintf("\\u%04x", index("\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020\021\022\023\024\025\026\027\030\031\032\033\034\035\036\037", c))
        else out = out c
      }
      return "\"" out "\""
    }
    function side(t, a, b, w) { return "{\"timeUs\": " num(t, "time") ", \"algBw\": " num(a, "algbw") ", \"busBw\": " num(b, "busbw") ", \"wrong\": " wrong(w) "}" }
    /^# nccl-tests version / && match($0, /nccl-library=[0-9]+/) {
      code = substr($0, RSTART + 13, RLENGTH - 13) + 0
      if (version == "") version = int(code / 10000) "." int(code % 10000 / 100) "." code % 100
    }
    /NCCL version [0-9]+\.[0-9]+\.[0-9]+/ { match($0, /NCCL version [0-9]+\.[0-9]+\.[0-9]+/); version = substr($0, RSTART + 13, RLENGTH - 13) }
    /^#  *Rank  *[0-9]+ / {
      seen_ranks++
      for (i = 1; i < NF; i++) if ($i == "on") { h = word($(i + 1), "host"); if (!(h in host_seen)) { host_seen[h] = 1; hosts[++nhosts] = h }; break }
    }
    /NCCL failure|Test failure|Test NCCL failure|CUDA failure/ { bad("the test failed: " $0) }
    # "host:pid:tid [dev] NCCL INFO Using network IB"; "NET/IB : Using [0]mlx5_0:1/IB" is no
    # proof (NCCL logs it before NCCL_NET=Socket skips IB).
    / NCCL INFO Using network / { s = $0; sub(/.* NCCL INFO Using network /, "", s); net(s, "chosen"); next }
    / NCCL INFO Channel .*\] via NET\// { s = $0; sub(/.*\] via NET\//, "", s); sub(/\/[0-9]+([^A-Za-z].*)?$/, "", s); net(s, "channels"); next }
    /^#  *size  *count  *type  *redop  *root / { table = 1; next }
    /^# Out of bounds values *:/ { oob = num($7, "out of bounds count"); have_oob = 1; next }
    /^# Avg bus bandwidth *:/ { avg = num($6, "avg bus bandwidth"); have_avg = 1; next }
    table && !have_avg && $1 ~ /^[0-9]+$/ {
      if (NF != 13) bad("a table row with " NF " columns, not 13 (truncated?)")
      if (type == "") { type = word($3, "type"); redop = word($4, "redop") }
      rows[++n] = "{\"bytes\": " num($1, "size") ", \"count\": " num($2, "count") ", \"type\": " jstr(word($3, "type")) ", \"redop\": " jstr(word($4, "redop")) ", \"root\": " num($5, "root") \
                  ",\n     \"outOfPlace\": " side($6, $7, $8, $9) ",\n     \"inPlace\": " side($10, $11, $12, $13) "}"
    }
    END {
      if (broken) exit 3
      if (!table) { print file ": no all_reduce_perf table (no \"# size count type redop root\" header)"; exit 3 }
      if (n == 0) { print file ": the all_reduce_perf table has no rows"; exit 3 }
      if (!have_avg) { print file ": no \"# Avg bus bandwidth\" line: the run did not finish (truncated log?)"; exit 3 }
      if (!have_oob) { print file ": no \"# Out of bounds values\" line: the run did not finish (truncated log?)"; exit 3 }
      # The log knows who ran: its "# Rank N ... on HOST" lines.
      if (seen_ranks > 0) ranks = seen_ranks
      if (nhosts > 0) gpus = int(seen_ranks / nhosts)
      if (nodes_json == "") {
        nodes_json = "["
        for (i = 1; i <= nhosts; i++) nodes_json = nodes_json (i > 1 ? ", " : "") jstr(hosts[i])
        nodes_json = nodes_json "]"
      }
      transport = nets["channels"] != "" ? nets["channels"] : nets["chosen"]
      over_sockets = index(", " transport ", ", ", Socket, ") > 0
      fabric_ok = !fabric || (transport != "" && !over_sockets)
      passed = (wrongs == 0 && oob + 0 == 0 && avg + 0 >= min_bw + 0 && fabric_ok && !job_failed)
      printf "{\n  \"schemaVersion\": 1,\n  \"kind\": \"gpubundle.nccl\",\n  \"test\": \"all_reduce_perf\",\n" > out
      printf "  \"startedAt\": %s,\n  \"image\": %s,\n  \"nodes\": %s,\n", jstr(started), jstr(image), nodes_json > out
      printf "  \"gpusPerNode\": %d,\n  \"ranks\": %d,\n  \"ncclVersion\": %s,\n", gpus, ranks, jstr(version) > out
      printf "  \"dataType\": %s, \"redOp\": %s,\n  \"rows\": [\n", jstr(type), jstr(redop) > out
      for (i = 1; i <= n; i++) printf "    %s%s\n", rows[i], (i < n ? "," : "") > out
      printf "  ],\n  \"avgBusBw\": %s,\n  \"outOfBounds\": %d,\n  \"minBusBw\": %s,\n", avg, oob, min_bw + 0 > out
      printf "  \"transport\": %s,\n  \"fabricRequired\": %s,\n", jstr(transport), (fabric ? "true" : "false") > out
      printf "  \"passed\": %s\n}\n", (passed ? "true" : "false") > out
      close(out)
      why = ""
      if (job_failed) why = why ", the MPIJob failed"
      if (wrongs > 0) why = why ", " wrongs " rows with #wrong values"
      if (oob + 0 > 0) why = why ", " oob " out-of-bounds values"
      if (avg + 0 < min_bw + 0) why = why ", avg bus bandwidth " avg " GB/s below " min_bw " GB/s"
      if (fabric && transport == "") why = why ", the log does not say which network NCCL used (no NCCL INFO \"Using network\" or \"via NET/\" line), so the fabric is untested"
      else if (fabric && over_sockets) why = why ", NCCL used sockets (transport " transport "), not the fabric"
      said = transport == "" ? "not logged" : transport
      if (passed) { print "PASS: " n " sizes, avg bus bandwidth " avg " GB/s, " ranks " ranks, transport " said; exit 0 }
      print "FAIL: " substr(why, 3); exit 1
    }' "$1"
}

# Writes the results of LOG into $json through a temporary file; exits as the test came out.
report() {
  local log="$1" nodes_json="$2" started="$3" tmp line rc=0
  tmp="$(mktemp "${json}.XXXXXX")"
  line="$(parse_log "$log" "$tmp" "$nodes_json" "$started")" || rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then mv -f "$tmp" "$json"; else rm -f "$tmp"; fi
  case "$rc" in
    0) say "$line; results in $json" ;;
    1) echo "nccl-allreduce.sh: $line; results in $json" >&2; exit 1 ;;
    *) echo "nccl-allreduce.sh: $line" >&2; exit 1 ;;
  esac
}

if [ -n "$parse" ]; then
  [ -f "$parse" ] || bad_usage "--parse $parse: no such file"
  [ -n "$json" ] || json="${parse%.log}.json"
  report "$parse" "" "$(date -u -r "$parse" +%Y-%m-%dT%H:%M:%SZ)"
  exit 0
fi

@API_CHECK@

@CLUSTER_CHECK@

missing=()
check_kubectl
if [ -n "$operator_manifest" ]; then
  [ -f "$operator_manifest" ] || missing+=("MPI Operator manifest: $operator_manifest not found")
  [ -n "$operator_image" ] || missing+=("MPI Operator image: the recipe has no acceptance.nccl.mpiOperator.install, so the bundle does not carry it")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  for m in "${missing[@]}"; do echo "nccl-allreduce.sh: missing prerequisite: $m" >&2; done
  exit 1
fi
kubectl_flags=()
if [ "$dry_run" -eq 1 ]; then kubectl_flags=(--dry-run=client); say "dry run: nothing in the cluster changes"; fi

if [ -n "$operator_manifest" ]; then
  grep -q 'image: *mpioperator/mpi-operator:' "$operator_manifest" ||
    fail "$operator_manifest has no 'image: mpioperator/mpi-operator:' line; is it deploy/v2beta1/mpi-operator.yaml of a release?"
  say "applying the MPI Operator from $operator_manifest with image $operator_image"
  # Server-side apply: the CRD is too large for client-side apply's annotation.
  # kubectl refuses --server-side with --dry-run=client, so a dry run is the
  # server's; but the server cannot dry-run an object in a namespace that does
  # not exist yet (the manifest makes its own): then kubectl checks the
  # manifest alone, with a client-side dry run, and says so.
  apply=(--server-side)
  if [ "$dry_run" -eq 1 ]; then
    apply+=(--dry-run=server)
    while read -r ns; do
      if ! kubectl get namespace "$ns" >/dev/null 2>&1; then
        say "namespace $ns does not exist yet, so the API server cannot dry-run the objects in it; kubectl checks the manifest itself (client-side dry run)"
        apply=(--dry-run=client)
        break
      fi
    done < <(sed -n 's/^  namespace: *\([a-z0-9][-a-z0-9]*\) *$/\1/p' "$operator_manifest" | sort -u)
  fi
  sed "s#image: *mpioperator/mpi-operator:.*#image: $operator_image#" "$operator_manifest" |
    kubectl apply -f - "${apply[@]}"
  exit 0
fi

if ! kubectl get crd mpijobs.kubeflow.org >/dev/null 2>&1; then
  msg="the MPIJob CRD (mpijobs.kubeflow.org) is not installed: install the Kubeflow MPI Operator first (./nccl-allreduce.sh --install-mpi-operator MANIFEST)"
  if [ "$dry_run" -eq 1 ]; then say "warning: $msg"; no_crd=1; else fail "$msg"; fi
fi

# The kit's MPIJob with this run's sizes and namespace on its marked lines.
mpijob() {
  [ -f "$here/nccl-mpijob.yaml" ] || fail "$here/nccl-mpijob.yaml is missing: the kit is incomplete"
  nccl_namespace="$namespace" nccl_nodes="$nodes" nccl_gpus="$gpus" nccl_ranks="$ranks" awk '
    match($0, /  # nccl-allreduce\.sh: [a-z]+$/) {
      key = substr($0, RSTART + 23)
      body = substr($0, 1, RSTART - 1)
      sub(/[^ ]+$/, "", body)
      value = ENVIRON["nccl_" key]
      if (value == "") { print FILENAME ":" FNR ": unknown marker " key > "/dev/stderr"; exit 3 }
      if (key == "ranks") value = "\"" value "\""
      $0 = body value "  # nccl-allreduce.sh: " key
      seen[key]++
    }
    { print }
    END { if (seen["namespace"] != 1 || seen["nodes"] != 1 || seen["ranks"] != 1 || seen["gpus"] != 2) exit 3 }
  ' "$here/nccl-mpijob.yaml" || fail "$here/nccl-mpijob.yaml: its marked lines (\"# nccl-allreduce.sh: ...\") are not the kit's; write the kit again"
}

if [ "$dry_run" -eq 1 ]; then
  say "context $context, namespace $namespace: MPIJob $job, $nodes nodes x $gpus GPUs ($ranks ranks), image $image"
  mpijob
  if [ -n "$no_crd" ]; then
    # kubectl learns the kind from the CRD: without it, "no matches for kind".
    say "the MPIJob above is not passed to kubectl: it cannot check an MPIJob before its CRD is installed"
  else
    mpijob | kubectl apply -f - "${kubectl_flags[@]}"
  fi
  exit 0
fi

[ -n "$json" ] || json="nccl-allreduce-$(date -u +%Y%m%dT%H%M%SZ).json"
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "context $context, namespace $namespace: $nodes nodes x $gpus GPUs ($ranks ranks), image $image"
kubectl -n "$namespace" delete mpijob "$job" --ignore-not-found --wait=true >/dev/null
mpijob | kubectl apply -f -

state=""
deadline=$((SECONDS + timeout))
while :; do
  state="$(kubectl -n "$namespace" get mpijob "$job" -o jsonpath='{.status.conditions[?(@.status=="True")].type}' 2>/dev/null || true)"
  case " $state " in
    *" Succeeded "*|*" Failed "*) break ;;
  esac
  [ "$SECONDS" -lt "$deadline" ] || fail "MPIJob $job did not finish in ${timeout}s (conditions: ${state:-none}); see kubectl -n $namespace describe mpijob $job"
  sleep 10
done

log="${json%.json}.log"
kubectl -n "$namespace" logs "job/$job-launcher" >"$log" 2>&1 || fail "cannot read the launcher's log (kubectl -n $namespace logs job/$job-launcher)"
node_names="$(kubectl -n "$namespace" get pods -l "training.kubeflow.org/job-name=$job,training.kubeflow.org/job-role=worker" \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)"
nodes_json="[$(printf '%s\n' "$node_names" | sed '/^$/d; s/.*/"&"/' | paste -sd, - | sed 's/,/, /g')]"
case " $state " in
  *" Failed "*) job_failed=1; (report "$log" "$nodes_json" "$started") || true; fail "MPIJob $job failed (kubectl -n $namespace describe mpijob $job)" ;;
esac
report "$log" "$nodes_json" "$started"
)SH";

std::string site_image(const std::vector<Placement>& placements, const char* component) {
  for (const auto& p : placements)
    for (const auto& c : p.image->components)
      if (c == component) return p.destination.pinned();
  return "";
}

}  // namespace

Result<std::vector<KitFile>> acceptance_files(const recipes::Lock& lock, const std::vector<Placement>& placements,
                                              const KitRecipe& recipe, const KitOptions& options) {
  const auto& n = *recipe.nccl;
  std::string image = site_image(placements, recipes::k_nccl_tests_component);
  if (image.empty())
    return input_error("lock recipe.spec has acceptance.nccl but no image of component " + std::string(recipes::k_nccl_tests_component) +
                       "; resolve the recipe again");
  std::string operator_image = site_image(placements, recipes::k_mpi_operator_component);
  if (n.mpi_operator_install && operator_image.empty())
    return input_error("lock recipe.spec has acceptance.nccl.mpiOperator.install but no image of component " +
                       std::string(recipes::k_mpi_operator_component) + "; resolve the recipe again");
  for (const auto& word : {n.min_bytes, n.max_bytes})
    if (word.empty() || word.find_first_not_of("0123456789KMG") != std::string::npos)
      return input_error("lock recipe.spec acceptance.nccl: " + quote(word) + " is not a size all_reduce_perf reads");
  // parse_lock holds these too; a KitRecipe made by hand is held here.
  std::string rdma = lock.network ? recipes::rdma_resource(lock.network->operands) : "";
  if (lock.network && rdma.empty())
    return input_error("lock recipe.spec acceptance.nccl: the lock has a network section without an RDMA device plugin operand "
                       "(rdmaSharedDevicePlugin or sriovDevicePlugin), so the NCCL run could not use the fabric");
  if (!n.network.empty() && (!lock.network || !recipes::is_network_attachment(n.network)))
    return input_error("lock recipe.spec acceptance.nccl.network " + quote(n.network) +
                       (lock.network ? " is not a NetworkAttachmentDefinition name" : ": the lock has no network section"));
  // The worker's fabric lines: the RDMA resource in requests and limits,
  // IPC_LOCK, and the Multus annotation of the recipe's secondary network.
  // Both are checked above (rdma_resource, is_network_attachment) and written as YAML strings or keys they can be.
  const bool fabric = !rdma.empty();
  std::string yaml = yaml_header(lock, options,
                                 "NCCL all-reduce acceptance test: an MPIJob for the Kubeflow MPI Operator (kubeflow.org/v2beta1). "
                                 "acceptance/nccl-allreduce.sh applies it and records the results.") +
                     fill_template(k_mpijob, {{"JOB", k_job_name},
                                              {"NAMESPACE", options.namespace_name},
                                              {"IMAGE", image},
                                              {"PULL_SECRET", recipe.pull_secret.empty() ? "" : "\n          imagePullSecrets:\n          - name: " + recipe.pull_secret},
                                              {"MIN_BYTES", n.min_bytes},
                                              {"MAX_BYTES", n.max_bytes},
                                              {"ANNOTATIONS", fabric && !n.network.empty() ? "\n          annotations:\n            k8s.v1.cni.cncf.io/networks: \"" + n.network + "\"" : ""},
                                              {"SECURITY", fabric ? "\n            securityContext:\n              capabilities:\n                add: [\"IPC_LOCK\"]" : ""},
                                              {"REQUESTS", fabric ? "\n              requests:\n                " + rdma + ": 1" : ""},
                                              {"LIMITS", fabric ? "\n                " + rdma + ": 1" : ""},
                                              {"NODES", std::to_string(n.nodes)},
                                              {"GPUS", std::to_string(n.gpus_per_node)},
                                              {"RANKS", std::to_string(n.nodes * n.gpus_per_node)}});
  std::string script = fill_script(
      k_nccl_sh, lock, options,
      {{"JOB", k_job_name},
       {"IMAGE", shell_quote(image)},
       {"OPERATOR_IMAGE", shell_quote(operator_image)},
       {"MIN_BUS_BW", decimal(n.min_bus_bw)},
       {"FABRIC", fabric ? "1" : "0"},
       {"FABRIC_WORDS", !fabric ? "" : "\n# NCCL over sockets or not saying its network (a fabric run: the lock has a network section,\n# the workers ask for " + rdma + "),"},
       {"NODES", std::to_string(n.nodes)},
       {"GPUS", std::to_string(n.gpus_per_node)}});
  return std::vector<KitFile>{{"acceptance/nccl-mpijob.yaml", yaml, 0644}, {"acceptance/nccl-allreduce.sh", script, 0755}};
}

}  // namespace gb::kit::detail
