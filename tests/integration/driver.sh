#!/usr/bin/env bash
# gpubundle driver build, end to end with real tools: a stand-in installer
# (NVIDIA-fork header) built with makeself, kbuild against Debian's
# linux-headers, in-process signing checked three ways (modinfo signer,
# byte-identical to the kernel's scripts/sign-file, openssl cms -verify), the
# image in the store checked with skopeo and unpacked with umoci; then the bad
# inputs, each with a clear error and the store left as it was.
# Usage: driver.sh PATH/TO/gpubundle     (env GB_SOURCE_DIR: the repository)
set -euo pipefail
gb=$(readlink -f "${1:?usage: driver.sh gpubundle}")
src=${GB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
if [ -z "$kbuild" ] || [ ! -f "$kbuild/include/generated/utsrelease.h" ]; then
  echo "SKIP: no kernel build tree under /lib/modules/*/build (install linux-headers-amd64)"
  exit 77
fi
for t in makeself skopeo umoci modinfo openssl strip; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
export SOURCE_DATE_EPOCH=1700000000 TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

VER=580.95.05
bash "$src/tests/integration/fixtures/make-installer.sh" "$work/inst" "$VER" >/dev/null
nvrun=$work/inst/NVIDIA-Linux-x86_64-$VER-nv.run
uprun=$work/inst/NVIDIA-Linux-x86_64-$VER.run

recipe() {  # recipe FILE KERNEL
  cat > "$1" <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: driver-test}
operator: {version: v26.7.0}
target:
  gpus: [H200-SXM-141GB]
  os: ubuntu22.04
  kernels: [$2]
  platforms: [linux/amd64]
driver: {mode: precompiled, branch: "580", kernelModuleType: open}
R
}
recipe "$work/site.yaml" "$kver"

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 30 \
  -subj "/CN=gpubundle test module key/O=Example" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/other.pem" -out "$work/other.crt" -days 30 \
  -subj "/CN=someone else" 2>/dev/null

# Base image: an OCI layout with merged /usr (lib -> usr/lib), as Ubuntu has.
mkdir -p "$work/baseroot/usr/lib" "$work/baseroot/usr/bin"
ln -s usr/lib "$work/baseroot/lib"
echo base > "$work/baseroot/usr/lib/os-release"
tar -C "$work/baseroot" -cf "$work/base.tar" .
umoci init --layout "$work/base"
umoci new --image "$work/base:latest"
umoci raw add-layer --image "$work/base:latest" "$work/base.tar"

store=$work/store
ref=nvcr.io/nvidia/driver:580-$kver-ubuntu22.04
# The lock from `gpubundle resolve` against the stand-in chart; driver build marks the image built.
chart=$work/chart
/usr/bin/python3 "$src/tests/tools/chart.py" --release v26.7.0 --out "$chart" > /dev/null
"$gb" resolve "$work/site.yaml" --chart "$chart" -o "$work/lock.json" > /dev/null 2>&1 || fail "resolve"
grep -q "\"source\": \"$ref\"" "$work/lock.json" || fail "the lock does not expect $ref"
start=$(date +%s.%N)
GPUBUNDLE_STORE=$store "$gb" driver build "$work/site.yaml" --installer "$nvrun" --kernel-build "$kbuild" \
  --sign-key "$work/key.pem" --sign-cert "$work/cert.pem" --base "oci:$work/base:latest" --keep-sandbox -j 2 \
  --lock "$work/lock.json" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; fail "driver build"; }
echo "driver build: $(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || true) s"
grep -q "^$ref@sha256:" "$work/out" || fail "output lacks $ref@digest: $(cat "$work/out")"
grep -q "nvidia-makeself, gzip" "$work/err" || fail "NVIDIA-fork header not reported: $(cat "$work/err")"
grep -q "key.pem\|PRIVATE" "$work/err" && fail "the log mentions the key"
digest=$(sed -n "s|^$ref@||p" "$work/out")
ok "driver build stored $ref@$digest"
"$gb" --store "$store" store fsck > /dev/null 2>&1 || fail "store fsck after driver build"
ok "store fsck passes"
python3 - "$work/lock.json" "$ref" "$digest" <<'PY' || fail "lock not updated"
import json, sys
lock, ref, digest = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
img = [i for i in lock["images"] if i["source"] == ref]
assert len(img) == 1 and img[0]["origin"] == "built" and img[0]["digest"] == digest, img
assert all(i["origin"] == "upstream" for i in lock["images"] if i["source"] != ref)
PY
ok "lock: $ref origin built, digest recorded"

