# shellcheck shell=bash
# Sourced by bench/bundle.sh and bench/import.sh: a loopback registry seeded
# with seed.py --set bench (14 images, ~280 MiB, multi-arch, shared layers),
# mirrored into a fresh store, plus a signing key. Sets GB, PY, TOOLS, W, HOST.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GB=$(realpath "${1:-build}")/builder/gpubundle
PY=/usr/bin/python3
TOOLS=$PWD/tests/tools
W=$(mktemp -d /tmp/gb-bench.XXXXXX)
trap '"$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT

HOST=$("$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name up | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["host"])')
echo "seeding the bench set into $HOST ..."
"$PY" "$TOOLS/seed.py" --registry "$HOST" --plain-http --set bench > "$W/seed.json"
printf 'hosts:\n  "%s":\n    mirrors: ["http://%s"]\n    fallback: false\n' "$HOST" "$HOST" > "$W/reg.yaml"
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null  # the stand-in chart
"$PY" - "$W/seed.json" "$W/site.lock.json" "$W/charts/gpu-operator-v26.7.0.tgz" <<'PYEOF'
import json, sys
refs = sorted(i["ref"] for i in json.load(open(sys.argv[1]))["images"])
plats = ["linux/amd64", "linux/arm64"]
lock = {"schemaVersion": 1, "generator": "bench", "recipe": {"name": "bench", "file": "", "sha256": "", "spec": {}},
        "operator": {"version": "v26.7.0"},
        "chart": {"name": "gpu-operator", "version": "v26.7.0", "appVersion": "v26.7.0", "source": sys.argv[3], "sha256": ""},
        "target": {"gpus": [], "os": "ubuntu22.04", "osTag": "ubuntu22.04", "kernels": [], "platforms": plats, "workloads": []},
        "driver": {"mode": "conventional", "version": "", "branch": "", "kernelModuleType": "auto", "usePrecompiled": False},
        "destination": None, "warnings": [],
        "images": [{"components": ["bench"], "source": r, "platforms": plats, "destination": "", "digest": "", "origin": "upstream"} for r in refs]}
json.dump(lock, open(sys.argv[2], "w"), indent=2)
PYEOF
"$GB" --store "$W/store" -q mirror "$W/site.lock.json" --registry-config "$W/reg.yaml"
"$GB" keys generate --out "$W/k" >/dev/null

source bench/measure.sh
