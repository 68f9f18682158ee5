#!/usr/bin/env bash
# The gpubundle tool image (issue 32): `driver tool-image` from a stand-in
# apt repository of real Debian packages (signed, on loopback), twice in two
# stores: the same digest. skopeo reads it and umoci unpacks it; inside that
# root filesystem (a mount namespace and chroot) `gpubundle --version` runs,
# and one real `driver build --kernel` (headers fetched from the stand-in,
# modules built by the image's own make, gcc and depmod) gives the same
# driver image digest as the same build on this machine. With --lock the
# lock lists it as built. A --with package no source has is one line naming it.
set -euo pipefail
GB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
PY=/usr/bin/python3
for t in skopeo umoci apt-ftparchive gpg unshare chroot makeself; do
  command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
W=$(mktemp -d -t gb-tool-image.XXXXXX)
cleanup() {
  "$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$HERE/package_repo_lib.sh"
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
export TMPDIR=$W SOURCE_DATE_EPOCH=1764460800
started=$SECONDS

kver=$(apt-cache depends linux-headers-amd64 | sed -n 's/.*Depends: linux-headers-\(.*\)$/\1/p' | head -n1)
[[ -n $kver ]] || { echo "SKIP: apt knows no linux-headers-amd64"; exit 77; }
sed -e "s/^  kernels: \[.*\]/  kernels: [$kver]/" "$HERE/../../examples/precompiled.yaml" > "$W/plain.yaml"

# The stand-in serves what the image starts from, as gpubundle names it, with
# the kernel's headers (and so its compiler) and every Depends closure. The
# one extra, ca-certificates, is there for the bundle its maintainer script would write.
extra=(--with ca-certificates)
mapfile -t names < <("$GB" driver tool-image "$W/plain.yaml" --list "${extra[@]}")
[[ " ${names[*]} " == *" make "* && " ${names[*]} " == *" libc6 "* && " ${names[*]} " == *" ca-certificates "* ]] ||
  fail "--list: ${names[*]}"
with=()
for n in "${names[@]}"; do with+=(--with "$n"); done
apt_standin_up "${with[@]}"
{ cat "$W/plain.yaml"; apt_standin_sources; } > "$W/recipe.yaml"
version=$("$GB" --version | sed -n 's/^gpubundle //p')
ref=localhost/gpubundle/gpubundle:$version

# 1. Twice, in two stores at once: the same image. The second run also updates a
# lock (resolved against the stand-in chart): it lists the image as built
# with its own component, and the install kit lists it as shipped but puts
# it in no chart value and no runtime mirror.
"$PY" "$TOOLS/chart.py" --release v26.7.0 --out "$W/chart" > /dev/null
"$GB" -q resolve "$W/recipe.yaml" --chart "$W/chart" -o "$W/lock.json" > /dev/null || fail "resolve"
t0=$SECONDS
"$GB" --store "$W/s1" --json driver tool-image "$W/recipe.yaml" "${extra[@]}" > "$W/t1.json" 2> "$W/t1.err" &
first=$!
"$GB" --store "$W/s2" --json driver tool-image "$W/recipe.yaml" "${extra[@]}" --lock "$W/lock.json" > "$W/t2.json" 2> "$W/t2.err" &
second=$!
wait "$first" || { cat "$W/t1.err"; fail "tool-image"; }
wait "$second" || { cat "$W/t2.err"; fail "tool-image --lock"; }
build_s=$((SECONDS - t0))
digest=$(jget "$W/t1.json" 'd["digest"]')
[[ $(jget "$W/t1.json" 'd["ref"]') == "$ref" ]] || fail "ref: $(cat "$W/t1.json")"
[[ $digest == "$(jget "$W/t2.json" 'd["digest"]')" ]] || fail "two builds, two digests: $(cat "$W/t1.json" "$W/t2.json")"
echo "ok: $ref@$digest, $(jget "$W/t1.json" 'd["packages"]') packages, $(jget "$W/t1.json" 'd["size"] >> 20') MiB compressed" \
  "($(jget "$W/t1.json" 'd["unpacked"] >> 20') MiB unpacked), two built at once in ${build_s} s; the same digest from both stores"
[[ $(jget "$W/lock.json" '[(i["components"], i["origin"], i["digest"]) for i in d["images"] if i["source"] == "'"$ref"'"]') == \
   "[(['toolImage'], 'built', '$digest')]" ]] || fail "the lock's entry for $ref: $(grep -A8 "$ref" "$W/lock.json")"
"$GB" -q overrides "$W/lock.json" --registry registry.site:5000/gpu --chart "$W/chart" -o "$W/kit" || fail "overrides"
grep -q "gpubundle/gpubundle" "$W/kit/values.yaml" && fail "values.yaml names the tool image"
[[ -e $W/kit/containerd/certs.d/localhost/hosts.toml ]] && fail "a runtime mirror for localhost"
[[ $(jget "$W/kit/manifest.json" '[i["destination"] for i in d["images"] if i["source"] == "'"$ref"'"]') == \
   "['registry.site:5000/gpu/gpubundle/gpubundle:$version']" ]] || fail "kit manifest: $(cat "$W/kit/manifest.json")"
echo "ok: --lock records it as built (toolImage); the kit ships it to registry.site:5000/gpu/gpubundle/gpubundle:$version, values untouched"

# 2. What real tools read: the manifest skopeo serves hashes to the digest,
# the config says how to run it, and umoci unpacks the layer.
skopeo inspect --raw "oci:$W/s1:$ref" > "$W/manifest.json"
[[ sha256:$(sha256sum < "$W/manifest.json" | cut -d' ' -f1) == "$digest" ]] || fail "skopeo's manifest is not $digest"
skopeo inspect --config "oci:$W/s1:$ref" > "$W/config.json"
[[ $(jget "$W/config.json" 'd["config"]["Entrypoint"]') == "['/usr/local/bin/gpubundle']" ]] || fail "Entrypoint: $(cat "$W/config.json")"
[[ $(jget "$W/config.json" 'd["config"]["Labels"]["io.gpubundle.version"]') == "$version" ]] || fail "version label"
[[ $(jget "$W/config.json" 'd["config"]["Labels"]["io.gpubundle.binary-sha256"]') == "$(sha256sum < "$GB" | cut -d' ' -f1)" ]] ||
  fail "binary label is not the sha256 of $GB"
[[ $(jget "$W/config.json" 'd["architecture"] + "/" + d["os"] + " " + d["created"]') == "amd64/linux 2025-11-30T00:00:00Z" ]] ||
  fail "platform or created: $(cat "$W/config.json")"
skopeo copy -q "oci:$W/s1:$ref" "oci:$W/oci:tool" >/dev/null
umoci unpack --image "$W/oci:tool" "$W/bundle" > "$W/umoci.log" 2>&1 || { cat "$W/umoci.log"; fail "umoci unpack"; }
R=$W/bundle/rootfs
[[ $(readlink "$R/bin") == usr/bin && $(readlink "$R/lib") == usr/lib && $(stat -c %a "$R/tmp") == 1777 ]] || fail "merged /usr or /tmp"
cmp -s "$GB" "$R/usr/local/bin/gpubundle" || fail "the binary in the image is not $GB"
[[ -x $R/usr/bin/make && -x $R/usr/sbin/depmod && -e $R/usr/bin/cc && -x $R/usr/bin/gpgv ]] || fail "a build tool is missing"
certs=$(find "$R/usr/share/ca-certificates/mozilla" -name '*.crt' | wc -l)
[[ $certs -gt 0 && $(grep -c 'BEGIN CERTIFICATE' "$R/etc/ssl/certs/ca-certificates.crt") == "$certs" ]] ||
  fail "ca-certificates.crt does not hold the $certs certificates of ca-certificates"
[[ ! -e $R/usr/share/man && $(find "$R/usr/share/doc" -type f ! -name copyright | wc -l) == 0 ]] || fail "manual pages or docs in a slim image"
echo "ok: skopeo reads the manifest at that digest and the config; umoci unpacks merged /usr with the binary, the build tools" \
  "and the $certs certificates bundled; no manual pages or docs but the copyright files"

# 3. Inside: a mount namespace with /dev, /proc and this test's folder (same
# paths, so the same command lines) bound into the root, then chroot with the
# image's own environment.
path=$(jget "$W/config.json" '[e for e in d["config"]["Env"] if e.startswith("PATH=")][0]')
inside() {
  PATH_IN=$path unshare -m -- sh -ec '
    R=$1 W=$2; shift 2
    for d in dev proc; do mkdir -p "$R/$d"; done
    mount --rbind /dev "$R/dev"; mount -t proc proc "$R/proc"
    mkdir -p "$R$W"; mount --bind "$W" "$R$W"
    exec chroot "$R" /usr/bin/env -i "$PATH_IN" HOME=/root TMPDIR="$W" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" "$@"' \
    inside "$R" "$W" "$@"
}
[[ $(inside gpubundle --version) == "gpubundle $version" ]] || fail "gpubundle --version inside the image"
bash "$HERE/fixtures/make-installer.sh" "$W/inst" 580.95.05 >/dev/null
run=$W/inst/NVIDIA-Linux-x86_64-580.95.05.run
build=(driver build "$W/recipe.yaml" --installer "$run" --kernel "$kver" --base "$ref" -j 2)
# Both at once, each with its own store and sandbox.
t0=$SECONDS
"$GB" --store "$W/s1" "${build[@]}" > "$W/host.out" 2> "$W/host.err" &
here=$!
inside gpubundle --store "$W/s2" "${build[@]}" > "$W/inside.out" 2> "$W/inside.err" &
there=$!
wait "$here" || { cat "$W/host.err"; fail "driver build on this machine"; }
wait "$there" || { cat "$W/inside.err"; fail "driver build inside the tool image"; }
driver_s=$((SECONDS - t0))
grep -q "580-$kver-" "$W/host.out" || fail "driver build printed: $(cat "$W/host.out")"
[[ $(cat "$W/inside.out") == "$(cat "$W/host.out")" ]] ||
  fail "the driver image built inside differs: $(cat "$W/inside.out") vs $(cat "$W/host.out")"
echo "ok: driver build --kernel $kver inside the image gives the image built here (both in ${driver_s} s): $(cat "$W/host.out")"

# 4. A package no source has: one line naming it, exit 2, nothing stored.
set +e
"$GB" --store "$W/s3" -q driver tool-image "$W/recipe.yaml" --with gb-no-such-package > "$W/x.out" 2> "$W/x.err"
rc=$?
set -e
[[ $rc == 2 ]] || fail "--with gb-no-such-package: rc $rc: $(cat "$W/x.err")"
[[ $(grep -c . "$W/x.err") == 1 ]] || fail "--with gb-no-such-package: not one line: $(cat "$W/x.err")"
grep -q "gb-no-such-package" "$W/x.err" && grep -q standin-debian "$W/x.err" || fail "the error names neither: $(cat "$W/x.err")"
[[ -z $(skopeo inspect --raw "oci:$W/s3:$ref" 2>/dev/null) ]] || fail "a failed build stored an image"
echo "ok: --with gb-no-such-package: $(cat "$W/x.err")"
echo "PASS tool-image in $((SECONDS - started)) s"
