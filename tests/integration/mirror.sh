#!/bin/bash
# gpubundle mirror against a real docker-registry: byte-exact store, peers
# (skopeo, umoci) read it, re-mirror downloads nothing, --locked, missing refs, gc.
# Usage: mirror.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"

SRC=$(start_registry src)
DST=$(start_registry dst)
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --set small > "$W/seed.json"
registry_config "$W/reg.yaml" "$SRC" "http://$SRC"
make_lock "$W/site.lock.json" "$W/seed.json" linux/amd64
STORE="$W/store"
gb() { "$GB" --store "$STORE" "$@"; }

# Cold mirror.
log_from=$(stat -c %s "$W/reg/src/registry.log")
gb mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" -j 4 > "$W/out1" 2> "$W/err1" || { cat "$W/err1"; fail "cold mirror"; }
grep -q "mirrored 6 images" "$W/err1" || { cat "$W/err1"; fail "summary line"; }
pass "cold mirror"

# What it asked of the registry, from the registry's log: one GET per
# manifest and per blob, nothing else, over kept-alive connections, at most
# one per transfer at once (-j 4), however many requests.
served() { "$PY" "$TOOLS/registry_log.py" run cold "$W/reg/src/registry.log" "$log_from"; }
until [[ $(served) == "${seen:-}" ]]; do seen=$(served); sleep 0.2; done  # the last lines can come after the client is done
echo "$seen" > "$W/served.json"
requests=$(jget "$W/served.json" 'd["requests"]')
conns=$(jget "$W/served.json" 'd["connections"]')
[[ $(jget "$W/served.json" 'sorted(d["kinds"])') == "['GET blob', 'GET manifest']" ]] || { cat "$W/served.json"; fail "requests other than a GET per manifest and blob"; }
(( requests >= 12 && conns <= 4 )) || { cat "$W/served.json"; fail "$conns connections for $requests requests (want at most 4: connections reused)"; }
pass "cold mirror: $requests requests over $conns connections, a GET per manifest and per blob"

# Digests filled into the lock, in place, and equal to upstream.
n=$(jget "$W/site.lock.json" 'sum(1 for i in d["images"] if i["digest"].startswith("sha256:"))')
[ "$n" = 6 ] || fail "lock has $n digests, want 6"
for ref in $(jget "$W/seed.json" '" ".join(i["ref"] for i in d["images"])'); do
  skopeo inspect --raw --tls-verify=false "docker://$ref" > "$W/up.raw"
  skopeo inspect --raw "oci:$STORE:$ref" > "$W/st.raw" || fail "skopeo cannot read $ref from the store"
  cmp -s "$W/up.raw" "$W/st.raw" || fail "$ref: store bytes differ from upstream"
  want=$(jget "$W/seed.json" "[i['digest'] for i in d['images'] if i['ref']=='$ref'][0]")
  got=$(jget "$W/site.lock.json" "[i['digest'] for i in d['images'] if i['source']=='$ref'][0]")
  [ "$want" = "$got" ] || fail "$ref: lock digest $got, upstream $want"
done
pass "skopeo inspect --raw oci:STORE:REF equals upstream bytes for 6 images"

# A peer copies out of our store (sparse index: the amd64 instance).
skopeo copy -q --dest-tls-verify=false "oci:$STORE:$SRC/test/docker-multi:1.0" "docker://$DST/copied/docker-multi:1.0" \
  || fail "skopeo copy oci:STORE -> registry"
skopeo copy -q --dest-tls-verify=false "oci:$STORE:$SRC/test/oci-single:1.0" "docker://$DST/copied/oci-single:1.0" \
  || fail "skopeo copy oci-single"
a=$(skopeo inspect --raw --tls-verify=false "docker://$DST/copied/oci-single:1.0" | sha256sum)
b=$(skopeo inspect --raw "oci:$STORE:$SRC/test/oci-single:1.0" | sha256sum)
[ "$a" = "$b" ] || fail "copied manifest differs"
pass "skopeo copy oci:STORE:REF docker://other works"

if command -v umoci >/dev/null; then
  umoci ls --layout "$STORE" > "$W/umoci.ls" || fail "umoci ls"
  [ "$(wc -l < "$W/umoci.ls")" = 6 ] || { cat "$W/umoci.ls"; fail "umoci sees $(wc -l < "$W/umoci.ls") tags"; }
  umoci stat --image "$STORE:$SRC/test/oci-single:1.0" > /dev/null || fail "umoci stat"
  pass "umoci reads the layout"
fi
gb store fsck > "$W/fsck" 2>&1 || { cat "$W/fsck"; fail "fsck after cold mirror"; }
pass "store fsck clean"

# Re-mirror: manifests checked, nothing downloaded.
gb --json mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" > "$W/out2" 2> "$W/err2" || { cat "$W/err2"; fail "re-mirror"; }
[ "$(jget "$W/out2" 'd["bytesDownloaded"]')" = 0 ] || fail "re-mirror downloaded bytes"
[ "$(jget "$W/out2" 'd["blobsFetched"]')" = 0 ] || fail "re-mirror fetched blobs"
[ "$(jget "$W/out2" 'all(i["upToDate"] for i in d["images"])')" = True ] || fail "re-mirror: images not up to date"
grep -q '"event"\|{' "$W/err2" || fail "--json: no JSON-lines progress on stderr"
gb mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" > "$W/out2b" 2>&1 || fail "re-mirror (plain)"
grep -q "0 B downloaded" "$W/out2b" || { cat "$W/out2b"; fail "no '0 B downloaded'"; }
pass "re-mirror downloads nothing"

