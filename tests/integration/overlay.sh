#!/usr/bin/env bash
# The baked node overlay across the air gap: bake --lock stores it as an OCI
# artifact and adds it to the lock; `bundle create` carries it with the
# operator's images; `node-image export --bundle` gives back the very files
# bake wrote (verified, tampering refused); `import` pushes it to a real
# docker-registry, where skopeo reads it with the lock's digest.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
[[ -n $kbuild && -f $kbuild/include/generated/utsrelease.h ]] ||
  { echo "SKIP: no kernel build tree under /lib/modules/*/build (install linux-headers-amd64)"; exit 77; }
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
export SOURCE_DATE_EPOCH=1764460800 TMPDIR=$W/tmp
mkdir -p "$TMPDIR"
VER=580.95.05
REF=localhost/gpubundle/node-overlay:$VER-ubuntu22.04

up=$(start_registry upstream)
site=$(start_registry site)
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null  # the stand-in chart
cat > "$W/site.yaml" <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: overlay-test}
operator: {version: v26.7.0, chart: $W/charts/gpu-operator-v26.7.0.tgz}
target:
  gpus: [H200-SXM-141GB]
  os: ubuntu22.04
  kernels: [$kver]
  platforms: [linux/amd64]
driver: {mode: host, version: "$VER", kernelModuleType: open}
R
"$GB" -q resolve "$W/site.yaml" -o "$W/resolved.lock.json"
"$PY" "$TOOLS/seed.py" --registry "$up" --plain-http --lock "$W/resolved.lock.json" --layer-kb 16 > "$W/seed.json"
printf 'hosts:\n  nvcr.io:\n    mirrors: ["http://%s"]\n    fallback: false\n  registry.k8s.io:\n    mirrors: ["http://%s"]\n    fallback: false\n' \
  "$up" "$up" > "$W/reg.yaml"
store=$W/store
"$GB" --store "$store" -q mirror "$W/site.yaml" --registry-config "$W/reg.yaml" -o "$W/site.lock.json" || fail "mirror"

# Bake with a stand-in toolkit package; --lock adds the artifact to the lock.
bash "$SRC/tests/integration/fixtures/make-installer.sh" "$W/inst" "$VER" >/dev/null
mkdir -p "$W/pkg/DEBIAN" "$W/pkg/usr/bin" "$W/toolkit"
printf 'Package: nvidia-container-toolkit-base\nVersion: 1.17.8-1\nArchitecture: amd64\nMaintainer: t <t@example.com>\nDescription: stand-in\n' \
  > "$W/pkg/DEBIAN/control"
printf '#!/bin/sh\n' > "$W/pkg/usr/bin/nvidia-ctk" && chmod 755 "$W/pkg/usr/bin/nvidia-ctk"
dpkg-deb --root-owner-group --build "$W/pkg" "$W/toolkit/nvidia-container-toolkit-base_1.17.8-1_amd64.deb" >/dev/null
"$GB" --store "$store" --json node-image bake "$W/site.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-$VER.run" \
  --kernel-build "$kbuild" -j 2 -o "$W/baked" --toolkit-packages "$W/toolkit" --lock "$W/site.lock.json" \
  > "$W/bake.json" 2> "$W/bake.err" || { cat "$W/bake.err"; fail "bake"; }
digest=$(jget "$W/bake.json" 'd["artifact"]["digest"]')
[[ $(jget "$W/bake.json" 'd["artifact"]["ref"]') == "$REF" ]] || fail "artifact ref: $(cat "$W/bake.json")"
[[ $(jget "$W/site.lock.json" '[(i["components"], i["origin"], i["digest"]) for i in d["images"] if i["source"] == "'"$REF"'"]') == \
   "[(['nodeOverlay'], 'built', '$digest')]" ]] || fail "the lock does not list the overlay as built with its digest"
