# Shared helpers for the integration suites (sourced): registries, locks, a bundle store.
# Usage: source mirror_lib.sh; needs $GB (gpubundle binary).
set -euo pipefail
PY=/usr/bin/python3
TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
W=$(mktemp -d /tmp/gb-mirror-test.XXXXXX)
export GPUBUNDLE_LOCK_WAIT_S=2
cleanup() {
  "$PY" "$TOOLS/faultproxy.py" stop --dir "$W/reg" >/dev/null 2>&1 || true
  "$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

for tool in docker-registry skopeo; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

# start_registry NAME -> prints host:port
start_registry() {
  "$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name "$1" > "$W/$1.json"
  jget "$W/$1.json" 'd["host"]'
}

# registry_config FILE HOST URL: HOST reached at URL (plain http), no fallback.
registry_config() {
  printf 'hosts:\n  "%s":\n    mirrors: ["%s"]\n    fallback: false\n' "$2" "$3" > "$1"
}

# make_lock OUT SEED_JSON PLATFORMS [EXTRA_REF...]: a lock listing the seeded images.
make_lock() {
  "$PY" - "$@" <<'PYEOF'
import json, sys
out, seed, plats, extra = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4:]
refs = [i["ref"] for i in json.load(open(seed))["images"]] + extra
lock = {"schemaVersion": 1, "generator": "test", "recipe": {"name": "t", "file": "t.yaml", "sha256": "", "spec": {}},
        "operator": {"version": "v24.9.2"},
        "chart": {"name": "gpu-operator", "version": "v24.9.2", "appVersion": "v24.9.2", "source": "", "sha256": ""},
        "target": {"gpus": [], "os": "ubuntu22.04", "osTag": "ubuntu22.04", "kernels": [], "platforms": plats, "workloads": []},
        "driver": {"mode": "conventional", "version": "", "branch": "", "kernelModuleType": "auto", "usePrecompiled": False},
        "destination": None,
        "images": [{"components": ["c%d" % n], "source": r, "platforms": plats, "destination": "", "digest": "", "origin": "upstream"}
                   for n, r in enumerate(sorted(refs))],
        "warnings": []}
json.dump(lock, open(out, "w"), indent=2)
PYEOF
}

# small_bundle_store: the bundle suites' starting point. The small seeded set
# (seed.py --set small) in an upstream registry "up" (host in $up), its lock
# $W/site.lock.json with the stand-in chart v26.7.0 (tests/tools/chart.py),
# mirrored into $store, and a release key pair $W/release.{key,pub}.
# `create ARGS...` then runs bundle create of that lock.
small_bundle_store() {
  up=$(start_registry up)
  "$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --set small > "$W/seed.json"
  registry_config "$W/reg.yaml" "$up" "http://$up"
  make_lock "$W/site.lock.json" "$W/seed.json" linux/amd64
  "$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null
  "$PY" - "$W/site.lock.json" "$W/charts/gpu-operator-v26.7.0.tgz" <<'PYEOF'
import json, sys
lock = json.load(open(sys.argv[1])); lock["chart"]["source"] = sys.argv[2]
lock["operator"]["version"] = lock["chart"]["version"] = lock["chart"]["appVersion"] = "v26.7.0"
json.dump(lock, open(sys.argv[1], "w"), indent=2)
PYEOF
  store=$W/store
  "$GB" --store "$store" -q mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" || fail "mirror"
  "$GB" keys generate --out "$W/release" >/dev/null
}
create() { "$GB" --store "$store" -q bundle create "$W/site.lock.json" --key "$W/release.key" "$@"; }
