#!/usr/bin/env bash
# Import against skopeo, in one run (not a test):
#   gpubundle import of the bench bundle into an empty loopback registry
#   vs skopeo copy --all oci:LAYOUT:REF docker://... for each image (from an
#   unpacked copy of the same images), and the time of a re-import.
# Goals: >= 3x faster than skopeo; re-import under 1 s. Usage: bench/import.sh [BUILD_DIR]
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
rss_import=$(rss "$GB" -q import "$W/b.bundle" --registry "http://$(site rss)/site" --pubkey "$W/k.pub" --no-kit)
printf '\nbundle: %s MiB, %s images\n' "$(( $(stat -c %s "$W/b.bundle") >> 20 ))" "$(wc -w <<<"$refs")"
printf '%-44s %8s s\n' "gpubundle import (verify + push, empty)" "$t_import" "skopeo copy --all oci: -> docker://, each" "$t_skopeo" \
  "gpubundle re-import (all present)" "$t_reimport" "skopeo copy again (all present)" "$t_skopeo_again"
printf '\nskopeo / gpubundle: %sx (goal >= 3); re-import %s s (goal < 1 s); peak RSS of import %s MiB\n' \
  "$(ratio "$t_skopeo / $t_import")" "$t_reimport" "$((rss_import / 1024))"
