#!/usr/bin/env bash
# Scale (not a test): a GPU Operator-sized set (seed.py --set scale: 18 images,
# multi-GB CUDA and driver layers, small layers shared by most images,
# incompressible) in a loopback docker-registry, at several sizes. For each size
# it times, with peak RSS and the peak disk use beyond the stage's own output:
#   gpubundle mirror (cold)       peer: -
#   gpubundle bundle create       peer: tar -cf of the store + sync of the tar
#   gpubundle bundle verify       peer: openssl dgst -sha256 of the bundle
#   gpubundle import (--no-kit)   into an empty second registry
# and then time(big)/time(small) over size(big)/size(small) per stage (1.00 = linear).
# Goals (issue 15): linear time, peak RSS < 100 MB, no temporary copy of the payload.
# Columns: cached = share of the stage's input in the page cache before it ran
# (fincore); output = what the stage is meant to leave (store, tar, bundle, the
# site registry's storage); extra = peak disk use beyond that output (sampled
# every 0.2 s by bench/disk_use.py); flight = bytes in registry _uploads and
# TMPDIR at that peak.
# Usage: bench/scale.sh [BUILD_DIR]
# Env: SCALE_GB (10), SCALE_STEPS (sizes in GB, default "SCALE_GB/10 SCALE_GB"),
#      JOBS (mirror -j, 8), DROP_CACHES=1 (drop the page cache before each stage; root).
set -euo pipefail
cd "$(dirname "$0")/.."
GB=$(realpath "${1:-build}")/builder/gpubundle
SCALE_GB=${SCALE_GB:-10}
SCALE_STEPS=${SCALE_STEPS:-$(awk -v g="$SCALE_GB" 'BEGIN{print g/10, g}')}
JOBS=${JOBS:-8}
DROP_CACHES=${DROP_CACHES:-0}
# shellcheck source=tests/integration/mirror_lib.sh
source tests/integration/mirror_lib.sh  # W, start_registry, registry_config, make_lock, jget
# shellcheck source=bench/measure.sh
source bench/measure.sh  # goal
[ -x "$GB" ] || { echo "no gpubundle at $GB (build first)" >&2; exit 2; }
/usr/bin/python3 -c 'import cryptography' 2>/dev/null || { echo "SKIP: needs python3-cryptography" >&2; exit 77; }

M=$W/measure                 # this script's own files (outside what is measured)
export TMPDIR=$W/tmp         # a temporary file of any stage lands in W and is seen
mkdir -p "$M" "$TMPDIR"
sampler=
stop_sampler() { if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=; fi; }
trap 'stop_sampler; cleanup' EXIT

# Disk: the source registry and the store, then store + bundle + site registry: 3x the payload at most.
largest=$(tr ' ' '\n' <<<"$SCALE_STEPS" | sort -g | tail -1)
need=$(awk -v g="$largest" 'BEGIN{printf "%d", g * 3.3e9}')
free=$(df --output=avail -B1 "$W" | tail -1)
[ "$free" -gt "$need" ] || { echo "need $((need >> 30)) GiB free in $W, have $((free >> 30)) GiB" >&2; exit 2; }

