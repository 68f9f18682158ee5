#!/bin/bash
# gpubundle against a hostile registry (tests/tools/faultproxy.py in front of a
# real token-auth docker-registry): credentials never reach another origin
# (blob redirect, upload Location and Link pages are covered by
# registry_live_tests, tests/integration/registry_live.cpp), huge Retry-After, trickled and oversized manifests, an oversized
# index.yaml, digests built to escape into paths, passwords in --registry.
# Usage: hostile_registry.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"
export GPUBUNDLE_HTTP_TIMEOUT_S=3  # the small-request deadline, shortened for the trickle case

"$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name src --token robot:tok-pw > "$W/src.json"
SRC=$(jget "$W/src.json" 'd["host"]')
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --user robot --password tok-pw --set small > "$W/seed.json"
make_lock "$W/l.lock.json" "$W/seed.json" linux/amd64
printf 'tok-pw' > "$W/pw.txt"

# proxy NAME FAULT TIMES MATCH [EXTRA...] -> $W/NAME.yaml: SRC reached through the proxy, with credentials
proxy() {
  local name=$1 fault=$2 times=$3 match=$4
  shift 4
  "$PY" "$TOOLS/faultproxy.py" start --dir "$W/reg" --name "$name" --upstream "http://$SRC" --fault "$fault" \
    --times "$times" --match "$match" "$@" > "$W/$name.json"
  local url
  url=$(jget "$W/$name.json" 'd["url"]')
  printf 'hosts:\n  "%s":\n    mirrors: ["%s"]\n    fallback: false\n  "%s":\n    username: robot\n    passwordFile: %s\n' \
    "$SRC" "$url" "${url#http://}" "$W/pw.txt" > "$W/$name.yaml"
}
stat_of() { "$PY" "$TOOLS/faultproxy.py" stats --dir "$W/reg" --name "$1" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }
# mirror NAME: runs a mirror through proxy NAME into its own store; rc in $rc, stderr in $W/err-NAME, seconds in $secs
mirror() {
  cp "$W/l.lock.json" "$W/$1.lock.json"
  local t0=$SECONDS
  rc=0
  timeout 120 "$GB" --store "$W/s-$1" mirror "$W/$1.lock.json" --registry-config "$W/$1.yaml" -j 4 2> "$W/err-$1" > /dev/null || rc=$?
  secs=$((SECONDS - t0))
}

# A blob GET redirected to another origin (another port): no Authorization goes along.
proxy redir redirect 2 blobs
mirror redir
[ "$(stat_of redir foreign)" -ge 1 ] || fail "redirect: the foreign origin was never asked"
[ "$(stat_of redir leaked)" = 0 ] || fail "redirect: Authorization sent to another origin"
pass "blob redirect to another origin carries no credentials (mirror rc=$rc: $(grep -m1 -v '^check\|^mirror:' "$W/err-redir" | cut -c1-110))"

# Retry-After: 100000 is not waited for: the request fails at once, saying why.
proxy slow 429 1 manifests --retry-after 100000
mirror slow
[ "$rc" = 1 ] || { cat "$W/err-slow"; fail "Retry-After 100000: rc $rc"; }
[ "$secs" -lt 30 ] || fail "Retry-After 100000 held the run for ${secs}s"
grep -q "retry after 86400 s, longer than gpubundle waits" "$W/err-slow" || { cat "$W/err-slow"; fail "Retry-After: message"; }
pass "huge Retry-After fails in ${secs}s with a clear message"

# A manifest trickled at 2 B/s hits the small-request deadline; the retry gets it.
proxy trickle trickle 1 manifests --trickle-bps 2
mirror trickle
[ "$rc" = 0 ] || { cat "$W/err-trickle"; fail "trickle: rc $rc"; }
[ "$(stat_of trickle injected)" = 1 ] || fail "trickle: nothing trickled"
[ "$secs" -lt 40 ] || fail "trickle took ${secs}s"
"$GB" --store "$W/s-trickle" store fsck > /dev/null 2>&1 || fail "trickle: fsck"
pass "trickled manifest cut at the deadline, retried, mirror done in ${secs}s"

