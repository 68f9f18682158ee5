# Shared helpers for the integration suites (sourced): registries, locks, a bundle store,
# a private containerd and podman (the node runtimes the install kit configures).
# Usage: source mirror_lib.sh; needs $GB (gpubundle binary).
set -euo pipefail
PY=/usr/bin/python3
TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
W=$(mktemp -d -t gb-mirror-test.XXXXXX)
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

# upstream_config FILE HOST: nvcr.io and registry.k8s.io both reached at the
# stand-in upstream http://HOST (seed.py --lock), no fallback.
upstream_config() {
  printf 'hosts:\n  nvcr.io:\n    mirrors: ["http://%s"]\n    fallback: false\n  registry.k8s.io:\n    mirrors: ["http://%s"]\n    fallback: false\n' \
    "$2" "$2" > "$1"
}

# small_lock IN OUT: one image per component of operator, devicePlugin, driver
# and node-feature-discovery (tags and digest pins, both source hosts, the
# composed driver tag), so that a lock resolved from the stand-in chart stays
# quick to mirror and pull.
small_lock() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
lock = json.load(open(sys.argv[1]))
keep, images = ["operator", "devicePlugin", "driver", "node-feature-discovery"], []
for key in keep:
    image = next(i for i in lock["images"] if key in i["components"])
    if image not in images:
        images.append(image)
lock["images"] = sorted(images, key=lambda i: i["source"])
assert {i["source"].split("/")[0] for i in lock["images"]} == {"nvcr.io", "registry.k8s.io"}, lock["images"]
json.dump(lock, open(sys.argv[2], "w"), indent=2, sort_keys=True)
PYEOF
}

# Node runtimes, private to the test: no system file is read or changed.
# need_runtimes: SKIP (77) unless containerd, ctr and podman are installed.
need_runtimes() {
  for tool in containerd ctr podman; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh installs it)"; exit 77; }
  done
}

# start_containerd: a private containerd (own root, state, socket and config
# under $W/ctd), recorded with the registries so that the trap stops it; then
# `ctr_ ARGS...` talks to it. SKIP (77) when it does not start here.
start_containerd() {
  ctd=$W/ctd
  mkdir -p "$ctd"
  cat > "$ctd/config.toml" <<TOML
version = 2
root = "$ctd/root"
state = "$ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$ctd/c.sock"
[ttrpc]
  address = "$ctd/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$ctd/opt"
TOML
  "$PY" - "$TOOLS" "$W/reg" "$ctd" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.spawn(sys.argv[2], "containerd", "node", ["containerd", "--config", sys.argv[3] + "/config.toml"], sys.argv[3] + "/containerd.log")
PYEOF
  for _ in $(seq 100); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
  ctr_ version >/dev/null 2>&1 || { echo "SKIP: a private containerd does not start here: $(tail -n 5 "$ctd/containerd.log")"; exit 77; }
}
ctr_() { ctr --address "$W/ctd/c.sock" "$@"; }

# podman with everything private: config, registries, CA, policy, storage.
podman_for() {  # podman_for NAME -> sets up $W/podman/NAME, prints its HOME
  local h=$W/podman/$1
  mkdir -p "$h/.config/containers/registries.conf.d"
  echo 'unqualified-search-registries = []' > "$h/.config/containers/registries.conf"
  echo '{"default": [{"type": "insecureAcceptAnything"}]}' > "$h/.config/containers/policy.json"
  printf '[storage]\ndriver = "vfs"\nrunroot = "%s/run"\ngraphroot = "%s/root"\n' "$h" "$h" > "$h/storage.conf"
  : > "$h/containers.conf"
  echo "$h"
}
podman_() {  # podman_ HOME ARGS...
  local h=$1
  shift
  HOME=$h CONTAINERS_CONF=$h/containers.conf CONTAINERS_STORAGE_CONF=$h/storage.conf \
    podman --root "$h/root" --runroot "$h/run" --tmpdir "$h/tmp" --storage-driver vfs --events-backend none \
    --cgroup-manager cgroupfs "$@"
}
# podman_kit NAME KIT -> a private podman HOME with the kit's CRI-O drop-in and
# CA where a node has them (containers-registries.conf.d, as CRI-O reads them).
podman_kit() {
  local h
  h=$(podman_for "$1")
  cp "$2/crio/registries.conf.d/99-gpubundle.conf" "$h/.config/containers/registries.conf.d/"
  [[ ! -d $2/crio/certs.d ]] || cp -r "$2/crio/certs.d" "$h/.config/containers/certs.d"
  echo "$h"
}
# podman_works: SKIP (77) when podman does not run here.
podman_works() {
  local probe
  probe=$(podman_for probe)
  podman_ "$probe" images >/dev/null 2>"$W/podman-probe.err" || { echo "SKIP: podman does not run here: $(tail -n 3 "$W/podman-probe.err")"; exit 77; }
}