skopeo inspect --config "oci:$store:$ref" > "$work/config.json" || fail "skopeo inspect --config"
python3 - "$work/config.json" "$VER" "$kver" "$(openssl x509 -in "$work/cert.pem" -outform DER | sha256sum | cut -d' ' -f1)" \
  "$(sha256sum "$nvrun" | cut -d' ' -f1)" <<'PY' || fail "image config (above)"
import json, sys
cfg, ver, kver, fpr, runsha = json.load(open(sys.argv[1])), *sys.argv[2:]
env = dict(e.split("=", 1) for e in cfg["config"]["Env"])
want = {"DRIVER_VERSION": ver, "DRIVER_BRANCH": ver.split(".")[0], "KERNEL_VERSION": kver, "NVIDIA_VISIBLE_DEVICES": "void"}
for k, v in want.items():
    assert env.get(k) == v, f"env {k}={env.get(k)} want {v}"
l = cfg["config"]["Labels"]
assert l["io.gpubundle.driver.version"] == ver and l["io.gpubundle.driver.kernel"] == kver, l
assert l["io.gpubundle.driver.signer"] == fpr, (l, fpr)
assert l["io.gpubundle.driver.installer-sha256"] == runsha, l
assert cfg["config"]["Entrypoint"] == ["nvidia-driver"] and cfg["config"]["Cmd"] == ["init"]
assert len(cfg["rootfs"]["diff_ids"]) == 2 and "gpubundle driver build" in cfg["history"][-1]["created_by"]
assert cfg["created"] == "2023-11-14T22:13:20Z", cfg["created"]
PY
skopeo inspect "oci:$store:$ref" | grep "\"Digest\": \"$digest\"" >/dev/null || fail "skopeo inspect digest"
ok "skopeo inspect: env, labels (version, kernel, signer fingerprint, .run sha256), entrypoint, history"

skopeo copy -q "oci:$store:$ref" "oci:$work/copy:img" || fail "skopeo copy"
umoci unpack --rootless --image "$work/copy:img" "$work/bundle" >/dev/null || fail "umoci unpack"
rootfs=$work/bundle/rootfs
[ -L "$rootfs/lib" ] || fail "the layer replaced the base's /lib -> usr/lib link"
mdir=$rootfs/usr/lib/modules/$kver
for m in nvidia nvidia-uvm nvidia-modeset; do
  [ -f "$mdir/kernel/drivers/video/$m.ko" ] || fail "$m.ko missing"
  grep -q "^kernel/drivers/video/$m.ko:" "$mdir/modules.dep" || fail "modules.dep lacks $m"
  [ "$(modinfo -F signer "$mdir/kernel/drivers/video/$m.ko")" = "gpubundle test module key" ] || fail "modinfo signer of $m"
  [ "$(modinfo -F vermagic "$mdir/kernel/drivers/video/$m.ko" | cut -d' ' -f1)" = "$kver" ] || fail "vermagic of $m"
done
mode() { stat -c %a "$1"; }
[ "$(mode "$rootfs/usr/bin/nvidia-smi")" = 755 ] || fail "nvidia-smi mode"
[ "$(readlink "$rootfs/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")" = "libnvidia-ml.so.$VER" ] || fail "libnvidia-ml.so.1 link"
[ "$(mode "$rootfs/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.$VER")" = 755 ] || fail "libnvidia-ml mode"
[ -f "$rootfs/opt/lib/firmware/nvidia/$VER/gsp_ga10x.bin" ] || fail "firmware not in /opt/lib/firmware/nvidia/$VER"
[ "$(mode "$rootfs/usr/local/bin/nvidia-driver")" = 755 ] || fail "nvidia-driver mode"
cmp -s "$rootfs/usr/local/bin/nvidia-driver" "$src/node-images/nvidia-driver" || fail "embedded nvidia-driver differs"
[ -f "$rootfs/usr/lib/os-release" ] || fail "base layer content missing"
grep -rqs "PRIVATE KEY" "$rootfs" && fail "a private key is in the image"
ok "umoci unpack: modules + modules.dep under /lib/modules (via usr/lib), signer, vermagic, userspace, firmware, entrypoint, modes"

