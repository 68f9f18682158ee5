#!/usr/bin/env bash
# The DOCA driver's build on the node, from the site package repository
# (issue 29.2): `gpubundle build` of a recipe with a network section whose
# ofedDriver is not precompiled, its packages from the stand-in apt
# repository of real Debian packages (tests/tools/apt_standin.py) and its
# network-operator chart and image list from ../shared, in place ->
#   - the build adds what doca-driver-build's entrypoint.sh installs:
#     pkg-config, linux-headers-<kernel> and gcc-<major> of the kernel's own
#     compiler (read from the headers' .config; the lock has no warning
#     about it), and leaves out linux-modules-extra-<kernel>, which Debian
#     does not have (the script installs it only if it exists);
#   - bundle -> import into a loopback site registry -> the kit's
#     network-repo/ files and the NicClusterPolicy's ofedDriver.repoConfig;
#   - the repository image pulled back from the site registry, its last
#     layer served on loopback, and real apt-get, configured only by the
#     kit's network-repo/ files (URL and key path moved to this machine),
#     updates and downloads pkg-config, the headers and gcc-12 on an empty
#     dpkg status: the repository alone satisfies what the build installs.
# Skips (77) without the stand-in's tools or ../shared/upstream.
# Usage: package_repo_doca.sh PATH/TO/gpubundle
set -euo pipefail
GB=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
# shellcheck source=tests/integration/package_repo_lib.sh
source "$HERE/package_repo_lib.sh"
for tool in docker-registry skopeo apt-ftparchive apt-get gpg gpgv xz; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh)"; exit 77; }
done
up=${GB_SHARED_DIR:-$HERE/../../../shared}/upstream
NET=$up/network-operator/v26.4.1
[[ -d $NET/chart ]] || { echo "SKIP: $NET/chart is absent (tests read ../shared in place)"; exit 77; }
W=$(mktemp -d -t gb-package-repo-doca.XXXXXX)
cleanup() {
  bash "$TOOLS/rpm-standin.sh" stop "$W/http" >/dev/null 2>&1 || true
  "$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true
  standin_stop "$W"
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

apt_standin_up --with pkg-config

# The DOCA driver only (all its images are nvcr.io's, which the stand-in
# serves); NFD is the GPU Operator's. The GPU driver's packages: the headers.
cat > "$W/fabric.yaml" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site-doca}
operator:
  version: v26.7.0
target: {gpus: [H100-SXM5-80GB], os: ubuntu22.04, kernels: [$K], platforms: [linux/amd64]}
driver: {mode: conventional, version: "580.105.08"}
packages:
  sources:
    - {name: standin, type: apt, url: "$APT_URL", suites: [$APT_SUITE], components: [$APT_COMPONENT], keyring: "$APT_KEYRING"}
  kernelPackages: ["linux-headers-{kernel}"]
  server: {image: "nvcr.io/gpubundle-test/httpd:1.36.1"}
network:
  version: v26.4.1
  chart: $NET/chart
  releaseFile: $NET/hack/release.yaml
  operands: [ofedDriver]
YAML
standin_start "$W" v26.7.0 "$W/fabric.yaml"
"$GB" keys generate --out "$W/release" >/dev/null
export SOURCE_DATE_EPOCH=1764460800
"$GB" --store "$W/store" -q build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" 2> "$W/build.err" || { cat "$W/build.err"; fail "build"; }
lock=$W/site-doca.lock.json
"$PY" - "$lock" "$K" <<'PYEOF' || fail "the lock"
import json, sys
lock, k = json.load(open(sys.argv[1])), sys.argv[2]
assert lock["packageRepo"]["format"] == "apt", lock.get("packageRepo")
assert lock["network"]["docaDriver"]["precompiled"] is False, lock["network"]
assert not [w for w in lock["warnings"] if "compiler" in w], lock["warnings"]
PYEOF
pass "build: a site repository for the DOCA build on the node (kernel $K)"

"$GB" -q import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" || fail "import"
KIT=$W/kit
for f in network-repo/gpubundle.list network-repo/gpubundle-repo.asc; do [ -f "$KIT/$f" ] || fail "the kit has no $f: $(ls "$KIT")"; done
"$PY" - "$KIT" > "$W/kit.env" <<'PYEOF' || fail "kit: NicClusterPolicy / package-repo.yaml"
import sys, yaml
kit = sys.argv[1]
ofed = yaml.safe_load(open(kit + "/nic-cluster-policy.yaml"))["spec"]["ofedDriver"]
assert ofed["repoConfig"] == {"name": "gpubundle-repo-config"}, ofed
assert "forcePrecompiled" not in ofed, ofed
# network.sh makes the ConfigMap of network-repo/: the same sources as the GPU driver's.
cm = list(yaml.safe_load_all(open(kit + "/package-repo.yaml")))[0]
assert cm["data"]["gpubundle.list"] == open(kit + "/network-repo/gpubundle.list").read()
image = list(yaml.safe_load_all(open(kit + "/package-repo.yaml")))[1]["spec"]["template"]["spec"]["containers"][0]["image"]
name, digest = image.split("@")
print("IMAGE_BY_DIGEST=" + name.rsplit(":", 1)[0] + "@" + digest)
PYEOF
source "$W/kit.env"
pass "kit: network-repo/ and ofedDriver.repoConfig"

# The repository as the site has it: the image's last layer, served on loopback.
layer=$(repo_image_layer "$IMAGE_BY_DIGEST" "$W/pulled")
mkdir -p "$W/served"
tar -xzf "$layer" -C "$W/served"
ROOT=$W/served/srv/gpubundle-repo
for p in pkg-config "linux-headers-$K" gcc-12; do
  compgen -G "$ROOT/pool/${p}_*.deb" >/dev/null || fail "the site repository lacks $p: $(ls "$ROOT/pool" | head -50)"
done
compgen -G "$ROOT/pool/linux-modules-extra-*" >/dev/null && fail "linux-modules-extra came from nowhere"
URL=$(bash "$TOOLS/rpm-standin.sh" serve "$W/http" site "$ROOT" /dists/gpubundle/Release)

# apt as the DOCA build runs it, with the kit's network-repo/ as sources.list.d.
A=$W/aptroot
mkdir -p "$A/sources.list.d" "$A/state/lists/partial" "$A/cache/archives/partial"
cp "$KIT/network-repo/gpubundle-repo.asc" "$A/sources.list.d/"
: > "$A/status"
: > "$A/sources.list"
sed -E -e "s#/etc/apt/sources.list.d/#$A/sources.list.d/#" -e "s#http://[^ ]+/ #$URL/ #" "$KIT/network-repo/gpubundle.list" \
  > "$A/sources.list.d/gpubundle.list"
grep -q "$URL/ gpubundle main" "$A/sources.list.d/gpubundle.list" || fail "could not point the sources at the served copy"
apt_private update > "$W/apt-update.log" 2>&1 || { cat "$W/apt-update.log"; fail "apt-get update against the kit's network-repo/"; }
apt_private install -y --download-only pkg-config "linux-headers-$K" gcc-12 > "$W/apt-install.log" 2>&1 \
  || { cat "$W/apt-install.log"; fail "apt-get install --download-only pkg-config linux-headers-$K gcc-12"; }
for p in pkg-config "linux-headers-$K" gcc-12; do
  compgen -G "$A/cache/archives/${p}_*.deb" >/dev/null || fail "apt did not fetch $p"
done
pass "real apt: update, then pkg-config, linux-headers-$K and gcc-12 ($(ls "$A/cache/archives"/*.deb | wc -l) packages) from the imported image"
echo "package-repo-doca: ok"
