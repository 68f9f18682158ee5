# Real helm and kubectl against the loopback API stand-in (tests/tools/kube_api.py),
# for the kit suites. Sourced; needs SRC (the source tree).
#
#   kube_suite [RELEASE]   a suite's start: $work (a scratch folder, removed on exit
#                          with every stand-in), fail MESSAGE, and the clients or exit 77;
#                          with a RELEASE, the stand-in chart of it packed in $work ($chart)
#
# The clients are the official builds scripts/install-deps.sh puts into
# $GB_CLIENTS_BIN (CTest sets it; default SRC/.cache/tools/bin), never whatever
# kubectl is on PATH (a /usr/bin/kubectl of another version may be there).
#
#   kube_clients_or_skip   exit 77 with a message unless helm v3.17.x and kubectl
#                          v1.31.x are there; sets HELM, KUBECTL, CLIENTS_BIN
#   kube_clients_present   the same test, returning 1 with the message in KUBE_SKIP
#                          (for a suite whose other parts run without the clients)
#   kube_start NAME [ARGS] start a stand-in in $work/NAME (ARGS: kube_api.py start's,
#                          e.g. --seed FILE); exports KUBECONFIG and private caches
#                          (HOME untouched: KUBECACHEDIR, HELM_*_HOME); sets KUBE_DIR,
#                          KUBE_URL, KUBE_REQUESTS. Stopped by kube_stop_all (trap it).
#   kube_requests [PY_FILTER]  one JSON line per recorded request for which the Python
#                          expression over r (the request dict) is true, in order
#   kube_reset_requests    forget the requests recorded so far
#   kube_objects           every stored object, as a JSON list
#   kube_play_status KIND NAMESPACE NAME STATUS_JSON [SECONDS]
#                          play the controller or kubelet (in the background: &): once
#                          that object is stored, give it this status (NAMESPACE
#                          '' for a cluster-scoped kind); exit 1 when it never comes
#   kube_play_upgrade_controller LOG [ARGS]
#                          play the GPU Operator's driver upgrade (tests/tools/upgrade_controller.py,
#                          ARGS its own, --url and --log given) in the background from now
#                          until kube_stop_upgrade_controller or kube_stop_all; returns once
#                          it has written its DaemonSets and pods (LOG says "ready")
#   kube_kubeconfig_no_context FILE  the stand-in's kubeconfig without current-context
#   kube_kubeconfig_dead FILE        the same context at a loopback port nothing listens on
#                          (context kube-api-standin; sets DEAD_URL)
# shellcheck disable=SC2034,SC2154 # sets variables for its callers; $work and $SRC are theirs
PY=${PY:-/usr/bin/python3}
KUBE_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
KUBE_DIRS=()
KUBE_PLAYER=""

kube_suite() {
  work=$(mktemp -d)
  trap 'kube_stop_all; rm -rf "$work"' EXIT
  kube_clients_or_skip
  if [ -n "${1:-}" ]; then
    "$PY" "$KUBE_TOOLS/helmrepo.py" pack --release "$1" --out "$work" >/dev/null
    chart=$work/gpu-operator-$1.tgz
  fi
}
fail() { echo "FAIL: $*" >&2; exit 1; }

kube_clients_present() {
  CLIENTS_BIN=${GB_CLIENTS_BIN:-$SRC/.cache/tools/bin}
  HELM=$CLIENTS_BIN/helm
  KUBECTL=$CLIENTS_BIN/kubectl
  KUBE_SKIP=""
  local h k
  h=$("$HELM" version --template '{{.Version}}' 2>/dev/null || true)
  k=$("$KUBECTL" version --client -o json 2>/dev/null | sed -n 's/^ *"gitVersion": "\(.*\)",$/\1/p' || true)
  case "$h $k" in
    v3.17.*" "v1.31.*) ;;
    *) KUBE_SKIP="the real helm v3.17 and kubectl v1.31 are not in $CLIENTS_BIN (found '${h:-none}' and '${k:-none}'; scripts/install-deps.sh installs them)" ;;
  esac
  [ -n "$KUBE_SKIP" ] || [ -x "$PY" ] || KUBE_SKIP="$PY is not installed"
  [ -n "$KUBE_SKIP" ] || "$PY" -c 'import yaml' 2>/dev/null || KUBE_SKIP="python3-yaml is not installed"
  [ -z "$KUBE_SKIP" ]
}

kube_clients_or_skip() {
  kube_clients_present || { echo "SKIP: $KUBE_SKIP"; exit 77; }
}

