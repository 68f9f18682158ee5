#!/usr/bin/env bash
# gpubundle bundle create/verify/inspect as a user runs them, on a store that
# `gpubundle mirror` filled from a real docker-registry: round trip,
# byte-identical rebuild, tampering, untrusted keys, split volumes read in a
# shuffled order, and a delta made against an earlier bundle.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"

small_bundle_store
"$GB" keys generate --out "$W/other" >/dev/null

export SOURCE_DATE_EPOCH=1764460800
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/a.bundle" --key "$W/release.key" || fail "bundle create"
"$GB" bundle verify "$W/a.bundle" --pubkey "$W/release.pub" > "$W/verify.out" 2>&1 || { cat "$W/verify.out"; fail "verify"; }
pass "round trip"
"$GB" --json bundle inspect "$W/a.bundle" > "$W/inspect.json"
[[ $(jget "$W/inspect.json" 'len(d["images"])') == $(jget "$W/seed.json" 'len(d["images"])') ]] || fail "inspect lists every image"
[[ $(jget "$W/inspect.json" 'd["created"]') == 2025-11-30T00:00:00Z ]] || fail "created from SOURCE_DATE_EPOCH"
"$GB" bundle inspect "$W/a.bundle" | grep "signer    key $(cut -c1-16 <<<"$("$GB" keys id "$W/release.pub")")" >/dev/null || fail "inspect shows the signer"
env -u SOURCE_DATE_EPOCH "$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/n.bundle" --key "$W/release.key"
"$GB" bundle inspect "$W/n.bundle" | grep -qx "created   not recorded (SOURCE_DATE_EPOCH was unset at build); the file was written $(date -u -r "$W/n.bundle" +%Y-%m-%dT%H:%M:%SZ)" ||
  fail "inspect does not say why created is missing: $("$GB" bundle inspect "$W/n.bundle" | grep created)"
[[ $("$GB" --json bundle inspect "$W/n.bundle" | jget /dev/stdin 'd["created"]') == "" ]] || fail "--json created changed"
pass "inspect"

"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/release.key"
cmp -s "$W/a.bundle" "$W/b.bundle" || fail "rebuild is not byte-identical"
pass "byte-identical rebuild"

# Untrusted key, no key, tampered byte: exit 1 (or 2 for no key), one line each.
set +e
"$GB" bundle verify "$W/a.bundle" --pubkey "$W/other.pub" 2>"$W/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "signature:" "$W/err" || { cat "$W/err"; fail "another key must be refused"; }
set +e; "$GB" bundle verify "$W/a.bundle" 2>"$W/err"; rc=$?; set -e
[[ $rc == 2 ]] || fail "verify without a trusted key must be a usage error"
cp "$W/a.bundle" "$W/t.bundle"
size=$(stat -c %s "$W/t.bundle")
printf '\x5a' | dd of="$W/t.bundle" bs=1 seek=$((size - 4096)) conv=notrunc status=none
set +e; "$GB" bundle verify "$W/t.bundle" --pubkey "$W/release.pub" 2>"$W/err"; rc=$?; set -e
[[ $rc == 1 ]] && grep -q "sha256" "$W/err" || { cat "$W/err"; fail "a flipped byte must be found"; }
pass "tampering refused"

# Split volumes while writing; verify in a shuffled order.
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/s.bundle" --key "$W/release.key" --split 700K
mapfile -t vols < <(ls "$W"/s.bundle.* | shuf)
((${#vols[@]} >= 2)) || fail "expected several volumes, got ${#vols[@]}"
"$GB" bundle verify "${vols[@]}" --pubkey "$W/release.pub" >/dev/null 2>&1 || fail "shuffled volumes"
for v in "${vols[@]}"; do (( $(stat -c %s "$v") <= 700 * 1024 )) || fail "$v is larger than the split size"; done
pass "split into ${#vols[@]} volumes, verified shuffled"

# A delta against the first bundle: manifests only, since nothing changed.
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/d.bundle" --key "$W/release.key" --since "$W/a.bundle"
"$GB" bundle verify "$W/d.bundle" --pubkey "$W/release.pub" >/dev/null 2>&1 || fail "delta verify"
(( $(stat -c %s "$W/d.bundle") * 4 < $(stat -c %s "$W/a.bundle") )) || fail "delta is not much smaller"
"$GB" --json bundle inspect "$W/d.bundle" | grep '"delta": true' >/dev/null || fail "delta flag"
pass "delta $(stat -c %s "$W/d.bundle") vs full $(stat -c %s "$W/a.bundle") bytes"
echo "bundle: ok"
