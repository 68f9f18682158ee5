#!/usr/bin/env bash
# The demo's story with assertions: gpubundle build against a stand-in
# upstream, verify, import into a site registry; then the same build again
# must download nothing and give a byte-identical bundle.
set -euo pipefail
GB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
command -v docker-registry skopeo >/dev/null || { echo "SKIP: docker-registry or skopeo missing"; exit 77; }
W=$(mktemp -d -t gb-e2e.XXXXXX)
trap 'standin_stop "$W"; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

standin_start "$W" v26.7.0 "$HERE/../../examples/precompiled.yaml"
"$GB" keys generate --out "$W/release" >/dev/null
export SOURCE_DATE_EPOCH=1764460800
"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" > "$W/build1.json" || fail "build"
[[ $(jget "$W/build1.json" 'd["bytesDownloaded"] > 0') == True ]] || fail "first build downloaded nothing"
[[ $(jget "$W/build1.json" 'sorted(d["phases"])') == "['bundle', 'kit', 'mirror', 'resolve', 'verify']" ]] || fail "phases"
"$GB" bundle verify "$W/site.bundle" --pubkey "$W/release.pub" || fail "bundle verify"
echo "ok: build, verify"

"$GB" --json import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" > "$W/import.json" || fail "import"
lock=$W/site-precompiled.lock.json
while read -r src digest; do
  dst=$SITE/gpu/${src#*/}
  got=$(skopeo inspect --raw --tls-verify=false "docker://$dst" | sha256sum | cut -d' ' -f1)
  [[ "sha256:$got" == "$digest" ]] || fail "$dst: sha256:$got, the lock's site digest is $digest"
done < <(jget "$lock" '"\n".join(i["source"] + " " + i.get("siteDigest", i["digest"]) for i in d["images"])')
echo "ok: every image at the site with the lock's site digests (siteDigest where only some platforms travel)"

# The values point only at the site registry.
"$PY" - "$W/kit/values.yaml" "$SITE" <<'PYEOF' || fail "values.yaml names a registry other than the site"
import re, sys
text, site = open(sys.argv[1]).read(), sys.argv[2]
repos = re.findall(r"(?m)^\s*repository:\s*\"?([^\"\s]+)", text)
assert repos, "no repository keys"
bad = [r for r in repos if not r.startswith(site + "/")]
assert not bad, bad
PYEOF
echo "ok: values point only at $SITE"

# Nothing changed: nothing downloaded, byte-identical bundle.
"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/again.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" > "$W/build2.json" || fail "second build"
[[ $(jget "$W/build2.json" 'd["bytesDownloaded"]') == 0 ]] || fail "second build downloaded $(jget "$W/build2.json" 'd["bytesDownloaded"]') bytes"
cmp "$W/site.bundle" "$W/again.bundle" || fail "second bundle is not byte-identical"
echo "ok: re-build downloads nothing and is byte-identical"
echo "e2e: ok"