du_b() { du -sB1 "$@" 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }  # allocated bytes
disk_use=(bench/disk_use.py "$W" --skip "$M" --flight "$TMPDIR")  # W less M and logs
used() { "$PY" "${disk_use[@]}"; }
caches() {
  if [ "$DROP_CACHES" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
}

# Percent of the bytes of the files under PATH... that are in the page cache.
cached() {
  command -v fincore >/dev/null || { echo '?'; return; }
  find "$@" -type f -print0 | xargs -0 -r fincore -b -n -o RES,SIZE 2>/dev/null |
    awk '{r += $1; s += $2} END {printf "%.0f", s ? (r < s ? 100 * r / s : 100) : 0}'
}

# Peak of used, sampled every 0.2 s, into $M/peak with the bytes then in flight.
start_sampler() {
  echo 0 0 > "$M/peak"
  "$PY" "${disk_use[@]}" --watch "$M/peak" &  # not a function: $! must be the sampler itself
  sampler=$!
}

# stage POINT NAME INPUT OUTPUT CMD...: runs CMD under /usr/bin/time and the
# disk sampler; INPUT is what it reads (for the page-cache share), OUTPUT what
# it is meant to leave (a path, or - for nothing). Appends "point name seconds
# rss_kib output_bytes extra_bytes in_flight_bytes strays cached%" to $M/rows.
stage() {
  local point=$1 name=$2 in=$3 out=$4; shift 4
  caches
  local before warm; before=$(used); warm=$(cached "$in")
  touch "$M/mark"
  start_sampler
  if ! /usr/bin/time -o "$M/time" -f '%e %M' "$@" > "$M/log" 2>&1; then
    stop_sampler; cat "$M/log" >&2; fail "$name at $point GB"
  fi
  stop_sampler
  local peak flight after intended=0 strays
  read -r peak flight < "$M/peak"
  after=$(used)
  [ "$after" -le "$peak" ] || peak=$after
  [ "$out" = - ] || intended=$(du_b "$out")
  # New or changed files outside the intended output (registry logs and the
  # lock, where mirror records the digests, aside).
  strays=$(find "$W" -path "$M" -prune -o -newer "$M/mark" -type f ! -name '*.log' ! -name site.lock.json -print |
    { if [ "$out" = - ]; then cat; else grep -v -F "$out"; fi; } || true)
  [ -z "$strays" ] || { echo "$name: files left beside the output:" >&2; head -5 <<<"$strays" >&2; }
  read -r secs rss < "$M/time"
  echo "$point $name $secs $rss $intended $((peak - before - intended)) $flight $(grep -c . <<<"$strays" || true) $warm" >> "$M/rows"
}

"$GB" keys generate --out "$W/k" >/dev/null 2>&1
"$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$W/charts" >/dev/null  # the stand-in chart
: > "$M/rows"
: > "$M/sizes"
echo "scale bench: steps $SCALE_STEPS GB, gpubundle $GB, -j $JOBS, caches $([ "$DROP_CACHES" = 1 ] && echo dropped before each stage || echo warm)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (nproc $(nproc), $(free -g | awk '/Mem:/ {print $2}') GiB RAM)"

for g in $SCALE_STEPS; do
  src=$(start_registry src)
  echo "[$g GB] seeding ..." >&2
  t0=$(date +%s.%N)
  "$PY" "$TOOLS/seed.py" --registry "$src" --plain-http --set scale --scale-gb "$g" -j 4 > "$M/seed.json"
  seeded=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}')
  make_lock "$W/site.lock.json" "$M/seed.json" linux/amd64,linux/arm64
  "$PY" - "$W/site.lock.json" "$W/charts/gpu-operator-v26.7.0.tgz" <<'PYEOF'
import json, sys
lock = json.load(open(sys.argv[1])); lock["chart"]["source"] = sys.argv[2]
lock["operator"]["version"] = lock["chart"]["version"] = lock["chart"]["appVersion"] = "v26.7.0"
json.dump(lock, open(sys.argv[1], "w"), indent=2)
PYEOF
  registry_config "$W/reg.yaml" "$src" "http://$src"
  payload=$(jget "$M/seed.json" 'd["totalBytes"]')
  echo "$g $payload" >> "$M/sizes"
  echo "[$g GB] $(jget "$M/seed.json" 'len(d["images"])') images, $((payload >> 20)) MiB distinct blobs, seeded in ${seeded} s; load $(cut -d' ' -f1 /proc/loadavg)" >&2

  stage "$g" mirror "$W/reg/src/storage" "$W/store" "$GB" -q --store "$W/store" mirror "$W/site.lock.json" --registry-config "$W/reg.yaml" -j "$JOBS"
  "$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null; rm -rf "$W/reg"  # the source is done with

  # shellcheck disable=SC2016 # $1 is expanded by sh -c
  stage "$g" "tar -cf + sync" "$W/store" "$W/store.tar" sh -c 'tar -cf "$1/store.tar" -C "$1" store && sync "$1/store.tar"' _ "$W"
  rm -f "$W/store.tar"
  stage "$g" "bundle create" "$W/store" "$W/b.bundle" "$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key"
  stage "$g" "bundle verify" "$W/b.bundle" - "$GB" -q bundle verify "$W/b.bundle" --pubkey "$W/k.pub"
  stage "$g" "openssl dgst" "$W/b.bundle" - openssl dgst -sha256 "$W/b.bundle"
  site=$(start_registry site)
  stage "$g" import "$W/b.bundle" "$W/reg/site/storage" "$GB" -q import "$W/b.bundle" --registry "http://$site/site" --pubkey "$W/k.pub" --no-kit
  "$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null
  rm -rf "$W/reg" "$W/store" "$W/b.bundle"
