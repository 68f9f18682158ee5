# gpubundle serve for the serve suites (sourced after mirror_lib.sh): each
# server spawned under $W/reg (so the trap stops it), on a free port.
serve_log_dir=$W/serve
mkdir -p "$serve_log_dir"

# start_serve NAME ARGS...: serve ARGS on $SERVE_LISTEN (default 127.0.0.1,
# any free port); waits for its ready file and sets $serve_port and $serve_pid.
start_serve() {
  local name=$1
  shift
  rm -f "$serve_log_dir/$name.ready"
  "$PY" - "$TOOLS" "$W/reg" "$name" "$serve_log_dir/$name.log" "$GB" serve "$@" --listen "${SERVE_LISTEN:-127.0.0.1:0}" \
    --ready-file "$serve_log_dir/$name.ready" --access-log "$serve_log_dir/$name.access" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.spawn(sys.argv[2], "serve", sys.argv[3], sys.argv[5:], sys.argv[4])
PYEOF
  for _ in $(seq 300); do [[ -s $serve_log_dir/$name.ready ]] && break; sleep 0.1; done
  [[ -s $serve_log_dir/$name.ready ]] || fail "serve $name did not start: $(tail -n 5 "$serve_log_dir/$name.log")"
  serve_port=$(jget "$serve_log_dir/$name.ready" 'd["port"]')
  serve_pid=$(jget "$serve_log_dir/$name.ready" 'd["pid"]')
}

# stop_serve NAME: SIGTERM, then it must be gone within 10 s with its ready file removed.
stop_serve() {
  local name=$1 pid
  pid=$(jget "$serve_log_dir/$name.ready" 'd["pid"]')
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then fail "serve $name did not stop on SIGTERM"; fi
  [[ ! -e $serve_log_dir/$name.ready ]] || fail "serve $name left its ready file"
}

# start_cri_containerd HOSTS_DIR [NAME]: a private containerd with its CRI plugin on
# (the kubelet's way in), resolving registries through HOSTS_DIR (the kit's
# containerd/certs.d, as a node's config_path); `cri_pull [NAME] REF [--user U:P]`
# then pulls through it. Returns 1 when the plugin does not come up here.
start_cri_containerd() {
  local d=$W/${2:-cri}
  mkdir -p "$d/cni-bin" "$d/cni-conf"
  cat > "$d/config.toml" <<TOML
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$d/c.sock"
[ttrpc]
  address = "$d/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
[plugins."io.containerd.grpc.v1.cri"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$d/cni-bin"
    conf_dir = "$d/cni-conf"
TOML
  "$PY" - "$TOOLS" "$W/reg" "$d" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
harness.spawn(sys.argv[2], "containerd", sys.argv[3].rsplit("/", 1)[1], ["containerd", "--config", sys.argv[3] + "/config.toml"], sys.argv[3] + "/containerd.log")
PYEOF
  for _ in $(seq 100); do ctr --address "$d/c.sock" plugins ls 2>/dev/null | grep -q 'grpc.v1 *cri .* ok' && return 0; sleep 0.2; done
  return 1
}
cri_pull() { "$PY" "$TOOLS/cri_pull.py" "$W/${CRI:-cri}/c.sock" "$@"; }
