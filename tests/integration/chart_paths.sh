#!/bin/bash
# One path from a recipe or lock to its chart and lock, for every command:
# {resolve, mirror, bundle create, build, overrides} x chart source {folder,
# .tgz, Helm HTTP repository, oci://} x {recipe, lock} as the argument, run with
# the real binary against one seeded docker-registry (every upstream host, and
# the oci:// chart) and a Helm HTTP repository on loopback.
# Usage: chart_paths.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"
V=v26.7.0  # the stand-in chart (tests/tools/chart.py): nothing outside the repository
TGZ=$W/charts/gpu-operator-$V.tgz

# expect RC NAME CMD...: runs CMD, output in $W/out; fails unless it exits RC.
expect() {
  local want=$1 name=$2 rc=0
  shift 2
  "$@" > "$W/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$W/out"; fail "$name: exit $rc, want $want"; }
}
images() { jget "$1" 'sorted(i["source"] for i in d["images"])'; }

"$PY" "$TOOLS/helmrepo.py" pack --release $V --out "$W/charts" > /dev/null
HELM=$("$PY" "$TOOLS/helmrepo.py" serve --dir "$W/charts" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["url"])')
trap '"$PY" "$TOOLS/helmrepo.py" stop --dir "$W/charts" >/dev/null 2>&1 || true; cleanup' EXIT
SRC=$(start_registry src)
OCI=$("$PY" "$TOOLS/helmrepo.py" push-oci --registry "$SRC" --plain-http --chart "$TGZ" --repo nvidia/helm | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["ref"])')
mkdir -p "$W/unpacked" && tar -xzf "$TGZ" -C "$W/unpacked"  # the folder source: gpu-operator/
"$GB" -q keys generate --out "$W/release" > /dev/null

recipe() {  # recipe FILE NAME CHART
  mkdir -p "$(dirname "$1")"
  cat > "$1" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: $2}
operator:
  version: $V
  chart: $3
target:
  gpus: [H100-SXM5-80GB]
  os: ubuntu22.04
  platforms: [linux/amd64]
driver:
  mode: conventional
  version: "580.105.08"
destination: {registry: "registry.site:5000", prefix: gpu}
YAML
}

# Seed the closure once (one registry plays every upstream host).
recipe "$W/seed/seed.yaml" seed "$TGZ"
"$GB" -q resolve "$W/seed/seed.yaml" -o "$W/seed.lock.json"
"$PY" "$TOOLS/seed.py" --registry "$SRC" --plain-http --lock "$W/seed.lock.json" --layer-kb 4 -j 8 > "$W/seed.json"
"$PY" - "$W/seed.lock.json" "$SRC" > "$W/reg.yaml" <<'PYEOF'
import json, sys
hosts = sorted({i["source"].split("/")[0] for i in json.load(open(sys.argv[1]))["images"]})
print("hosts:")
for h in hosts:
    print(f'  "{h}":\n    mirrors: ["http://{sys.argv[2]}"]\n    fallback: false')
print(f'  "{sys.argv[2]}":\n    plainHttp: true')  # the oci:// chart
PYEOF
WANT=$(images "$W/seed.lock.json")
pass "stand-in upstream: $(jget "$W/seed.json" 'len(d["images"])') images, Helm repo $HELM, chart at $OCI"

# Issue 12 item 2: mirror RECIPE --chart FILE, then bundle create LOCK.
recipe "$W/item2/site.yaml" item2 "https://helm.example.invalid/nvidia"
expect 0 "mirror RECIPE --chart FILE" "$GB" --store "$W/item2/store" mirror "$W/item2/site.yaml" --chart "$TGZ" --registry-config "$W/reg.yaml"
cmp -s "$W/item2/store/charts/gpu-operator-$V.tgz" "$TGZ" || fail "mirror --chart: chart not stored"
expect 0 "bundle create LOCK after mirror --chart" "$GB" --store "$W/item2/store" bundle create "$W/item2/item2.lock.json" -o "$W/item2/b.bundle" --key "$W/release.key"
pass "mirror RECIPE --chart FILE stores the chart; bundle create LOCK finds it"