done

# The table, the linearity ratios and the verdicts.
verdict=0
awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v summary="$M/summary" '
  FNR == NR { size[$1] = $2; FNR_sizes = NR; next }
  {
    n = NF; point = $1; name = $2; for (i = 3; i <= n - 7; i++) name = name " " $i
    secs = $(n-6); rss = $(n-5); output = $(n-4); extra = $(n-3); flight = $(n-2); strays = $(n-1); warm = $n
    peer = (name ~ /^(tar|openssl)/)
    mb = size[point] / 1048576
    if (!header++) printf "%9s  %-16s %10s %6s %9s %7s %12s %10s %6s\n", "size", "stage", "time", "MiB/s", "peak RSS",
      "cached", "output MiB", "extra MiB", "flight"
    printf "%6s GB  %-16s %8.2f s %6.0f %5.0f MiB %6s%% %12.0f %10.0f %6.0f %s\n", point, name, secs, mb / (secs > 0 ? secs : 0.01),
      rss / 1024, warm, output / 1048576, (extra > 0 ? extra : 0) / 1048576, flight / 1048576,
      (strays > 0 ? "(" strays " stray files)" : "")
    t[name, point] = secs
    if (!(name in seen)) { seen[name] = 1; order[++names] = name }
    if (!peer) {
      if (rss * 1024 / 1e6 > maxrss) maxrss = rss * 1024 / 1e6
      if (100 * extra / size[point] > maxextra) maxextra = 100 * extra / size[point]
      if (rss * 1024 >= 100e6) { bad = bad sprintf("  RSS: %s at %s GB: %.0f MiB\n", name, point, rss / 1024) }
      if (extra > 0.05 * size[point] || strays > 0) {
        bad = bad sprintf("  disk: %s at %s GB: %.0f MiB beyond its output at the peak (then %.0f MiB in registry _uploads and TMPDIR), %d stray files\n",
                          name, point, extra / 1048576, flight / 1048576, strays)
      }
    }
    if (!(point in p)) { p[point] = 1; pts[++npts] = point }
  }
  END {
    if (NR - FNR_sizes != 6 * npts) bad = bad sprintf("  %d of %d stage rows: a stage failed (see above)\n", NR - FNR_sizes, 6 * npts)
    if (npts > 1) {
      a = pts[1]; b = pts[npts]
      printf "\nlinearity, time(%s GB) / time(%s GB) over size ratio %.2f (1.00 = linear, < 1: fixed costs):\n", b, a, size[b] / size[a]
      for (i = 1; i <= names; i++) {
        nm = order[i]
        if (t[nm, a] > 0) printf "  %-16s %.2f\n", nm, (t[nm, b] / t[nm, a]) / (size[b] / size[a])
        if (t[nm, a] > 0 && nm !~ /^(tar|openssl)/) {
          stage = nm; gsub(/ /, "-", stage)
          printf "linear %s %.2f\n", stage, (t[nm, b] / t[nm, a]) / (size[b] / size[a]) > summary
        }
      }
    }
    printf "rss %.0f\nextra %.1f\n", maxrss, maxextra > summary
    printf "\nload at end: %s\n", load
    if (bad == "") print "PASS: peak RSS < 100 MB and no stage used more than 5% of the payload in extra disk"
    else { printf "FAIL:\n%s", bad; status = 1 }
    exit status
  }' "$M/sizes" "$M/rows" || verdict=$?

# The goal lines bench/all.sh collects.
while read -r what a b; do
  case $what in
    rss) goal "scale: peak RSS of any stage" "$a" "<" 100 " MB" ;;
    extra) goal "scale: extra disk, % of payload" "$a" "<" 5 "%" ;;
    linear) goal "scale: $a time growth / size growth" "$b" "<=" 1.2 "" ;;
  esac
done < "$M/summary"
exit "${verdict:-0}"
