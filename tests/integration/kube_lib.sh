# Real helm and kubectl against the loopback API stand-in (tests/tools/kube_api.py),
# for the kit suites. Sourced; needs $work (a scratch folder the caller removes)
# and SRC (the source tree).
#
# The clients are the official builds scripts/install-deps.sh puts into
# $GB_CLIENTS_BIN (CTest sets it; default SRC/.cache/tools/bin), never whatever
# kubectl is on PATH (a /usr/bin/kubectl of another version may be there).
#
#   kube_clients_or_skip   exit 77 with a message unless helm v3.17.x and kubectl
#                          v1.31.x are there; sets HELM, KUBECTL, CLIENTS_BIN
#   kube_start NAME [ARGS] start a stand-in in $work/NAME (ARGS: kube_api.py start's,
#                          e.g. --seed FILE); exports KUBECONFIG and private caches
#                          (HOME untouched: KUBECACHEDIR, HELM_*_HOME); sets KUBE_DIR,
#                          KUBE_URL, KUBE_REQUESTS. Stopped by kube_stop_all (trap it).
#   kube_requests [PY_FILTER]  one JSON line per recorded request for which the Python
#                          expression over r (the request dict) is true, in order
#   kube_reset_requests    forget the requests recorded so far
#   kube_objects           every stored object, as a JSON list
# shellcheck disable=SC2034,SC2154 # sets variables for its callers; $work and $SRC are theirs
PY=${PY:-/usr/bin/python3}
KUBE_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
KUBE_DIRS=()

kube_clients_or_skip() {
  CLIENTS_BIN=${GB_CLIENTS_BIN:-$SRC/.cache/tools/bin}
  HELM=$CLIENTS_BIN/helm
  KUBECTL=$CLIENTS_BIN/kubectl
  local h k
  h=$("$HELM" version --template '{{.Version}}' 2>/dev/null || true)
  k=$("$KUBECTL" version --client -o json 2>/dev/null | sed -n 's/^ *"gitVersion": "\(.*\)",$/\1/p' || true)
  case "$h $k" in
    v3.17.*" "v1.31.*) ;;
    *)
      echo "SKIP: the real helm v3.17 and kubectl v1.31 are not in $CLIENTS_BIN (found '${h:-none}' and '${k:-none}'; scripts/install-deps.sh installs them)"
      exit 77 ;;
  esac
  [ -x "$PY" ] || { echo "SKIP: $PY is not installed"; exit 77; }
  "$PY" -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }
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
