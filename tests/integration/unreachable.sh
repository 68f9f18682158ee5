#!/usr/bin/env bash
# A registry gpubundle cannot talk to at all, against Debian's real
# docker-registry: a plain HTTP registry reached at https://, a closed port,
# a TLS registry whose CA was not given, a name that does not resolve. Each
# is ONE line naming the host and the fix (not one per image or blob), then
# one closing line saying what was pushed or stored, and exit 1; for both
# `import` and `mirror`.
# Usage: unreachable.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"

small_bundle_store  # 6 images in $store, from the plain HTTP upstream $up
create -o "$W/site.bundle" >/dev/null || fail "bundle create"
site=$("$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name site | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["host"])')
tls_json=$("$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name tls --tls)
tls=$(echo "$tls_json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["host"])')
closed=127.0.0.1:$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export GPUBUNDLE_HTTP_TIMEOUT_S=20

# expect NAME HOST WANT CLOSING CMD...: exit 1; stderr has exactly two lines
# (the host's and the closing one), the first naming HOST and WANT.
expect() {
  local name=$1 host=$2 want=$3 closing=$4 rc=0
  shift 4
  "$@" > "$W/out" 2> "$W/err" || rc=$?
  [[ $rc == 1 ]] || { cat "$W/err"; fail "$name: exit $rc, not 1"; }
  local lines
  lines=$(grep -c . "$W/err" || true)
  ((lines == 2)) || { cat "$W/err"; fail "$name: $lines lines on stderr, not 2 (the host's and the closing one)"; }
  # (the closing line may name images, whose references can hold the host)
  (($(head -n -1 "$W/err" | grep -c -F "$host") == 1)) || { cat "$W/err"; fail "$name: $host not named in exactly one line"; }
  head -n 1 "$W/err" | grep -q -F "$want" || { cat "$W/err"; fail "$name: the first line does not say '$want'"; }
  tail -n 1 "$W/err" | grep -q -F "$closing" || { cat "$W/err"; fail "$name: the last line does not say '$closing'"; }
  pass "$name: $(head -n 1 "$W/err" | cut -c1-150)"
}
site_untouched() { [[ ! -d $W/reg/$1/storage/docker/registry/v2/repositories ]] || fail "$1: import pushed something"; }

imp() { "$GB" -q import "$W/site.bundle" --registry "$1" --pubkey "$W/release.pub" --no-kit; }
expect "import https:// to a plain HTTP registry" "$site" "$site answered plain HTTP to a TLS hello: use http://$site" \
  "import: 0 of 6 images pushed; nothing at the site registry changed" imp "https://$site/gpu"
grep -q "plainHttp: true for $site in --registry-config" "$W/err" || fail "the plain HTTP line does not name plainHttp"
site_untouched site
expect "import to a closed port" "$closed" "$closed refused the connection (nothing listens on that port)" \
  "import: 0 of 6 images pushed; nothing at the site registry changed" imp "https://$closed/gpu"
expect "import to TLS without its CA" "$tls" "TLS verification of $tls failed" \
  "import: 0 of 6 images pushed; nothing at the site registry changed" imp "https://$tls/gpu"
grep -q "caFile for $tls in --registry-config" "$W/err" || fail "the TLS line does not name caFile"
site_untouched tls
# The fixes it names work: http://, plainHttp, caFile.
"$GB" -q import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit || fail "import http://"
printf 'hosts:\n  "%s":\n    caFile: %s\n' "$tls" "$(echo "$tls_json" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ca"])')" > "$W/tls.yaml"
"$GB" -q import "$W/site.bundle" --registry "https://$tls/gpu" --registry-config "$W/tls.yaml" --pubkey "$W/release.pub" --no-kit ||
  fail "import with caFile"
pass "the fixes named work: http:// and caFile"

# mirror: the upstream host's only endpoint is the broken one. The closing
# line names the first three images that could not be checked.
first_ref=$(jget "$W/site.lock.json" 'd["images"][0]["source"]')
mirror() {
  printf 'hosts:\n  "%s":\n    mirrors: ["%s"]\n    fallback: false\n' "$up" "$1" > "$W/m.yaml"
  rm -rf "$W/s2"
  "$GB" -q --store "$W/s2" mirror "$W/site.lock.json" --registry-config "$W/m.yaml"
}
expect "mirror from a plain HTTP registry at https://" "$up" "$up answered plain HTTP to a TLS hello: write the mirror as http://$up in --registry-config" \
  "mirror: 0 of 6 images checked, 6 not ($first_ref, " mirror "https://$up"
expect "mirror from a closed port" "$closed" "$closed refused the connection" \
  "mirror: 0 of 6 images checked, 6 not ($first_ref, " mirror "http://$closed"
expect "mirror from a name that does not resolve" "no-such-host.invalid" "unknown host no-such-host.invalid" \
  "mirror: 0 of 6 images checked, 6 not ($first_ref, " mirror "https://no-such-host.invalid"
# Two hosts down at once: one line each, whatever the number of images.
"$PY" - "$W/site.lock.json" "$W/two.lock.json" "$closed/other/image:1.0" <<'PYEOF'
import copy, json, sys
lock = json.load(open(sys.argv[1]))
extra = copy.deepcopy(lock["images"][0])
extra.update(source=sys.argv[3], digest="", components=["extra"])
extra.pop("siteDigest", None)
lock["images"].append(extra)
json.dump(lock, open(sys.argv[2], "w"), indent=2)
PYEOF
printf 'hosts:\n  "%s":\n    mirrors: ["https://%s"]\n    fallback: false\n' "$up" "$up" > "$W/m.yaml"
rc=0
"$GB" -q --store "$W/s3" mirror "$W/two.lock.json" --registry-config "$W/m.yaml" 2> "$W/err" || rc=$?
[[ $rc == 1 && $(grep -c . "$W/err") == 3 ]] || { cat "$W/err"; fail "two hosts down: exit $rc, not 1 with three lines"; }
grep -q "$up answered plain HTTP" "$W/err" && grep -q "$closed refused the connection" "$W/err" &&
  tail -n 1 "$W/err" | grep -q "mirror: 0 of 7 images checked, 7 not (.* and 4 more); nothing was downloaded" || { cat "$W/err"; fail "two hosts down"; }
pass "two hosts down: one line each, then the closing line"
echo "unreachable: all checks passed"