skopeo inspect --raw "oci:$store:$REF" > "$W/artifact.json" || fail "skopeo cannot read the stored artifact"
[[ $(jget "$W/artifact.json" 'd["artifactType"]') == application/vnd.gpubundle.node-overlay.v1 ]] || fail "artifactType"
[[ $(jget "$W/artifact.json" '[l["annotations"]["org.opencontainers.image.title"] for l in d["layers"]]') == \
   "['overlay.tar.zst', 'install.sh', 'manifest.json', 'values.yaml', 'packages/nvidia-container-toolkit-base_1.17.8-1_amd64.deb']" ]] ||
  fail "artifact layers: $(cat "$W/artifact.json")"
"$GB" --store "$store" -q store fsck || fail "store fsck after bake"
"$GB" --store "$store" --json store ls > "$W/ls.json"
[[ $(jget "$W/ls.json" '[i["bytes"] > 0 for i in d["images"] if i["ref"] == "'"$REF"'"]') == "[True]" ]] ||
  fail "store ls shows no size for the overlay"
pass "bake --lock: artifact in the store (skopeo reads it), lock lists it as built"

# From the store, and from a bundle on the air-gapped side: the same files.
same_files() {
  for f in overlay.tar install.sh manifest.json values.yaml packages/nvidia-container-toolkit-base_1.17.8-1_amd64.deb; do
    cmp -s "$W/baked/$f" "$1/$f" || fail "$1/$f differs from what bake wrote"
  done
  [[ -x $1/install.sh ]] || fail "$1/install.sh is not executable"
}
"$GB" --store "$store" -q node-image export -o "$W/from-store" || fail "export from the store"
same_files "$W/from-store"
"$GB" keys generate --out "$W/release" >/dev/null
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/site.bundle" --key "$W/release.key" || fail "bundle create"
"$GB" --json bundle inspect "$W/site.bundle" > "$W/inspect.json"
[[ $(jget "$W/inspect.json" '[i["digest"] for i in d["images"] if i["ref"] == "'"$REF"'"]') == "['$digest']" ]] ||
  fail "the bundle does not carry the overlay"
"$GB" -q node-image export "$REF" --bundle "$W/site.bundle" --pubkey "$W/release.pub" -o "$W/from-bundle" ||
  fail "export from the bundle"
same_files "$W/from-bundle"
pass "node-image export from the store and from a verified bundle: the files bake wrote"

# Refusals: no trusted key, an unknown ref, a tampered bundle (nothing written).
set +e
"$GB" node-image export --bundle "$W/site.bundle" -o "$W/x1" 2> "$W/err"; rc=$?
[[ $rc == 2 ]] && grep -q "needs --pubkey or --keyring" "$W/err" || fail "export without a trusted key: rc $rc $(cat "$W/err")"
"$GB" --store "$store" node-image export localhost/gpubundle/node-overlay:nope -o "$W/x2" 2> "$W/err"; rc=$?
[[ $rc == 2 ]] && grep -q "localhost/gpubundle/node-overlay:nope: no such node overlay in store" "$W/err" ||
  fail "unknown ref: rc $rc $(cat "$W/err")"