for src in folder tgz helm oci; do
  d=$W/$src
  case $src in
    folder) chart=../unpacked/gpu-operator remote=0 ;;  # relative to the recipe
    tgz) chart=../charts/gpu-operator-$V.tgz remote=0 ;;
    helm) chart=$HELM remote=1 ;;
    oci) chart=$OCI remote=1 ;;
  esac
  # The recipe file's name differs from metadata.name: the lock is named after metadata.name.
  recipe "$d/my-site.yaml" "site-$src" "$chart"
  R=$d/my-site.yaml L=$d/site-$src.lock.json

  # resolve: no network and no store writes; a remote chart needs the store's copy.
  if [ $remote = 1 ]; then
    expect 2 "$src: resolve RECIPE before mirror" "$GB" --store "$d/store" resolve "$R"
    grep -q 'is remote and not in the store yet: run `gpubundle mirror`' "$W/out" || { cat "$W/out"; fail "$src: resolve hint"; }
  else
    expect 0 "$src: resolve RECIPE" "$GB" --store "$d/store" resolve "$R" -o "$d/resolved.json"
    [ "$(images "$d/resolved.json")" = "$WANT" ] || fail "$src: resolve gave other images"
  fi
  [ ! -e "$d/store" ] || fail "$src: resolve wrote a store"

  # mirror RECIPE: chart into the store, lock at <recipe folder>/<metadata.name>.lock.json.
  expect 0 "$src: mirror RECIPE" "$GB" --store "$d/store" mirror "$R" --registry-config "$W/reg.yaml"
  [ -f "$L" ] || fail "$src: mirror wrote no $L"
  [ ! -e "$d/my-site.lock.json" ] || fail "$src: mirror named the lock after the file"
  stored=$d/store/charts/gpu-operator-$V.tgz
  if [ $src = folder ]; then
    grep -qx 'gpu-operator/Chart.yaml' <(tar -tzf "$stored") || fail "folder: the stored chart is not a packed chart"
  else
    cmp -s "$stored" "$TGZ" || fail "$src: stored chart differs from the published .tgz"
  fi
  [ "$(jget "$L" 'd["chart"]["sha256"]')" = "$(sha256sum < "$stored" | cut -d' ' -f1)" ] || fail "$src: lock chart.sha256 is not the stored chart's"
  [ "$(jget "$L" 'sum(1 for i in d["images"] if i["digest"])')" = "$(jget "$L" 'len(d["images"])')" ] || fail "$src: digests missing"
  [ "$(images "$L")" = "$WANT" ] || fail "$src: mirror gave other images"

  # resolve again: same lock as mirror's (digests and site digests aside), remote charts now from the store.
  expect 0 "$src: resolve RECIPE after mirror" "$GB" --store "$d/store" resolve "$R" -o "$d/resolved.json"
  "$PY" - "$d/resolved.json" "$L" <<'PYEOF' || fail "$src: resolve and mirror disagree"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for i in b["images"]:
    i["digest"] = ""
    i.pop("siteDigest", None)  # mirror's too: the stand-in's indexes have platforms the recipe leaves out
