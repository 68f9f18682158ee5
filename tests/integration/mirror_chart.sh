#!/bin/bash
# gpubundle mirror RECIPE: the chart comes from a Helm HTTP repo, the recipe is
# resolved, every image of the closure is mirrored from stand-in registries.
# Usage: mirror_chart.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"

"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" > /dev/null  # the stand-in chart
HELM=$("$PY" "$TOOLS/helmrepo.py" serve --dir "$W/charts" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
trap '"$PY" "$TOOLS/helmrepo.py" stop --dir "$W/charts" >/dev/null 2>&1 || true; cleanup' EXIT
SRC=$(start_registry src)

cat > "$W/site.yaml" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site}
operator:
  version: v26.7.0
  chart: $HELM
target:
  gpus: [H100-SXM5-80GB]
  os: ubuntu22.04
  platforms: [linux/amd64]
driver:
  mode: conventional
  version: "580.105.08"
YAML

# The closure, to seed the stand-in registry (one registry plays every upstream host).
"$GB" resolve "$W/site.yaml" --chart "$W/charts/gpu-operator-v26.7.0.tgz" -o "$W/seedlock.json" > /dev/null
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --lock "$W/seedlock.json" > "$W/seed.json"
"$PY" - "$W/seedlock.json" "$SRC" > "$W/reg.yaml" <<'PYEOF'
import json, sys
hosts = sorted({i["source"].split("/")[0] for i in json.load(open(sys.argv[1]))["images"]})
print("hosts:")
for h in hosts:
    print(f'  "{h}":\n    mirrors: ["http://{sys.argv[2]}"]\n    fallback: false')
PYEOF

"$GB" --store "$W/store" mirror "$W/site.yaml" --registry-config "$W/reg.yaml" 2> "$W/err" || { cat "$W/err"; fail "mirror recipe"; }
[ -f "$W/store/charts/gpu-operator-v26.7.0.tgz" ] || fail "chart not in the store"
cmp -s "$W/store/charts/gpu-operator-v26.7.0.tgz" "$W/charts/gpu-operator-v26.7.0.tgz" || fail "chart bytes differ"
[ -f "$W/site.lock.json" ] || fail "lock not written next to the recipe"
n=$(jget "$W/seed.json" 'len(d["images"])')
got=$(jget "$W/site.lock.json" 'sum(1 for i in d["images"] if i["digest"].startswith("sha256:"))')
[ "$n" = "$got" ] || fail "lock has $got digests, $n images seeded"
src=$(jget "$W/seed.json" 'd["images"][0]["source"]')
want=$(jget "$W/seed.json" 'd["images"][0]["digest"]')
skopeo inspect --raw "oci:$W/store:$src" > "$W/st.raw" || fail "skopeo cannot read $src"
[ "sha256:$(sha256sum < "$W/st.raw" | cut -d' ' -f1)" = "$want" ] || fail "$src: stored bytes differ"
"$GB" --store "$W/store" store fsck > /dev/null 2>&1 || fail "fsck"
pass "recipe + Helm repo chart: $got images mirrored, chart stored, lock written"

# Resolve finds the chart in the store; a second mirror fetches nothing.
"$GB" --store "$W/store" resolve "$W/site.yaml" > /dev/null || fail "resolve from the stored chart"
"$GB" --store "$W/store" mirror "$W/site.yaml" --registry-config "$W/reg.yaml" > "$W/out2" 2>&1 || { cat "$W/out2"; fail "re-mirror"; }
grep -q "0 B downloaded" "$W/out2" || { cat "$W/out2"; fail "re-mirror downloaded"; }
pass "re-mirror of the recipe downloads nothing"
echo "mirror-chart: all checks passed"