# Signatures: byte-identical to scripts/sign-file, and a valid CMS.
sandbox=$(ls -d "$TMPDIR"/gpubundle-driver.* | head -n1)
unsigned=$sandbox/modules-$kver/kernel-open/nvidia.ko
ours=$mdir/kernel/drivers/video/nvidia.ko
cp "$unsigned" "$work/ref.ko" && strip --strip-debug "$work/ref.ko"
"$kbuild/scripts/sign-file" sha256 "$work/key.pem" "$work/cert.pem" "$work/ref.ko" || fail "sign-file"
cmp -s "$work/ref.ko" "$ours" || fail "our signature differs from scripts/sign-file's"
ok "signature byte-identical to the kernel's scripts/sign-file (RSA, sha256)"
python3 - "$ours" "$work" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
magic = b"~Module signature appended~\n"
assert d.endswith(magic)
sig_len = struct.unpack(">I", d[-len(magic) - 4:-len(magic)])[0]
end = len(d) - len(magic) - 12
open(sys.argv[2] + "/sig.der", "wb").write(d[end - sig_len:end])
open(sys.argv[2] + "/content.ko", "wb").write(d[:end - sig_len])
PY
openssl cms -verify -binary -inform DER -in "$work/sig.der" -content "$work/content.ko" -certfile "$work/cert.pem" \
  -CAfile "$work/cert.pem" -purpose any -out /dev/null 2>"$work/cms.err" || { cat "$work/cms.err"; fail "openssl cms -verify"; }
ok "openssl cms -verify accepts the module signature"

# --kernel-headers: Debian's header packages unpacked into the sandbox; unsigned;
# a vGPU guest (GRID) installer, whose licensing libraries must land in the image
# where nvidia-installer puts them.
bash "$src/tests/integration/fixtures/make-installer.sh" "$work/grid" "$VER" grid >/dev/null
debs=(/var/cache/apt/archives/linux-headers-"$kver"_*.deb /var/cache/apt/archives/linux-headers-"${kver%-*}"-common_*.deb
  /var/cache/apt/archives/linux-kbuild-*.deb)
if ls "${debs[@]}" > /dev/null 2>&1; then
  GPUBUNDLE_STORE=$store "$gb" driver build "$work/site.yaml" --installer "$work/grid/NVIDIA-Linux-x86_64-$VER-grid.run" --kernel-headers "${debs[@]}" \
    --base "oci:$work/base:latest" --os-tag headers-test -j 2 > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; fail "--kernel-headers build"; }
  href=nvcr.io/nvidia/driver:580-$kver-headers-test
  grep -q "^$href@" "$work/out" || fail "--kernel-headers: no $href"
  [ "$(skopeo inspect --config "oci:$store:$href" | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["Labels"]["io.gpubundle.driver.signer"])')" = unsigned ] ||
    fail "unsigned image not labelled unsigned"
  skopeo copy -q "oci:$store:$href" "oci:$work/copy:grid" || fail "skopeo copy $href"
  umoci unpack --rootless --image "$work/copy:grid" "$work/grid-bundle" >/dev/null || fail "umoci unpack $href"
  glib=$work/grid-bundle/rootfs/usr/lib/x86_64-linux-gnu
  [ "$(readlink "$glib/libnvidia-vgxcfg.so.1")" = "libnvidia-vgxcfg.so.$VER" ] || fail "VGX_LIB_SYMLINK"
  [ "$(readlink "$glib/nvidia/grid/libnvidia-gridd.so.1")" = "libnvidia-gridd.so.$VER" ] || fail "GRID_LIB_SYMLINK"
  [ "$(readlink "$glib/libFlxCore64.so")" = libFlxCore64.so.2021.02 ] || fail "FLEXERA_LIB_SYMLINK"
  cmp -s "$glib/nvidia/grid/libnvidia-gridd.so.$VER" "$work/grid/tree/grid/libnvidia-gridd.so.$VER" || fail "GRID_LIB content"
  [ "$(mode "$glib/nvidia/grid/libnvidia-gridd.so.$VER")" = 755 ] && [ -f "$glib/libnvidia-vgxcfg.so.$VER" ] &&
    [ -f "$glib/libFlxCore64.so.2021.02" ] || fail "GRID/VGX/FLEXERA libraries"
  ok "--kernel-headers (.debs unpacked into the sandbox, links kept inside), upstream makeself header, unsigned, GRID files placed: $href"
