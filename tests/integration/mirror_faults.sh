#!/bin/bash
# gpubundle mirror under faults: 503/429/dropped connections are retried to
# success; corrupt/truncated blobs are detected and never stored; kill -9
# mid-mirror, then a re-run completes and fsck is clean.
# Usage: mirror_faults.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"

SRC=$(start_registry src)
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --set small > "$W/seed.json"
make_lock "$W/l.lock.json" "$W/seed.json" linux/amd64
registry_config "$W/direct.yaml" "$SRC" "http://$SRC"

# proxy NAME FAULT TIMES [MATCH] -> writes $W/NAME.yaml pointing SRC at the proxy
proxy() {
  local url
  url=$("$PY" "$TOOLS/faultproxy.py" start --dir "$W/reg" --name "$1" --upstream "http://$SRC" --fault "$2" --times "$3" \
        --match "${4:-blobs}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
  registry_config "$W/$1.yaml" "$SRC" "$url"
}
injected() { "$PY" "$TOOLS/faultproxy.py" stats --dir "$W/reg" --name "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["injected"])'; }

for fault in 503 429 drop; do
  proxy "p$fault" "$fault" 2 any
  store="$W/s-$fault"
  cp "$W/l.lock.json" "$W/$fault.lock.json"
  "$GB" --store "$store" mirror "$W/$fault.lock.json" --registry-config "$W/p$fault.yaml" -j 4 2> "$W/err-$fault" \
    || { cat "$W/err-$fault"; fail "$fault: not retried to success"; }
  [ "$(injected "p$fault")" -ge 1 ] || fail "$fault: proxy injected nothing"
  "$GB" --store "$store" store fsck > /dev/null 2>&1 || fail "$fault: fsck"
  pass "$fault retried to success (fsck clean)"
done

for fault in corrupt truncate; do
  proxy "p$fault" "$fault" 1 blobs
  store="$W/s-$fault"
  cp "$W/l.lock.json" "$W/$fault.lock.json"
  if "$GB" --store "$store" mirror "$W/$fault.lock.json" --registry-config "$W/p$fault.yaml" -j 4 2> "$W/err-$fault"; then
    outcome="retried to success"
  else
    grep -q "sha256:" "$W/err-$fault" || { cat "$W/err-$fault"; fail "$fault: failure does not name the blob"; }
    outcome="failed clearly: $(grep -m1 'sha256' "$W/err-$fault" | cut -c1-120)"
  fi
  [ "$(injected "p$fault")" -ge 1 ] || fail "$fault: proxy injected nothing"
  "$GB" --store "$store" store fsck > "$W/fsck-$fault" 2>&1 || { cat "$W/fsck-$fault"; fail "$fault: a damaged blob was stored"; }
  pass "$fault detected, $outcome; fsck clean"
done

# kill -9 while a blob is half-written (the proxy stalls it), then re-run.
proxy pstall stall 1 blobs
store="$W/s-kill"
cp "$W/l.lock.json" "$W/kill.lock.json"
"$GB" --store "$store" mirror "$W/kill.lock.json" --registry-config "$W/pstall.yaml" -j 4 > /dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ "$(injected pstall)" -ge 1 ] && break
  sleep 0.1
done
sleep 0.5
kill -9 "$pid" 2>/dev/null || fail "mirror ended before the kill"
wait "$pid" 2>/dev/null || true
ls "$store/blobs/sha256" | grep -q '\.tmp\.' || echo "note: no temp file caught at kill time"
"$GB" --store "$store" mirror "$W/kill.lock.json" --registry-config "$W/direct.yaml" 2> "$W/err-kill" || { cat "$W/err-kill"; fail "re-run after kill -9"; }
"$GB" --store "$store" store fsck > "$W/fsck-kill" 2>&1 || { cat "$W/fsck-kill"; fail "fsck after kill -9 + re-run"; }
[ "$(jget "$W/kill.lock.json" 'sum(1 for i in d["images"] if i["digest"])')" = 6 ] || fail "lock incomplete after re-run"
"$GB" --store "$store" store gc > "$W/gc-kill" && grep -q "temp files" "$W/gc-kill" || fail "gc after kill"
pass "kill -9 mid-mirror, re-run completes, fsck clean"
echo "mirror-faults: all checks passed"
