#!/usr/bin/env bash
# A precompiled recipe with two kernels and no hand-fetched headers: `gpubundle
# build --installer` fetches each kernel's header packages from the recipe's
# apt source (a stand-in made of real Debian packages, signed, on loopback),
# builds one driver image per kernel and the site gets both after import.
# The headers stay in the store: `driver build --kernel` works again with the
# repository gone. Bad input names the kernel and the repository.
set -euo pipefail
GB=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
command -v docker-registry skopeo apt-ftparchive gpg >/dev/null ||
  { echo "SKIP: docker-registry, skopeo, apt-ftparchive or gpg missing"; exit 77; }
W=$(mktemp -d -t gb-precompiled-packages.XXXXXX)
trap '"$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true; standin_stop "$W"; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$HERE/package_repo_lib.sh"
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
export TMPDIR=$W SOURCE_DATE_EPOCH=1764460800

# Two flavours of one Debian kernel ABI: they share -common and linux-kbuild.
# The stand-in serves their full closure: the headers' own-source closure is
# a filter over it, so a repository missing libc6 would fail the build here.
kver=$(apt-cache depends linux-headers-amd64 | sed -n 's/.*Depends: linux-headers-\(.*\)$/\1/p' | head -n1)
[[ -n $kver ]] || { echo "SKIP: apt knows no linux-headers-amd64"; exit 77; }
cloud=${kver%-amd64}-cloud-amd64
apt_standin_up --with "linux-headers-$cloud"

{
  sed -e "s/^  kernels: \[.*\]/  kernels: [$kver, $cloud]/" "$HERE/../../examples/precompiled.yaml"
  apt_standin_sources
} > "$W/in.yaml"
standin_start "$W" v26.7.0 "$W/in.yaml"
bash "$HERE/fixtures/make-installer.sh" "$W/inst" 580.95.05 >/dev/null
run=$W/inst/NVIDIA-Linux-x86_64-580.95.05.run
"$GB" keys generate --out "$W/release" >/dev/null

"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" --installer "$run" --driver-base nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 \
  > "$W/build.json" 2> "$W/build.err" || { cat "$W/build.err"; fail "build"; }
[[ $(jget "$W/build.json" 'd["builtDriverImages"]') == 2 ]] || fail "builtDriverImages: $(cat "$W/build.json")"
for k in "$kver" "$cloud"; do
  skopeo inspect --raw "oci:$W/store:localhost/gpubundle/kernel-packages:$k" > "$W/headers-$k.json" ||
    fail "no header artifact for $k in the store"
  titles=$(jget "$W/headers-$k.json" '" ".join(sorted(l["annotations"]["org.opencontainers.image.title"].split("_")[0] for l in d["layers"]))')
  [[ $titles == *"linux-headers-$k"* && $titles == *"linux-headers-${kver%-amd64}-common"* && $titles == *linux-kbuild-* ]] ||
    fail "header artifact of $k holds: $titles"
  [[ " $titles " != *" gcc-12 "* && " $titles " != *" libc6 "* ]] || fail "the same-source closure of $k reached the compiler: $titles"
done
echo "ok: build fetched the headers of $kver and $cloud (own source only) and stored them as artifacts"

"$GB" -q import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" || fail "import"
for k in "$kver" "$cloud"; do
  ref=nvcr.io/nvidia/driver:580-$k-ubuntu22.04
  digest=$(jget "$W/site-precompiled.lock.json" '[i["digest"] for i in d["images"] if i["source"] == "'"$ref"'" and i["origin"] == "built"][0]')
  skopeo inspect --tls-verify=false --raw "docker://$SITE/gpu/nvidia/driver:580-$k-ubuntu22.04" > "$W/site-$k.json" ||
    fail "driver image for $k is not at the site"
  [[ sha256:$(sha256sum < "$W/site-$k.json" | cut -d' ' -f1) == "$digest" ]] || fail "site digest of $k differs from the lock"
  skopeo inspect --tls-verify=false --config "docker://$SITE/gpu/nvidia/driver:580-$k-ubuntu22.04" > "$W/config-$k.json"
  [[ $(jget "$W/config-$k.json" '" ".join(d["config"]["Env"])') == *KERNEL_VERSION=$k* ]] || fail "config of $k"
done
echo "ok: after import the site has a driver image for each kernel, as the lock records them"

# The repository is gone: the stored headers are enough.
"$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null
"$GB" --store "$W/store" driver build "$W/recipe.yaml" --installer "$run" --kernel "$cloud" \
  --base nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 > "$W/again.out" 2> "$W/again.err" || { cat "$W/again.err"; fail "driver build --kernel offline"; }
grep -q "580-$cloud-ubuntu22.04@sha256:" "$W/again.out" || fail "driver build --kernel printed: $(cat "$W/again.out")"
echo "ok: driver build --kernel $cloud again with the repository down: headers from the store"

expect() {  # expect RC PATTERN... -- command
  local want=$1; shift
  local pats=()
  while [[ $1 != -- ]]; do pats+=("$1"); shift; done; shift
  set +e; "$@" > "$W/x.out" 2> "$W/x.err"; local rc=$?; set -e
  [[ $rc == "$want" ]] || fail "$* -> rc $rc, want $want: $(cat "$W/x.err")"
  [[ $(grep -c . "$W/x.err") == 1 ]] || fail "$* -> not one line: $(cat "$W/x.err")"
  for p in "${pats[@]}"; do grep -qF -- "$p" "$W/x.err" || fail "$* -> no '$p' in: $(cat "$W/x.err")"; done
}
expect 2 "--kernel 9.9.9-nope" "target.kernels" -- \
  "$GB" --store "$W/store" -q driver build "$W/recipe.yaml" --installer "$run" --kernel 9.9.9-nope
# A kernel the repository does not have; the repository serving again.
apt_standin_up --with "linux-headers-$cloud"
sed -e "s/^  kernels: \[.*\]/  kernels: [6.1.0-999-amd64]/" -e "s|url: http://127.0.0.1:[0-9]*|url: $APT_URL|" "$W/recipe.yaml" > "$W/missing.yaml"
expect 2 "linux-headers-6.1.0-999-amd64" "kernel 6.1.0-999-amd64" "standin-debian" -- \
  "$GB" --store "$W/store" -q driver build "$W/missing.yaml" --installer "$run"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|url: http://127.0.0.1:[0-9]*|url: http://127.0.0.1:$port|" "$W/missing.yaml" > "$W/down.yaml"
expect 1 "http://127.0.0.1:$port" "standin-debian" -- \
  "$GB" --store "$W/store" -q driver build "$W/down.yaml" --installer "$run"
# Inputs are checked before the network: a missing installer with the repository down is bad input.
expect 2 "$W/none.run" "no such installer" -- "$GB" --store "$W/store" -q driver build "$W/down.yaml" --installer "$W/none.run"
echo "ok: unknown kernel, missing package and unreachable repository: one line each, naming kernel and repository"
echo "PASS precompiled-packages"