else
  echo "note: linux-headers/kbuild .deb files not in /var/cache/apt/archives: --kernel-headers not checked"
fi

# --kernel-headers with a RHEL-shaped kernel-devel rpm (rpmbuild here): one
# self-contained tree under usr/src/kernels/<kver>, merged from Debian's three
# header packages as RHEL's kernel-devel is one tree; kernel-core's absolute
# lib/modules/<kver>/build link; a hard-link pair in the cpio payload. The
# modules are built against it from a relative TMPDIR too (where a hard link
# once wrote into the working folder).
if command -v rpmbuild >/dev/null; then
  rroot=$work/rpmroot
  tree=$rroot/usr/src/kernels/$kver
  commondir=$(sed -n 's|^include \(/usr/src/.*\)/Makefile$|\1|p' "$kbuild/Makefile")
  mkdir -p "$rroot/usr/src/kernels" "$rroot/lib/modules/$kver" "$work/rpmtop"
  cp -a "$commondir" "$tree"
  # Only what an x86 module build reads: fewer files to pack and unpack.
  find "$tree/arch" -mindepth 1 -maxdepth 1 ! -name x86 -exec rm -rf {} +
  rm -rf "$tree/scripts" "$tree/tools" "$tree/include/dt-bindings"
  cp -rL "$kbuild/scripts" "$tree/scripts"
  cp -rL "$kbuild/tools" "$tree/tools"
  (cd "$kbuild" && tar --exclude=./Makefile --exclude=./scripts --exclude=./tools -cf - .) | tar -xf - -C "$tree"
  ln -s "/usr/src/kernels/$kver" "$rroot/lib/modules/$kver/build"
  ln "$tree/Module.symvers" "$tree/Module.symvers.orig"
  cat > "$work/kernel-devel.spec" <<SPEC
Name: kernel-devel
Version: ${kver%%-*}
Release: 1.el9
Summary: kernel-devel shaped like RHEL's, from Debian's headers
License: GPLv2
AutoReqProv: no
%description
test
%install
cp -a $rroot/. %{buildroot}/
%files
/usr/src/kernels/$kver
/lib/modules/$kver/build
SPEC
  rpmbuild -bb --quiet --target x86_64 --nodeps --define "_topdir $work/rpmtop" --define "_build_id_links none" \
    --define "__os_install_post %{nil}" --define "debug_package %{nil}" --define "_binary_payload w1.gzdio" \
    "$work/kernel-devel.spec" > "$work/rpmbuild.log" 2>&1 || { cat "$work/rpmbuild.log" >&2; fail "rpmbuild kernel-devel"; }
  rpmfile=$(find "$work/rpmtop/RPMS" -name 'kernel-devel-*.rpm')
  rpm -qlvp "$rpmfile" > "$work/rpm.list" 2>/dev/null
  grep -q "lib/modules/$kver/build -> /usr/src/kernels/$kver" "$work/rpm.list" || fail "the rpm lacks the absolute build link"
  recipe "$work/rhel.yaml" "$kver"
  sed -i 's/os: ubuntu22.04/os: rhel9.4/' "$work/rhel.yaml"
  mkdir -p "$work/reltmp"
  (cd "$work" && TMPDIR=reltmp GPUBUNDLE_STORE=$store "$gb" driver build "$work/rhel.yaml" --installer "$nvrun" \
    --kernel-headers "$rpmfile" --base "oci:$work/base:latest" -j 2 > "$work/out" 2> "$work/err") ||
    { cat "$work/err" >&2; fail "--kernel-headers kernel-devel.rpm"; }
  rref=nvcr.io/nvidia/driver:580-$kver-rhel9.4
  grep -q "^$rref@" "$work/out" || fail "--kernel-headers rpm: no $rref in $(cat "$work/out")"
  [[ -z $(find "$work" -maxdepth 1 -newer "$work/rhel.yaml" -name 'Module.symvers*') ]] || fail "a hard link landed in the working folder"
  skopeo copy -q "oci:$store:$rref" "oci:$work/copy:rhel" || fail "skopeo copy $rref"
  umoci unpack --rootless --image "$work/copy:rhel" "$work/rhel-bundle" >/dev/null || fail "umoci unpack $rref"
  ko=$(find "$work/rhel-bundle/rootfs" -name nvidia.ko | head -n1)
  [[ -n $ko ]] || fail "no nvidia.ko in $rref"
  [[ $(modinfo -F vermagic "$ko" | cut -d' ' -f1) == "$kver" ]] || fail "nvidia.ko vermagic: $(modinfo -F vermagic "$ko")"
  ok "--kernel-headers kernel-devel.rpm (RHEL layout, absolute build link, hard-link pair, relative TMPDIR): $rref, vermagic $kver"
