#!/bin/bash
# The content store under kill -9, two concurrent mirrors and a full disk:
# every case ends with a store that fsck passes and no temp file left over.
# Usage: store_crash.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"

SRC=$(start_registry src)
# A 24 MiB layer, so that a kill lands mid-blob often.
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --set small --big-layer-mb 24 > "$W/seed.json"
make_lock "$W/l.lock.json" "$W/seed.json" linux/amd64
registry_config "$W/direct.yaml" "$SRC" "http://$SRC"
mirror() {  # STORE LOCKCOPY [extra...]
  local store=$1 lock=$2
  shift 2
  cp "$W/l.lock.json" "$lock"
  "$GB" --store "$store" mirror "$lock" --registry-config "$W/direct.yaml" -j 4 "$@"
}
clean_store() {  # STORE WHAT
  "$GB" --store "$1" store fsck > "$W/fsck" 2>&1 || { cat "$W/fsck"; fail "$2: fsck"; }
  if find "$1" -name '*.tmp.*' | grep -q .; then find "$1" -name '*.tmp.*'; fail "$2: temp files left"; fi
}

# killed PID: kill -9 and reap it; true only if the signal ended it (a process
# that had exited already is a zombie, which kill -9 "succeeds" on).
killed() {
  local rc=0
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || rc=$?
  [ "$rc" = 137 ]
}

# kill -9 matrix: mirrors killed at random moments (seeded, so a failure
# replays), then one run finishes. Blobs come through a proxy at 4 MiB/s, so
# that the 24 MiB layer is still in flight at every kill (each run resumes
# what the last one wrote and adds at most ~4 MiB before its kill).
RANDOM=${GB_CRASH_SEED:-11}
store=$W/s-kill
url=$("$PY" "$TOOLS/faultproxy.py" start --dir "$W/reg" --name slow --upstream "http://$SRC" --fault trickle --times 999 \
      --match blobs --trickle-bps 4194304 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
registry_config "$W/slow.yaml" "$SRC" "$url"
kills=0
for i in 1 2 3 4 5 6; do
  # gpubundle itself in the background, not the mirror function: $! would be
  # a subshell, and killing that left gpubundle running (the kills hit nothing).
  cp "$W/l.lock.json" "$W/k$i.lock.json"
  "$GB" --store "$store" mirror "$W/k$i.lock.json" --registry-config "$W/slow.yaml" -j 4 -q > /dev/null 2>&1 &
  pid=$!
  sleep "0.$((RANDOM % 9 + 1))"
  if killed "$pid"; then kills=$((kills + 1)); fi
done
[ "$kills" = 6 ] || fail "only $kills of 6 kills landed while the mirror ran"
mirror "$store" "$W/kfinal.lock.json" > /dev/null 2> "$W/err-kill" || { cat "$W/err-kill"; fail "run after kill -9"; }
[ "$(jget "$W/kfinal.lock.json" 'all(i["digest"] for i in d["images"])')" = True ] || fail "lock incomplete after kills"
clean_store "$store" "kill -9"
pass "$kills kills at random moments, each while the mirror ran; the next run completes, fsck clean, no temp files"

# Killed while a blob is half there (a proxy stalls it mid-body): the next run resumes the partial.
# Blobs reach the disk in 1 MiB pieces (BlobWriter::k_write_buffer), so wait for the big layer's
# partial to pass that, with every blob in flight at once (-j 16: the small set has 16).
store=$W/s-resume
url=$("$PY" "$TOOLS/faultproxy.py" start --dir "$W/reg" --name stall --upstream "http://$SRC" --fault stall --times 99 \
      --match blobs --stall-seconds 30 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
registry_config "$W/stall.yaml" "$SRC" "$url"
for i in 1 2; do
  cp "$W/l.lock.json" "$W/st$i.lock.json"
  "$GB" --store "$store" mirror "$W/st$i.lock.json" --registry-config "$W/stall.yaml" -j 16 -q > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 150); do
    find "$store" -name '*.partial' -size +1024k 2>/dev/null | grep -q . && break
    sleep 0.1
  done
  sleep "0.$((RANDOM % 5 + 1))"
  killed "$pid" || fail "the stalled mirror $i had ended before its kill"
done
partials=$(find "$store" -name '*.partial' | wc -l)
[ "$partials" -ge 1 ] || fail "no partial blob after the stalled kills"
mirror "$store" "$W/rfinal.lock.json" -v > /dev/null 2> "$W/err-resume" || { cat "$W/err-resume"; fail "run after stalled kills"; }
clean_store "$store" "resume"
resumed=$(grep -c "resuming at byte" "$W/err-resume" || true)
[ "$resumed" -ge 1 ] || { cat "$W/err-resume"; fail "no partial blob was resumed"; }
pass "killed twice mid-blob: $partials partial blobs, $resumed resumed by the next run (digest checked), fsck clean"

# Two mirrors on one store at once: the second waits for the lock, both succeed.
store=$W/s-two
GPUBUNDLE_LOCK_WAIT_S=120 mirror "$store" "$W/a.lock.json" -q > /dev/null 2> "$W/err-a" &
pa=$!
GPUBUNDLE_LOCK_WAIT_S=120 mirror "$store" "$W/b.lock.json" -q > /dev/null 2> "$W/err-b" &
pb=$!
wait "$pa" || { cat "$W/err-a"; fail "first concurrent mirror"; }
wait "$pb" || { cat "$W/err-b"; fail "second concurrent mirror"; }
cmp -s "$W/a.lock.json" "$W/b.lock.json" || fail "concurrent mirrors wrote different locks"
clean_store "$store" "concurrent"
pass "two concurrent mirrors both succeed, store consistent"

# A full disk: one clear line, the store still passes fsck, and after space is freed a re-run completes.
mnt=$W/small
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=12m tmpfs "$mnt" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (needs root); kill -9 and concurrency cases passed"
  exit 77
fi
trap 'umount "$mnt" 2>/dev/null || true; cleanup' EXIT
rc=0
mirror "$mnt/store" "$W/full.lock.json" -q > /dev/null 2> "$W/err-full" || rc=$?
[ "$rc" = 1 ] || { cat "$W/err-full"; fail "full disk: rc $rc"; }
grep -q "No space left on device" "$W/err-full" || { cat "$W/err-full"; fail "full disk: no ENOSPC message"; }
grep "No space left" "$W/err-full" | grep -q "$mnt/store" || { cat "$W/err-full"; fail "full disk: the message names no file"; }
"$GB" --store "$mnt/store" store fsck > "$W/fsck-full" 2>&1 || { cat "$W/fsck-full"; fail "full disk: fsck"; }
pass "full disk: $(grep -m1 'No space' "$W/err-full" | sed "s|$W|W|g" | cut -c1-150)"
echo "store-crash: all checks passed"