sys.exit(0 if a == b else 1)
PYEOF
  expect 2 "$src: resolve LOCK" "$GB" --store "$d/store" resolve "$L"
  grep -q "is a lock; resolve reads a recipe" "$W/out" || { cat "$W/out"; fail "$src: resolve LOCK message"; }

  # bundle create and overrides, given the recipe or its lock.
  for arg in R L; do
    in=${!arg}
    expect 0 "$src: bundle create $arg" "$GB" --store "$d/store" bundle create "$in" -o "$d/$arg.bundle" --key "$W/release.key"
    grep -qx "charts/gpu-operator-$V.tgz" <(tar -tf "$d/$arg.bundle") || fail "$src: bundle from $arg has no chart"
    expect 0 "$src: overrides $arg" "$GB" --store "$d/store" overrides "$in" --registry site.test:5000/gpu -o "$d/kit-$arg"
    cmp -s "$d/kit-$arg/gpu-operator-$V.tgz" "$stored" || fail "$src: overrides $arg: kit chart differs from the stored one"
  done
  cmp -s "$d/R.bundle" "$d/L.bundle" || fail "$src: bundle create RECIPE and LOCK differ"
  expect 0 "$src: bundle verify" "$GB" bundle verify "$d/R.bundle" --pubkey "$W/release.pub"

  # A lock alone, on a fresh store: the chart comes from the lock's chart.source.
  cp "$L" "$d/copy.lock.json"
  expect 0 "$src: mirror LOCK (fresh store)" "$GB" --store "$d/store2" mirror "$d/copy.lock.json" --registry-config "$W/reg.yaml"
  cmp -s "$d/store2/charts/gpu-operator-$V.tgz" "$stored" || fail "$src: mirror LOCK stored another chart"
  expect 0 "$src: bundle create after mirror LOCK" "$GB" --store "$d/store2" bundle create "$d/copy.lock.json" -o "$d/c.bundle" --key "$W/release.key"
  if [ $remote = 0 ]; then
    expect 0 "$src: overrides LOCK, no store" "$GB" --store "$d/nostore" overrides "$L" --registry site.test:5000/gpu -o "$d/kit-nostore"
    cmp -s "$d/kit-nostore/gpu-operator-$V.tgz" "$stored" || fail "$src: overrides without a store: other chart"
  else
    expect 2 "$src: overrides LOCK, no store" "$GB" --store "$d/nostore" overrides "$L" --registry site.test:5000/gpu -o "$d/kit-nostore"
    grep -q 'is remote and not in the store yet' "$W/out" || { cat "$W/out"; fail "$src: overrides hint"; }
  fi

  # build, given the recipe (lock next to it, by the same rule) or a lock, on fresh stores.
  rm -f "$L"
  expect 0 "$src: build RECIPE" "$GB" --store "$d/store3" build "$R" -o "$d/build.bundle" --key "$W/release.key" --registry-config "$W/reg.yaml"
  [ -f "$L" ] || fail "$src: build wrote no $L"
  cmp -s "$d/store3/charts/gpu-operator-$V.tgz" "$stored" || fail "$src: build stored another chart"
  expect 0 "$src: build LOCK" "$GB" --store "$d/store4" build "$d/copy.lock.json" -o "$d/build-lock.bundle" --key "$W/release.key" --registry-config "$W/reg.yaml"
  cmp -s "$d/store4/charts/gpu-operator-$V.tgz" "$stored" || fail "$src: build LOCK stored another chart"
  expect 2 "$src: build LOCK --installer" "$GB" --store "$d/store4" build "$L" -o "$d/x.bundle" --key "$W/release.key" --installer /nonexistent.run
  grep -q "needs the recipe" "$W/out" || { cat "$W/out"; fail "$src: build LOCK --installer message"; }
  pass "$src: resolve, mirror, bundle create, overrides, build with the recipe and with the lock"
done

# A lock whose chart is not the one it was resolved against is refused.
printf 'x' >> "$W/tgz/store/charts/gpu-operator-$V.tgz"
expect 2 "overrides with a changed chart" "$GB" --store "$W/tgz/store" overrides "$W/tgz/site-tgz.lock.json" --registry site.test:5000/gpu -o "$W/kit-bad"
grep -q "is not the one the lock was resolved against" "$W/out" || { cat "$W/out"; fail "changed chart message"; }
pass "a chart other than the lock's is refused"
echo "chart-paths: all checks passed"
