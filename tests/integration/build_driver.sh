#!/usr/bin/env bash
# gpubundle build --installer: the precompiled recipe's driver image is built
# here (kbuild against Debian's headers) inside the pipeline, not pulled; the
# lock records it as built; after import the tag the operator composes with
# usePrecompiled=true (<driver.version>-<kernel>-<osTag> under
# driver.repository/driver.image from the kit's values) resolves at the site
# to our image. With driver.mode host, build bakes the node overlay instead
# and the bundle carries it.
set -euo pipefail
GB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
command -v docker-registry skopeo >/dev/null || { echo "SKIP: docker-registry or skopeo missing"; exit 77; }
kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
[[ -n $kbuild && -f $kbuild/include/generated/utsrelease.h ]] ||
  { echo "SKIP: no kernel build tree under /lib/modules/*/build (install linux-headers-amd64)"; exit 77; }
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
W=$(mktemp -d -t gb-build-driver.XXXXXX)
trap 'standin_stop "$W"; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
export TMPDIR=$W SOURCE_DATE_EPOCH=1764460800

# The precompiled example, for the kernel whose headers are here.
sed "s/^  kernels: \[.*\]/  kernels: [$kver]/" "$HERE/../../examples/precompiled.yaml" > "$W/in.yaml"
standin_start "$W" v26.7.0 "$W/in.yaml"
bash "$HERE/fixtures/make-installer.sh" "$W/inst" 580.95.05 >/dev/null
"$GB" keys generate --out "$W/release" >/dev/null
cp "$W/recipe.yaml" "$W/conventional.yaml"
sed -i 's/^  mode: precompiled/  mode: conventional\n  version: "580.95.05"/' "$W/conventional.yaml"
set +e
"$GB" --store "$W/store" build "$W/conventional.yaml" -o "$W/x.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" --kernel-build "$kbuild" 2> "$W/err"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "driver.mode is conventional" "$W/err" || fail "--installer with a conventional recipe: rc $rc $(cat "$W/err")"
echo "ok: --installer with a conventional recipe is refused"

"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" --kernel-build "$kbuild" \
  --driver-base nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 > "$W/build.json" 2> "$W/build.err" || { cat "$W/build.err"; fail "build"; }
[[ $(jget "$W/build.json" 'sorted(d["phases"])') == "['bundle', 'driver', 'kit', 'mirror', 'resolve', 'verify']" ]] || fail "phases"
[[ $(jget "$W/build.json" 'd["builtDriverImages"]') == 1 ]] || fail "builtDriverImages"
ref=nvcr.io/nvidia/driver:580-$kver-ubuntu22.04
lock=$W/site-precompiled.lock.json
[[ $(jget "$lock" '[i["origin"] for i in d["images"] if i["source"] == "'"$ref"'"]') == "['built']" ]] || fail "lock origin of $ref"
digest=$(jget "$lock" '[i["digest"] for i in d["images"] if i["source"] == "'"$ref"'"][0]')
stored=sha256:$(skopeo inspect --raw "oci:$W/store:$ref" | sha256sum | cut -d' ' -f1)
[[ $stored == "$digest" ]] || fail "store $stored, lock $digest"
echo "ok: build --installer: the driver step built $ref, the lock records it as built with its digest"

# The lock is written once, when every image has its digest: a build that stops
# at the driver step (after mirror) writes none.
"$GB" --store "$W/store" -q build "$W/recipe.yaml" -o "$W/stopped.bundle" --key "$W/release.key" --lock "$W/stopped.lock.json" \
  --registry-config "$W/registries.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" --kernel-build "$W/no-such-tree" \
  --driver-base nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 2> "$W/stopped.err" && fail "build with a missing kernel tree succeeded"
grep -q "build stopped at step 'driver'" "$W/stopped.err" || fail "the stopped build: $(cat "$W/stopped.err")"
[[ ! -e $W/stopped.lock.json ]] || fail "a build stopped at the driver step wrote the lock"
echo "ok: a build stopped at the driver step leaves no half-filled lock"

"$GB" -q import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" || fail "import"
# What the operator pulls: driver.repository/driver.image:driver.version-<kernel>-<osTag>.
values=$W/kit/values.yaml
val() { "$PY" - "$values" "$1" <<'PYEOF'
import re, sys
text, key = open(sys.argv[1]).read(), sys.argv[2]
block = re.search(r"(?ms)^driver:\n((?:  .*\n|\n)*)", text).group(1)
print(re.search(r"(?m)^  " + key + r":\s*\"?([^\"\n]+)\"?\s*$", block).group(1))
PYEOF
}
[[ $(val usePrecompiled) == true ]] || fail "values: driver.usePrecompiled"
pulled=$(val repository)/$(val image):$(val version)-$kver-ubuntu22.04
[[ $pulled == "$SITE/gpu/nvidia/driver:580-$kver-ubuntu22.04" ]] || fail "the operator would pull $pulled"
skopeo inspect --tls-verify=false --raw "docker://$pulled" > "$W/site-manifest.json" || fail "$pulled is not at the site"
[[ sha256:$(sha256sum < "$W/site-manifest.json" | cut -d' ' -f1) == "$digest" ]] || fail "site digest differs from the lock"
skopeo inspect --tls-verify=false --config "docker://$pulled" > "$W/config.json"
env=$(jget "$W/config.json" '" ".join(d["config"]["Env"])')
[[ $env == *DRIVER_VERSION=580.95.05* && $env == *KERNEL_VERSION=$kver* ]] || fail "config env: $env"
[[ $(jget "$W/config.json" 'd["config"]["Labels"]["io.gpubundle.driver.installer-sha256"]') == \
   $(sha256sum < "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" | cut -d' ' -f1) ]] || fail "installer label"
echo "ok: after import, the tag the operator composes resolves to the image built here"

# driver.mode host: --installer bakes the node overlay, which the bundle carries.
sed -e 's/^  mode: precompiled/  mode: host\n  version: "580.95.05"/' -e '/^  branch:/d' -e 's/^metadata: {name: .*}/metadata: {name: site-host}/' \
  "$W/recipe.yaml" > "$W/host.yaml"
"$GB" --store "$W/store" --json build "$W/host.yaml" -o "$W/host.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" --installer "$W/inst/NVIDIA-Linux-x86_64-580.95.05.run" --kernel-build "$kbuild" \
  > "$W/host.json" 2> "$W/host.err" || { cat "$W/host.err"; fail "build (host)"; }
[[ $(jget "$W/host.json" 'sorted(d["phases"])') == "['bake', 'bundle', 'kit', 'mirror', 'resolve', 'verify']" ]] || fail "host phases"
overlay=$(jget "$W/host.json" 'd["nodeOverlay"]')
[[ $overlay == "$W/site-host-node-overlay" && -x $overlay/install.sh ]] || fail "overlay folder: $overlay"
oref=localhost/gpubundle/node-overlay:580.95.05-ubuntu22.04
[[ $(jget "$W/site-host.lock.json" '[(i["components"], i["origin"]) for i in d["images"] if i["source"] == "'"$oref"'"]') == \
   "[(['nodeOverlay'], 'built')]" ]] || fail "host lock lacks the overlay"
"$GB" -q node-image export --bundle "$W/host.bundle" --pubkey "$W/release.pub" -o "$W/exported" || fail "export from the host bundle"
cmp -s "$overlay/overlay.tar" "$W/exported/overlay.tar" || fail "the bundle's overlay differs from the one build wrote"
echo "ok: build --installer with driver.mode host bakes the overlay, and the bundle carries it"
echo "PASS build-driver"
