#!/usr/bin/env bash
# Node overlay artifact throughput against its peers, in one run (not a test).
# A stand-in installer grows a 300 MiB userspace library (slices of this
# machine's own shared libraries, so it compresses like real ELF code), then:
#   node-image bake (kbuild + overlay + zstd artifact)  vs  zstd -3 -T1 of overlay.tar
#   node-image export from the store                   vs  zstd -dc | sha256sum
#   node-image export from a verified bundle            vs  sha256sum of the bundle + zstd -dc | sha256sum
# plus peak RSS of bake and both exports. Usage: bench/overlay.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
GB=$(realpath "${1:-build}")/builder/gpubundle
PY=/usr/bin/python3
TOOLS=$PWD/tests/tools
W=$(mktemp -d /tmp/gb-bench-overlay.XXXXXX)
trap 'rm -rf "$W"' EXIT
kbuild=$(ls -d /lib/modules/*/build | head -n1)
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
VER=580.95.05
export TMPDIR=$W

source bench/measure.sh

bash tests/integration/fixtures/make-installer.sh "$W/inst" "$VER" >/dev/null
find /usr/lib/x86_64-linux-gnu -maxdepth 1 -name '*.so*' -type f -size +100k -print0 | sort -z |
  xargs -0 cat 2>/dev/null | head -c $((300 << 20)) > "$W/inst/tree/libcuda.so.$VER" || true
printf 'libcuda.so.%s 0755 CUDA_LIB NATIVE MODULE:cuda\n' "$VER" >> "$W/inst/tree/.manifest"
cat > "$W/site.yaml" <<R
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: bench-overlay}
operator: {version: v26.7.0, chart: $W/gpu-operator-v26.7.0.tgz}
target: {gpus: [H200-SXM-141GB], os: ubuntu22.04, kernels: [$kver], platforms: [linux/amd64]}
driver: {mode: host, version: "$VER", kernelModuleType: open}
R
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W" >/dev/null  # the stand-in chart
"$GB" -q resolve "$W/site.yaml" -o "$W/site.lock.json"
"$PY" -c 'import json,sys; p=sys.argv[1]; l=json.load(open(p)); l["images"]=[]; json.dump(l, open(p,"w"))' "$W/site.lock.json"
"$GB" --store "$W/store" -q mirror "$W/site.lock.json"   # the chart only
"$GB" keys generate --out "$W/k" >/dev/null

bake=("$GB" --store "$W/store" -q node-image bake "$W/site.yaml" --installer "$W/inst/tree" --kernel-build "$kbuild" -o "$W/out" --lock "$W/site.lock.json")
t_bake=$(best "${bake[@]}")
rss_bake=$(rss "${bake[@]}")
tar_bytes=$(stat -c %s "$W/out/overlay.tar")
t_zstd=$(best sh -c "zstd -q -3 -T1 -f '$W/out/overlay.tar' -o '$W/peer.tar.zst'")
zst_bytes=$(stat -c %s "$W/peer.tar.zst")
"$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/o.bundle" --key "$W/k.key"
bundle_bytes=$(stat -c %s "$W/o.bundle")

export_store() { rm -rf "$W/e1"; "$GB" --store "$W/store" -q node-image export -o "$W/e1"; }
export_bundle() { rm -rf "$W/e2"; "$GB" -q node-image export --bundle "$W/o.bundle" --pubkey "$W/k.pub" -o "$W/e2"; }
t_exp_store=$(best export_store)
t_exp_bundle=$(best export_bundle)
t_peer_store=$(best sh -c "zstd -dc '$W/peer.tar.zst' | sha256sum")
t_peer_bundle=$(best sh -c "sha256sum '$W/o.bundle' && zstd -dc '$W/peer.tar.zst' > '$W/peer.tar' && sha256sum '$W/peer.tar'")
rss_exp_store=$(rss sh -c "rm -rf '$W/e1'; '$GB' --store '$W/store' -q node-image export -o '$W/e1'")
rss_exp_bundle=$(rss sh -c "rm -rf '$W/e2'; '$GB' -q node-image export --bundle '$W/o.bundle' --pubkey '$W/k.pub' -o '$W/e2'")
cmp -s "$W/out/overlay.tar" "$W/e2/overlay.tar" || { echo "bench: exported overlay differs" >&2; exit 1; }

printf '\noverlay.tar %s MiB; artifact layer %s MiB (zstd -3 -T1 alone: %s MiB); bundle %s MiB\n' \
  "$((tar_bytes >> 20))" "$(( $(du -sb "$W/store/blobs" | cut -f1) >> 20 ))" "$((zst_bytes >> 20))" "$((bundle_bytes >> 20))"
printf '%-44s %8s s %6s MiB/s\n' "node-image bake (kbuild + overlay + artifact)" "$t_bake" "$(mbps "$tar_bytes" "$t_bake")"
printf '%-44s %8s s %6s MiB/s\n' "zstd -3 -T1 overlay.tar" "$t_zstd" "$(mbps "$tar_bytes" "$t_zstd")"
printf '%-44s %8s s %6s MiB/s\n' "node-image export (store)" "$t_exp_store" "$(mbps "$tar_bytes" "$t_exp_store")"
printf '%-44s %8s s %6s MiB/s\n' "zstd -dc | sha256sum" "$t_peer_store" "$(mbps "$tar_bytes" "$t_peer_store")"
printf '%-44s %8s s %6s MiB/s\n' "node-image export --bundle (verify + write)" "$t_exp_bundle" "$(mbps "$tar_bytes" "$t_exp_bundle")"
printf '%-44s %8s s %6s MiB/s\n' "sha256sum bundle; zstd -dc > tar; sha256sum" "$t_peer_bundle" "$(mbps "$tar_bytes" "$t_peer_bundle")"
printf '\nratios (time of the peer / ours; higher is better for gpubundle):\n'
printf '  export (store) vs zstd -dc|sha256sum:       %sx\n' "$(ratio "$t_peer_store / $t_exp_store")"
printf '  export (bundle) vs sha256sum+zstd+sha256sum: %sx\n' "$(ratio "$t_peer_bundle / $t_exp_bundle")"
printf '  bake vs zstd alone:                          %sx (bake also builds the modules)\n' "$(ratio "$t_zstd / $t_bake")"
printf 'peak RSS: bake %s MiB, export (store) %s MiB, export (bundle) %s MiB\n' \
  "$((rss_bake / 1024))" "$((rss_exp_store / 1024))" "$((rss_exp_bundle / 1024))"