image=$(jget "$W/site.lock.json" '[i["source"] for i in d["images"] if i["origin"] == "upstream"][0]')
"$GB" --store "$store" node-image export "$image" -o "$W/x3" 2> "$W/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "$image in store .* is not a node overlay" "$W/err" || fail "an operator image as an overlay: rc $rc $(cat "$W/err")"
blob=$(jget "$W/artifact.json" 'd["layers"][0]["digest"]')
offset=$("$PY" -c 'import sys, tarfile
for m in tarfile.open(sys.argv[1]):
    if m.name == sys.argv[2]: print(m.offset_data + 100)' "$W/site.bundle" "oci/blobs/sha256/${blob#sha256:}")
[[ -n $offset ]] || fail "overlay blob not found in the bundle"
cp "$W/site.bundle" "$W/tampered.bundle"
byte=$(od -An -tu1 -j "$offset" -N1 "$W/site.bundle" | tr -d ' ')
printf "\\$(printf %03o $((byte ^ 1)))" | dd of="$W/tampered.bundle" bs=1 seek="$offset" conv=notrunc status=none
cmp -s "$W/site.bundle" "$W/tampered.bundle" && fail "the tampered copy is unchanged"
set +e
"$GB" node-image export --bundle "$W/tampered.bundle" --pubkey "$W/release.pub" -o "$W/x4" 2> "$W/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "export refused: nothing was written" "$W/err" || fail "tampered bundle: rc $rc $(cat "$W/err")"
[[ ! -e $W/x4 ]] || fail "a tampered bundle wrote files"
set +e
"$GB" --store "$store" -q node-image export -o "$W/from-store" 2> "$W/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "not an empty folder" "$W/err" || fail "export into a used folder: rc $rc $(cat "$W/err")"
pass "export refuses: no key (2), unknown ref (2), not an overlay (2), a used folder (2), tampered bundle (1, nothing written)"

# A second overlay in a delta bundle: its unchanged files (values.yaml, the package) still travel.
"$GB" --store "$store" -q node-image bake "$W/site.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-$VER.run" \
  --kernel-build "$kbuild" -j 2 -o "$W/baked2" --toolkit-packages "$W/toolkit" --os-tag ubuntu24.04 --lock "$W/site.lock.json" \
  2> "$W/bake2.err" || { cat "$W/bake2.err"; fail "second bake"; }
cmp -s "$W/baked/overlay.tar" "$W/baked2/overlay.tar" ||
  fail "two bakes of the same inputs (in different sandboxes) gave different overlays"
"$GB" --store "$store" -q bundle create "$W/site.lock.json" -o "$W/delta.bundle" --key "$W/release.key" --since "$W/site.bundle" ||
  fail "delta bundle"
[[ $("$GB" --json bundle inspect "$W/delta.bundle" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["delta"])') == True ]] ||
  fail "not a delta"
"$GB" -q node-image export "localhost/gpubundle/node-overlay:$VER-ubuntu24.04" --bundle "$W/delta.bundle" --pubkey "$W/release.pub" \
  -o "$W/from-delta" || fail "export from the delta bundle"
for f in overlay.tar values.yaml install.sh packages/nvidia-container-toolkit-base_1.17.8-1_amd64.deb; do
  cmp -s "$W/baked2/$f" "$W/from-delta/$f" || fail "from-delta/$f"
done
pass "a second bake is byte-identical; a delta bundle carries the whole second overlay; export reads it from the delta alone"

# Import: the overlay lands at the site with the lock's digest; the kit's values do not name it.
"$GB" --json import "$W/site.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub" -o "$W/kit" > "$W/import.json" ||
  fail "import"
site_ref=$site/gpu/gpubundle/node-overlay:$VER-ubuntu22.04
skopeo inspect --tls-verify=false --raw "docker://$site_ref" > "$W/site-artifact.json" || fail "skopeo cannot read $site_ref"
[[ sha256:$(sha256sum < "$W/site-artifact.json" | cut -d' ' -f1) == "$digest" ]] || fail "site digest differs from the lock's"
layer=$(jget "$W/artifact.json" 'd["layers"][0]["digest"]')
curl -sf "http://$site/v2/gpu/gpubundle/node-overlay/blobs/$layer" | zstd -dc | cmp -s - "$W/baked/overlay.tar" ||
  fail "the overlay blob at the site does not decompress to overlay.tar"
[[ -f $W/kit/values.yaml ]] || fail "import wrote no kit"
grep -q "node-overlay" "$W/kit/values.yaml" && fail "the kit's values name the overlay"
pass "import: the overlay artifact at the site with the lock's digest, its blob decompresses to overlay.tar"
echo "PASS node-overlay-transport"