kube_start() {
  local name=$1
  shift
  KUBE_DIR=$work/$name
  KUBE_DIRS+=("$KUBE_DIR")
  "$PY" "$KUBE_TOOLS/kube_api.py" start --dir "$KUBE_DIR" "$@" >"$KUBE_DIR.json" || { echo "FAIL: kube_api.py start" >&2; exit 1; }
  KUBE_URL=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$KUBE_DIR.json")
  KUBE_REQUESTS=$KUBE_DIR/requests.jsonl
  export KUBECONFIG=$KUBE_DIR/kubeconfig
  export KUBECACHEDIR=$work/kube-cache HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config \
    HELM_DATA_HOME=$work/helm/data
}

kube_stop_all() {
  local d
  kube_stop_upgrade_controller
  for d in "${KUBE_DIRS[@]}"; do "$PY" "$KUBE_TOOLS/kube_api.py" stop --dir "$d" >/dev/null 2>&1 || true; done
}

kube_requests() {
  "$PY" - "$KUBE_REQUESTS" "${1:-True}" <<'PYEOF'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if eval(sys.argv[2], {"r": r}):
        print(json.dumps(r, sort_keys=True))
PYEOF
}

kube_reset_requests() { : >"$KUBE_REQUESTS"; }

kube_objects() { "$PY" "$KUBE_TOOLS/kube_api.py" objects --dir "$KUBE_DIR"; }

kube_play_status() {
  "$PY" - "$KUBE_TOOLS" "$KUBE_DIR" "$@" <<'PYEOF'
import json, sys, time
sys.path.insert(0, sys.argv[1])
import kube_api
d, kind, ns, name, status = sys.argv[2:7]
deadline = time.time() + float(sys.argv[7] if len(sys.argv) > 7 else 60)
while time.time() < deadline:
    for o in json.loads(kube_api.admin_call(d, "GET", "/_standin/objects")):
        if o["kind"] == kind and o["metadata"]["name"] == name and o["metadata"].get("namespace", "") == ns:
            o["status"] = json.loads(status)
            kube_api.admin_call(d, "POST", "/_standin/seed", json.dumps([o]).encode())
            sys.exit(0)
    time.sleep(0.1)
sys.exit(f"kube_play_status: no {kind} {ns}/{name} appeared")
PYEOF
}

kube_play_upgrade_controller() {
  local log=$1
  shift
  kube_stop_upgrade_controller
  : >"$log"
  "$PY" "$KUBE_TOOLS/upgrade_controller.py" --url "$KUBE_URL" --log "$log" "$@" &
  KUBE_PLAYER=$!
  for _ in $(seq 100); do
    ! grep -qx ready "$log" 2>/dev/null || return 0
    kill -0 "$KUBE_PLAYER" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: upgrade_controller.py did not start: $(cat "$log" 2>/dev/null)" >&2
  exit 1
}

kube_stop_upgrade_controller() {
  [ -z "$KUBE_PLAYER" ] || { kill "$KUBE_PLAYER" 2>/dev/null || true; wait "$KUBE_PLAYER" 2>/dev/null || true; }
  KUBE_PLAYER=""
}

kube_kubeconfig_no_context() { sed '/"current-context"/d' "$KUBE_DIR/kubeconfig" >"$1"; }

kube_kubeconfig_dead() {
  local port
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  DEAD_URL=http://127.0.0.1:$port
  sed "s#\"server\": \"[^\"]*\"#\"server\": \"$DEAD_URL\"#" "$KUBE_DIR/kubeconfig" >"$1"
}

# kube_schema_check WHAT PY_FILTER [k8s_schema.py ARGS...]: the body of the first
# write request matching the filter (what a kit script applied, as kubectl sent
# it) against its real schema (tests/tools/k8s_schema.py); a note instead when
# python3-kubernetes or python3-jsonschema is missing.
kube_schema_check() {
  local what=$1 filter=$2 body=$work/schema-body.json
  shift 2
  if ! "$PY" -c 'import kubernetes, jsonschema' 2>/dev/null; then
    echo "note: python3-kubernetes or python3-jsonschema missing: $what not checked against its schema"
    return 0
  fi
  kube_requests "r[\"method\"] in (\"POST\", \"PATCH\", \"PUT\") and ($filter)" | head -n 1 |
    "$PY" -c 'import json, sys; line = sys.stdin.readline(); json.dump(json.loads(line)["body"], sys.stdout) if line else sys.exit(1)' >"$body" ||
    { echo "FAIL: no request sent $what" >&2; exit 1; }
  "$PY" "$KUBE_TOOLS/k8s_schema.py" "$@" "$body" >"$work/schema.out" 2>&1 ||
    { cat "$work/schema.out" >&2; echo "FAIL: $what does not validate against its schema" >&2; exit 1; }
  echo "ok: $what validates against its schema"
}
