#!/usr/bin/env bash
# Import against skopeo, in one run (not a test):
#   gpubundle import of the bench bundle into an empty loopback registry
#   vs skopeo copy --all oci:LAYOUT:REF docker://... for each image (from an
#   unpacked copy of the same images), and the time of a re-import.
# Goals: >= 3x faster than skopeo; at most 1.2x curl uploading the same blobs in
# parallel (the upload limit; import verifies every blob as well); re-import under
# 0.3 s. Usage: bench/import.sh [BUILD_DIR]
source "$(dirname "$0")/lib.sh" "$@"
"$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key"
site() { "$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["host"])'; }
ours=$(site ours)
peer=$(site peer)
cat "$W/b.bundle" "$W/store/blobs/sha256/"* > /dev/null  # warm the page cache for both
t_import=$(once "$GB" -q import "$W/b.bundle" --registry "http://$ours/site" --pubkey "$W/k.pub" --no-kit)
t_reimport=$(once "$GB" -q import "$W/b.bundle" --registry "http://$ours/site" --pubkey "$W/k.pub" --no-kit)
refs=$("$PY" -c 'import json,sys; print(" ".join(i["source"] for i in json.load(open(sys.argv[1]))["images"]))' "$W/site.lock.json")
copy_all() {
  for ref in $refs; do
    skopeo copy -q --all --preserve-digests --dest-tls-verify=false "oci:$W/store:$ref" "docker://$peer/site/${ref#*/}" ||
      skopeo copy -q --all --dest-tls-verify=false "oci:$W/store:$ref" "docker://$peer/site/${ref#*/}"
  done
}
t_skopeo=$(once copy_all)
t_skopeo_again=$(once copy_all)
# The upload limit: every blob of the store once into a third registry, by
# one curl process (--parallel, 8 at once), after a POST per blob for its
# upload URL (a monolithic upload is POST then PUT).
curl_site=$(site curl)
curl_put() {
  "$PY" - "$curl_site" "$W/store/blobs/sha256" > "$W/put.cfg" <<'PYEOF'
import http.client, os, sys
host, blobs = sys.argv[1], sys.argv[2]
c = http.client.HTTPConnection(host)
for hex_ in sorted(os.listdir(blobs)):
    c.request("POST", "/v2/peer/blobs/blobs/uploads/", headers={"Content-Length": "0"})
    r = c.getresponse(); r.read()
    loc = r.getheader("Location")
    loc = loc if loc.startswith("http") else f"http://{host}{loc}"
    print(f'upload-file = "{blobs}/{hex_}"\nurl = "{loc}{"&" if "?" in loc else "?"}digest=sha256:{hex_}"')
PYEOF
  curl -sSf --parallel --parallel-max 8 -K "$W/put.cfg" > /dev/null
}
t_curl_put=$(once curl_put)
rss_import=$(rss "$GB" -q import "$W/b.bundle" --registry "http://$(site rss)/site" --pubkey "$W/k.pub" --no-kit)
printf '\nbundle: %s MiB, %s images\n' "$(( $(stat -c %s "$W/b.bundle") >> 20 ))" "$(wc -w <<<"$refs")"
printf '%-44s %8s s\n' "gpubundle import (verify + push, empty)" "$t_import" "skopeo copy --all oci: -> docker://, each" "$t_skopeo" \
  "curl --parallel-max 8 upload of every blob" "$t_curl_put" \
  "gpubundle re-import (all present)" "$t_reimport" "skopeo copy again (all present)" "$t_skopeo_again"
echo
goal "import: skopeo / gpubundle" "$(ratio "$t_skopeo / $t_import")" ">=" 3 x
goal "import: gpubundle / curl upload" "$(ratio "$t_import / $t_curl_put")" "<=" 1.2 x
goal "re-import, all present" "$t_reimport" "<" 0.3 " s"
goal "import: peak RSS" "$((rss_import / 1024))" "<" 100 " MiB"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
