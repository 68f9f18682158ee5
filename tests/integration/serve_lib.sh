# gpubundle serve for the serve suites (sourced after mirror_lib.sh): each
# server spawned under $W/reg (so the trap stops it), on a free port.
serve_log_dir=$W/serve
mkdir -p "$serve_log_dir"

# start_serve NAME ARGS...: serve ARGS on 127.0.0.1, any free port; waits for
# its ready file and sets $serve_port and $serve_pid.
start_serve() {
  local name=$1
  shift
  rm -f "$serve_log_dir/$name.ready"
  "$PY" - "$TOOLS" "$W/reg" "$name" "$serve_log_dir/$name.log" "$GB" serve "$@" --listen 127.0.0.1:0 \
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