# store ls
gb --json store ls > "$W/ls.json"
[ "$(jget "$W/ls.json" 'len(d["images"])')" = 6 ] || fail "store ls --json"
gb store ls > "$W/ls.txt" && grep -q "test/oci-multi:1.0" "$W/ls.txt" || fail "store ls table"
pass "store ls"

# --locked: a lock digest that upstream no longer has.
cp "$W/site.lock.json" "$W/moved.lock.json"
"$PY" - "$W/moved.lock.json" <<'PYEOF'
import json, sys
l = json.load(open(sys.argv[1]))
l["images"][0]["digest"] = "sha256:" + "0" * 64
json.dump(l, open(sys.argv[1], "w"))
PYEOF
moved=$(jget "$W/moved.lock.json" 'd["images"][0]["source"]')
real=$(jget "$W/site.lock.json" 'd["images"][0]["digest"]')
if gb mirror "$W/moved.lock.json" --registry-config "$W/reg.yaml" --locked 2> "$W/err3"; then fail "--locked accepted a moved digest"; fi
grep -q "$moved" "$W/err3" && grep -q "sha256:0000000000" "$W/err3" && grep -q "$real" "$W/err3" || { cat "$W/err3"; fail "--locked message"; }
pass "--locked names the image and both digests"

# Missing tags and platforms: all named, nothing fetched.
make_lock "$W/missing.lock.json" "$W/seed.json" linux/amd64,linux/s390x "$SRC/test/nope:1" "$SRC/nothere/at-all:2"
before=$(find "$STORE/blobs" -type f | wc -l)
if "$GB" --store "$W/store2" mirror "$W/missing.lock.json" --registry-config "$W/reg.yaml" 2> "$W/err4"; then fail "missing refs accepted"; fi
for want in "$SRC/test/nope:1: not found" "$SRC/nothere/at-all:2: not found" "test/oci-multi:1.0: no linux/s390x" "test/docker-multi:1.0: no linux/s390x"; do
  grep -qF "$want" "$W/err4" || { cat "$W/err4"; fail "missing: '$want' not reported"; }
done
[ -z "$(find "$W/store2/blobs" -type f 2>/dev/null)" ] || fail "blobs fetched despite missing refs"
pass "missing refs and platforms all named before any download"

# Unknown host / closed port: clear error, store intact.
echo '{"images":[]}' > "$W/empty.json"
make_lock "$W/bad.lock.json" "$W/empty.json" linux/amd64 "127.0.0.1:1/x/y:1"
printf 'hosts:\n  "127.0.0.1:1":\n    mirrors: ["http://127.0.0.1:1"]\n    fallback: false\n' > "$W/bad.yaml"
if gb mirror "$W/bad.lock.json" --registry-config "$W/bad.yaml" 2> "$W/err5"; then fail "closed port accepted"; fi
grep -q "127.0.0.1:1/x/y:1" "$W/err5" || { cat "$W/err5"; fail "unreachable host message"; }
gb store fsck > /dev/null 2>&1 || fail "store damaged by a failed run"
[ "$(find "$STORE/blobs" -type f | wc -l)" = "$before" ] || fail "failed run changed the blobs"
pass "unreachable registry: clear error, store intact"

# A second writer waits, then fails clearly.
( exec 9>"$STORE/.lock"; flock -x 9; sleep 5 ) &
holder=$!
sleep 0.3
if gb store gc 2> "$W/err6"; then fail "gc ran while another process held the store"; fi
grep -q "in use by another gpubundle process" "$W/err6" || { cat "$W/err6"; fail "lock message"; }
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
pass "second writer refused with a clear message"

# gc: an unreferenced blob and a stale temp file go, referenced ones stay.
head -c 12345 /dev/urandom > "$W/orphan"
h=$(sha256sum "$W/orphan" | cut -d' ' -f1)
cp "$W/orphan" "$STORE/blobs/sha256/$h"
echo partial > "$STORE/blobs/sha256/$h.tmp.AbC123"
gb store gc > "$W/gc" || fail "gc"
grep -q "removed 1 unreferenced blobs and 1 temp files" "$W/gc" || { cat "$W/gc"; fail "gc report"; }
[ ! -e "$STORE/blobs/sha256/$h" ] || fail "orphan survived gc"
gb store fsck > /dev/null 2>&1 || fail "fsck after gc"
gb mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" > "$W/out7" 2>&1 && grep -q "0 B downloaded" "$W/out7" || fail "gc removed live blobs"
pass "store gc"

# fsck reports a flipped byte and exits 1.
victim=$(find "$STORE/blobs/sha256" -type f -size +10k | head -1)
printf 'X' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none
if gb store fsck > "$W/fsck2" 2>&1; then fail "fsck missed a flipped byte"; fi
grep -q "$(basename "$victim").*corrupt" "$W/fsck2" || { cat "$W/fsck2"; fail "fsck message"; }
pass "fsck finds a flipped byte"
echo "mirror: all checks passed"