# An oversized manifest is refused, not buffered.
proxy big oversize 99 manifests --oversize-bytes $((17 << 20))
mirror big
[ "$rc" = 1 ] || { cat "$W/err-big"; fail "oversized manifest: rc $rc"; }
grep -q "manifest larger than 16 MiB" "$W/err-big" || { cat "$W/err-big"; fail "oversized manifest: message"; }
pass "oversized manifest refused"

# An index whose child digest climbs out of blobs/: refused before any URL or path use.
proxy evil hostile-digest 99 manifests
mirror evil
[ "$rc" != 0 ] || fail "hostile digest accepted"
grep -q "sha512:../../../etc/hostname" "$W/err-evil" || { cat "$W/err-evil"; fail "hostile digest: not named"; }
[ "$(stat_of evil traversal)" = 0 ] || fail "hostile digest reached a URL"
pass "hostile digest refused before use ($(grep -m1 sha512 "$W/err-evil" | cut -c1-100))"

# A malformed reference in a lock is bad input: exit 2, the reference named once.
"$PY" - "$W/l.lock.json" "$W/bad.lock.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); d["images"][0]["source"] = "reg.test/Bad Name:1"; json.dump(d, open(sys.argv[2], "w"))
PYEOF
rc=0
"$GB" --store "$W/s-bad" mirror "$W/bad.lock.json" --registry-config "$W/redir.yaml" 2> "$W/err-bad" || rc=$?
[ "$rc" = 2 ] || { cat "$W/err-bad"; fail "malformed lock reference: rc $rc, want 2"; }
[ "$(grep -o 'Bad Name:1' "$W/err-bad" | wc -l)" = 1 ] || { cat "$W/err-bad"; fail "reference not named exactly once"; }
pass "malformed lock reference: exit 2, named once"

# Passwords written into URLs are never echoed.
rc=0
"$GB" import "$W/none.bundle" --registry "https://robot:S3cretPW@bad host/x" --insecure-skip-signature > "$W/out-pw" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "--registry with a bad host accepted"
if grep -q S3cretPW "$W/out-pw"; then cat "$W/out-pw"; fail "--registry password echoed"; fi
printf 'hosts:\n  nvcr.io:\n    mirrors: ["ftp://robot:S3cretPW@mirror.local"]\n' > "$W/pw-url.yaml"
"$GB" --store "$W/s-pw" mirror "$W/l.lock.json" --registry-config "$W/pw-url.yaml" > "$W/out-pw2" 2>&1 && fail "ftp mirror accepted"
if grep -q S3cretPW "$W/out-pw2"; then cat "$W/out-pw2"; fail "mirror URL password echoed"; fi
pass "userinfo redacted in --registry and mirror URL errors"

# An oversized Helm index.yaml is refused at the documented cap (64 MiB).
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" > /dev/null  # the stand-in chart
HELM=$("$PY" "$TOOLS/helmrepo.py" serve --dir "$W/charts" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
trap '"$PY" "$TOOLS/helmrepo.py" stop --dir "$W/charts" >/dev/null 2>&1 || true; cleanup' EXIT
"$PY" "$TOOLS/faultproxy.py" start --dir "$W/reg" --name helm --upstream "$HELM" --fault oversize --times 99 \
  --match index --oversize-bytes $(((64 << 20) + 1)) > "$W/helm.json"
HURL=$(jget "$W/helm.json" 'd["url"]')
printf 'apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: site}\noperator:\n  version: v26.7.0\n  chart: %s\ntarget:\n  gpus: [H100-SXM5-80GB]\n  os: ubuntu22.04\n  platforms: [linux/amd64]\ndriver:\n  mode: conventional\n  version: "580.105.08"\n' "$HURL" > "$W/site.yaml"
rc=0
GPUBUNDLE_HTTP_TIMEOUT_S=120 "$GB" --store "$W/s-helm" mirror "$W/site.yaml" 2> "$W/err-helm" > /dev/null || rc=$?
[ "$rc" = 1 ] || { cat "$W/err-helm"; fail "oversized index.yaml: rc $rc"; }
grep -q "larger than 64 MiB" "$W/err-helm" || { cat "$W/err-helm"; fail "oversized index.yaml: message"; }
[ "$(grep -o 'index.yaml' "$W/err-helm" | wc -l)" = 1 ] || { cat "$W/err-helm"; fail "index.yaml URL named more than once"; }
pass "oversized index.yaml refused at 64 MiB"
echo "hostile-registry: all checks passed"