else
  echo "note: rpmbuild is not installed: --kernel-headers with an rpm not checked"
fi

# Bad inputs: a clear error, exit status, and the store exactly as before.
snapshot() { (cd "$store" && find . -type f ! -name catalog.db\* -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
before=$(snapshot)
expect_fail() {  # expect_fail NAME EXIT PATTERN gpubundle-args...
  local name=$1 want=$2 pattern=$3
  shift 3
  local rc=0
  GPUBUNDLE_STORE=$store "$gb" driver build "$@" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = "$want" ] || { cat "$work/err" >&2; fail "$name: exit $rc, want $want"; }
  grep -q -- "$pattern" "$work/err" || { cat "$work/err" >&2; fail "$name: error lacks '$pattern'"; }
  [ "$(snapshot)" = "$before" ] || fail "$name: the store changed"
  ok "$name: exit $rc, $(grep -m1 error: "$work/err" | cut -c1-150)"
}
common=(--kernel-build "$kbuild" --base "oci:$work/base:latest" -j 2)
head -c 5000 "$uprun" > "$work/truncated.run"
expect_fail "truncated .run" 2 "truncated" "$work/site.yaml" --installer "$work/truncated.run" "${common[@]}"
head -c "$(( $(stat -c %s "$nvrun") - 300 ))" "$nvrun" > "$work/truncated-nv.run"
expect_fail "truncated NVIDIA-fork .run" 2 "truncated or damaged" "$work/site.yaml" --installer "$work/truncated-nv.run" "${common[@]}"
cp -a "$work/inst/tree" "$work/badtree"
echo "libnvidia-shiny.so.$VER 0755 SHINY_NEW_LIB NATIVE" >> "$work/badtree/.manifest"
expect_fail "unknown manifest type" 2 "unknown file type 'SHINY_NEW_LIB'" "$work/site.yaml" --installer "$work/badtree" "${common[@]}"
recipe "$work/other-kernel.yaml" "6.1.0-99-amd64"
expect_fail "headers for another kernel" 2 "vermagic" "$work/other-kernel.yaml" --installer "$work/inst/tree" "${common[@]}"
mkdir -p "$work/badcc"
for c in gcc gcc-12 cc; do printf '#!/bin/sh\necho "cc1: internal compiler error: stand-in" >&2\nexit 1\n' > "$work/badcc/$c"; chmod 755 "$work/badcc/$c"; done
PATH=$work/badcc:$PATH expect_fail "failing compiler" 1 "make -C .*modules SYSSRC=" "$work/site.yaml" --installer "$work/inst/tree" "${common[@]}"
grep -q "internal compiler error: stand-in" "$work/err" || fail "failing compiler: log tail not shown"
expect_fail "wrong key for the cert" 2 "does not match" "$work/site.yaml" --installer "$work/inst/tree" "${common[@]}" \
  --sign-key "$work/other.pem" --sign-cert "$work/cert.pem"
expect_fail "key without cert" 2 "needs its certificate" "$work/site.yaml" --installer "$work/inst/tree" "${common[@]}" \
  --sign-key "$work/key.pem"
cp "$uprun" "$work/NVIDIA-Linux-aarch64-$VER.run"
expect_fail "aarch64 installer" 2 "installer for aarch64; driver artifacts are built for x86_64 only" "$work/site.yaml" \
  --installer "$work/NVIDIA-Linux-aarch64-$VER.run" "${common[@]}"
echo "PASS driver-build"
