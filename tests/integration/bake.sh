#!/usr/bin/env bash
# gpubundle node-image bake, end to end: the stand-in installer (upstream
# makeself header) built for Debian's linux-headers, signed, with stand-in
# toolkit and fabric manager packages; the overlay, manifest.json, install.sh
# (shellcheck), values fragment and containerd drop-in are checked; then
# install.sh runs against a debootstrap minbase root and the result is checked
# inside it (modules.dep, modinfo -b, ldconfig -p -r, systemctl is-enabled,
# dpkg status of the packages).
# The minbase root is made once per build folder and cached in
# $GB_CACHE_DIR/debootstrap (about a minute from deb.debian.org), in the
# background while the modules build. With GPUBUNDLE_OFFLINE_TESTS=1 and no
# cached root, the install part is skipped with a message.
# Usage: bake.sh PATH/TO/gpubundle
set -euo pipefail
gb=$(readlink -f "${1:?usage: bake.sh gpubundle}")
src=${GB_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cache=${GB_CACHE_DIR:-$src/build/cache}
kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
if [ -z "$kbuild" ] || [ ! -f "$kbuild/include/generated/utsrelease.h" ]; then
  echo "SKIP: no kernel build tree under /lib/modules/*/build (install linux-headers-amd64)"
  exit 77
fi
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
work=$(mktemp -d)
base=$cache/debootstrap
debootstrap_pid=""
cleanup() {
  if [ -n "$debootstrap_pid" ]; then  # its whole process group (wget, dpkg...)
    kill -- "-$debootstrap_pid" 2>/dev/null || true
    wait "$debootstrap_pid" 2>/dev/null || true
    rm -rf "$base.tmp"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
export SOURCE_DATE_EPOCH=1700000000 TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

# The minbase root, made in the background while the modules build.
if [ ! -x "$base/bin/sh" ] && [ "${GPUBUNDLE_OFFLINE_TESTS:-0}" != 1 ]; then
  command -v debootstrap >/dev/null || fail "debootstrap is not installed (scripts/install-deps.sh)"
  mkdir -p "$cache"
  rm -rf "$base.tmp"
  setsid debootstrap --variant=minbase bookworm "$base.tmp" http://deb.debian.org/debian > "$cache/debootstrap.log" 2>&1 &
  debootstrap_pid=$!
fi

# make_deb OUTDIR NAME VERSION PATH=CONTENT...: a stand-in package made with dpkg-deb.
make_deb() {
  local out=$1 name=$2 ver=$3
  shift 3
  local d=$work/debsrc/$name-$ver
  mkdir -p "$d/DEBIAN" "$out"
  printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: test <t@example.com>\nDescription: stand-in\n' \
    "$name" "$ver" > "$d/DEBIAN/control"
  local f
  for f in "$@"; do
    mkdir -p "$d/$(dirname "${f%%=*}")"
    printf '%s\n' "${f#*=}" > "$d/${f%%=*}"
    case ${f%%=*} in */bin/*) chmod 755 "$d/${f%%=*}" ;; esac
  done
  dpkg-deb --root-owner-group --build "$d" "$out/${name}_${ver}_amd64.deb" >/dev/null
}
VER=580.95.05
bash "$src/tests/integration/fixtures/make-installer.sh" "$work/inst" "$VER" >/dev/null
cat > "$work/site.yaml" <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: bake-test}
operator: {version: v26.7.0}
target:
  gpus: [H200-SXM-141GB]
  os: ubuntu22.04
  kernels: [$kver]
  platforms: [linux/amd64]
driver: {mode: host, version: "$VER", kernelModuleType: open}
toolkit: {mode: host}
R
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 30 \
  -subj "/CN=gpubundle bake key" 2>/dev/null

make_deb "$work/toolkit" nvidia-container-toolkit-base 1.17.8-1 \
  "usr/bin/nvidia-container-runtime=#!/bin/sh" "usr/bin/nvidia-ctk=#!/bin/sh"
make_deb "$work/fm" nvidia-fabricmanager "$VER-1" "usr/bin/nv-fabricmanager=#!/bin/sh" \
  "usr/lib/systemd/system/nvidia-fabricmanager.service=[Unit]
Description=stand-in fabric manager
[Service]
ExecStart=/usr/bin/nv-fabricmanager
[Install]
WantedBy=multi-user.target"
make_deb "$work/fm-old" nvidia-fabricmanager 570.86.15-1 "usr/bin/nv-fabricmanager=#!/bin/sh"

# The wrong fabric manager version is refused before anything is stored.
set +e
"$gb" --store "$work/store" node-image bake "$work/site.yaml" --installer "$work/inst/NVIDIA-Linux-x86_64-$VER.run" \
  --kernel-build "$kbuild" -j 2 -o "$work/old" --fabric-manager-packages "$work/fm-old" > /dev/null 2> "$work/err"
rc=$?
set -e
[ $rc = 2 ] || fail "a fabric manager of another version: rc $rc, want 2"
grep -q "nvidia-fabricmanager_570.86.15-1_amd64.deb: --fabric-manager-packages must match driver $VER" "$work/err" ||
  fail "fabric manager version message: $(cat "$work/err")"
[ ! -e "$work/store" ] || fail "a refused bake touched the store"
grep -q "building kernel" "$work/err" && fail "the package folders were checked only after the modules were built"
ok "a fabric manager package of another driver version is refused before any build, the store untouched"

out=$work/out
"$gb" --store "$work/store" node-image bake "$work/site.yaml" --installer "$work/inst/NVIDIA-Linux-x86_64-$VER.run" \
  --kernel-build "$kbuild" --sign-key "$work/key.pem" --sign-cert "$work/cert.pem" -j 2 -o "$out" \
  --toolkit-packages "$work/toolkit" --fabric-manager-packages "$work/fm" > "$work/stdout" 2> "$work/stderr" ||
  { cat "$work/stderr" >&2; fail "bake"; }
grep -q "makeself, gzip" "$work/stderr" || fail "upstream makeself header not reported: $(cat "$work/stderr")"
for f in overlay.tar install.sh manifest.json values.yaml packages/nvidia-fabricmanager_$VER-1_amd64.deb \
  packages/nvidia-container-toolkit-base_1.17.8-1_amd64.deb; do
  [ -f "$out/$f" ] || fail "$f missing"
done
ok "bake wrote overlay.tar, install.sh, manifest.json, values.yaml, packages/"

# Without packages it says what is missing, and still ships the FM unit. This
# bake takes a vGPU guest (GRID) installer: its licensing libraries land where
# nvidia-installer puts them.
bash "$src/tests/integration/fixtures/make-installer.sh" "$work/grid" "$VER" grid >/dev/null
"$gb" --store "$work/store2" node-image bake "$work/site.yaml" --installer "$work/grid/NVIDIA-Linux-x86_64-$VER-grid.run" \
  --kernel-build "$kbuild" -j 2 -o "$work/bare" --fabric-manager --no-store > /dev/null 2> "$work/stderr2" ||
  { cat "$work/stderr2" >&2; fail "bake without packages"; }
grep -q "no --toolkit-packages" "$work/stderr2" || fail "missing toolkit packages not reported"
grep -q "nvidia-fabricmanager $VER package" "$work/stderr2" || fail "missing fabric manager binary not reported"
# grep without -q reads its whole input: under pipefail an early exit would fail the producer (SIGPIPE).
tar -tf "$work/bare/overlay.tar" | grep -x usr/lib/systemd/system/nvidia-fabricmanager.service >/dev/null || fail "FM unit missing"
[ ! -e "$work/store2" ] || fail "--no-store created a store"
ok "missing toolkit and fabric manager packages are reported; --no-store stores nothing"
tar -tvf "$work/bare/overlay.tar" > "$work/grid-list"
lib=usr/lib/x86_64-linux-gnu
for p in "$lib/libnvidia-vgxcfg.so.$VER" "$lib/libnvidia-vgxcfg.so.1 -> libnvidia-vgxcfg.so.$VER" \
  "$lib/nvidia/grid/libnvidia-gridd.so.$VER" "$lib/nvidia/grid/libnvidia-gridd.so.1 -> libnvidia-gridd.so.$VER" \
  "$lib/libFlxCore64.so.2021.02" "$lib/libFlxCore64.so -> libFlxCore64.so.2021.02"; do
  grep -q " $p$" "$work/grid-list" || fail "GRID overlay lacks $p: $(grep -i -e grid -e vgx -e flx "$work/grid-list")"
done
grep -q "^-rwxr-xr-x .* $lib/nvidia/grid/libnvidia-gridd.so.$VER$" "$work/grid-list" || fail "GRID_LIB mode"
ok "GRID installer: VGX_LIB in the libdir, GRID_LIB below libdir/<path>, FLEXERA_LIB, their symlinks"

tar -tvf "$out/overlay.tar" > "$work/list"
for p in "lib/modules/$kver/updates/nvidia/nvidia.ko" "lib/modules/$kver/updates/nvidia/nvidia-uvm.ko" \
  "lib/modules/$kver/updates/nvidia/nvidia-modeset.ko" etc/modprobe.d/nvidia.conf etc/modules-load.d/nvidia.conf \
  usr/bin/nvidia-smi "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.$VER" usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 \
  "lib/firmware/nvidia/$VER/gsp_ga10x.bin" etc/ld.so.conf.d/nvidia.conf usr/lib/systemd/system/nvidia-persistenced.service \
  usr/share/gpubundle/mok/module-signing.der etc/containerd/conf.d/99-nvidia.toml; do
  grep -q " $p\( ->.*\)\?$" "$work/list" || fail "overlay lacks $p"
done
awk '{print $2}' "$work/list" | sort -u | grep -v '^root/root$' >/dev/null && fail "an entry is not root/root"
[ "$(tar -tf "$out/overlay.tar")" = "$(tar -tf "$out/overlay.tar" | LC_ALL=C sort)" ] || fail "overlay entries are not sorted"
tar --full-time -tvf "$out/overlay.tar" | grep -v "2023-11-14 22:13:20" >/dev/null && fail "an entry's mtime is not SOURCE_DATE_EPOCH"
ok "overlay: layout of issue 6, sorted, root/root, mtime = SOURCE_DATE_EPOCH"

grep -q "blacklist nouveau" <(tar -xOf "$out/overlay.tar" etc/modprobe.d/nvidia.conf) || fail "nouveau not blacklisted"
[ "$(tar -xOf "$out/overlay.tar" etc/modules-load.d/nvidia.conf | grep -v '^#')" = "$(printf 'nvidia\nnvidia-uvm\nnvidia-modeset')" ] ||
  fail "modules-load.d content"
grep -q 'runtimes.nvidia\]' <(tar -xOf "$out/overlay.tar" etc/containerd/conf.d/99-nvidia.toml) || fail "containerd runtime nvidia"
cmp -s <(tar -xOf "$out/overlay.tar" usr/share/gpubundle/mok/module-signing.der) <(openssl x509 -in "$work/cert.pem" -outform DER) ||
  fail "MOK certificate is not the signing cert in DER"
grep -rqs "PRIVATE KEY" "$out" && fail "the private key reached the output"
python3 - "$out" <<'PY' || fail "values.yaml"
import sys
v = open(sys.argv[1] + "/values.yaml").read()
assert "driver:\n  enabled: false" in v and "toolkit:\n  enabled: false" in v, v
PY
ok "modprobe.d, modules-load.d, containerd drop-in, MOK DER cert, values fragment; no key material"

mkdir -p "$work/x" && tar -xf "$out/overlay.tar" -C "$work/x"
python3 - "$out/manifest.json" "$work/x" "$(sha256sum "$out/overlay.tar" | cut -d' ' -f1)" <<'PY' || fail "manifest.json (above)"
import hashlib, json, os, sys
m, root, tarsha = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert m["overlay"]["sha256"] == tarsha
assert m["signer"] and len(m["signer"]["fingerprint"]) == 64
n = 0
for f in m["files"]:
    p = root + f["path"]
    if f["type"] == "file":
        assert hashlib.sha256(open(p, "rb").read()).hexdigest() == f["sha256"], f["path"]
        assert os.stat(p).st_mode & 0o7777 == f["mode"], f["path"]
        n += 1
    elif f["type"] == "symlink":
        assert os.readlink(p) == f["link"]
listed = {f["path"] for f in m["files"]}
for d, _, files in os.walk(root):
    for x in files:
        assert os.path.join(d, x)[len(root):] in listed, x
print(f"manifest.json: {n} files verified")
PY
shellcheck "$out/install.sh" || fail "install.sh shellcheck"
ok "manifest.json lists every file with a matching sha256 and mode; install.sh passes shellcheck"

# Install into a debootstrap minbase root.
if [ -n "$debootstrap_pid" ]; then
  wait "$debootstrap_pid" ||
    fail "debootstrap failed (no network? GPUBUNDLE_OFFLINE_TESTS=1 skips this part): $(tail -n 5 "$cache/debootstrap.log")"
  debootstrap_pid=""
  mv "$base.tmp" "$base"
fi
if [ ! -x "$base/bin/sh" ]; then
  echo "SKIP (install part): GPUBUNDLE_OFFLINE_TESTS=1 and no cached minbase root at $base"
  echo "PASS node-image-bake (without the install into a minbase root)"
  exit 0
fi
root=$work/root
cp -a "$base" "$root"
cp "$work/fm-old/nvidia-fabricmanager_570.86.15-1_amd64.deb" "$out/packages/"  # left over: install.sh must ignore it
"$out/install.sh" --root "$root" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install.sh --root"; }
grep -q "mokutil --import /usr/share/gpubundle/mok/module-signing.der" "$work/install.log" || fail "no MOK enrolment step printed"
[ -L "$root/lib" ] || fail "install.sh replaced the root's /lib link"
for m in nvidia nvidia-uvm nvidia-modeset; do
  grep -q "^updates/nvidia/$m.ko:" "$root/lib/modules/$kver/modules.dep" || fail "modules.dep lacks $m"
done
modinfo -b "$root" -k "$kver" nvidia > "$work/modinfo" || fail "modinfo -b cannot read nvidia"
grep -q "^filename: *.*/lib/modules/$kver/updates/nvidia/nvidia.ko" "$work/modinfo" || fail "modinfo -b filename: $(head -2 "$work/modinfo")"
grep -q "^signer: *gpubundle bake key" "$work/modinfo" || fail "modinfo -b signer"
ldconfig -p -r "$root" | grep "libnvidia-ml.so.1 .*=> /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" >/dev/null || fail "ldconfig -p -r lacks libnvidia-ml"
[ "$(systemctl --root="$root" is-enabled nvidia-persistenced.service)" = enabled ] || fail "nvidia-persistenced.service not enabled"
[ -x "$root/usr/bin/nvidia-smi" ] && [ "$(chroot "$root" /usr/bin/nvidia-smi | head -c 10)" = "NVIDIA-SMI" ] || fail "chroot nvidia-smi"
for p in nvidia-container-toolkit-base nvidia-fabricmanager; do
  dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Status}\n' "$p" | grep "install ok installed" >/dev/null || fail "dpkg: $p not installed"
done
[ "$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Version}' nvidia-fabricmanager)" = "$VER-1" ] ||
  fail "install.sh installed a package bake did not name"
[ -x "$root/usr/bin/nv-fabricmanager" ] && [ -x "$root/usr/bin/nvidia-container-runtime" ] || fail "package files missing"
[ "$(systemctl --root="$root" is-enabled nvidia-fabricmanager.service)" = enabled ] || fail "nvidia-fabricmanager.service not enabled"
grep -q "note:" "$work/install.log" && fail "install.sh printed a note although every package was there: $(grep note: "$work/install.log")"
ok "installed into a minbase root: modules.dep, modinfo -b (signer), ldconfig -p -r, units enabled, chroot nvidia-smi, packages"
echo "PASS node-image-bake"
