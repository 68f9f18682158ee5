#!/usr/bin/env bash
# bundle create onto a full disk (a small tmpfs): one clear line naming the
# volume file and the disk's reason, exit 1, and nothing left behind, neither
# under the final names nor as temp files. Needs mount (root); skips otherwise.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
full=$W/full
mkdir -p "$full"
if ! mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (needs root); the full-disk test did not run"
  exit 77
fi
umount "$full"
trap 'umount "$full" 2>/dev/null || true; cleanup' EXIT

small_bundle_store
create -o "$W/ref.bundle" || fail "bundle create"
size=$(stat -c %s "$W/ref.bundle")

# full_create TMPFS_KIB ARGS...: bundle create into a fresh tmpfs of that size.
full_create() {
  local kib=$1 rc
  shift
  mount -t tmpfs -o size=${kib}k tmpfs "$full"
  set +e
  create "$@" 2>"$W/err"
  rc=$?
  set -e
  [[ $rc == 1 ]] || { cat "$W/err"; fail "bundle create on a full disk: exit $rc, want 1"; }
  (($(wc -l <"$W/err") == 1)) || { cat "$W/err"; fail "bundle create on a full disk: want one line"; }
  grep -q "No space left on device" "$W/err" || { cat "$W/err"; fail "the message does not give the disk's reason"; }
  [[ -z $(ls -A "$full") ]] || { ls -la "$full"; fail "bundle create left files on the full disk"; }
  cat "$W/err"
  umount "$full"
}

# One volume, half of what it needs.
full_create $((size / 2048)) -o "$full/x.bundle"
grep -qF "$full/x.bundle: write failed" "$W/err" || fail "the message does not name the bundle file"
pass "full disk, one volume: one line naming $full/x.bundle, nothing left"

# Split: room for the first volume, not for the rest; no .001 under its name.
full_create $((size / 2048)) -o "$full/s.bundle" --split 260K
grep -qE "$full/s\.bundle\.[0-9]{3}: write failed" "$W/err" || fail "the message does not name the volume file"
pass "full disk, split volumes: one line naming the volume, no volume published"
echo "bundle_full_disk: ok"
