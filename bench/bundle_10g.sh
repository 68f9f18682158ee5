#!/usr/bin/env bash
# Bundle create past the page cache (issue 33, not a test): gpubundle bundle
# create against its peer, tar -cf of the store + sync of the tar, on the scale
# set (seed.py --set scale, BUNDLE_GB GB of incompressible blobs) mirrored once.
# This virtual disk varies between runs by more than a change can show, so:
#   - the runs are interleaved in rounds, each round one run of each contender,
#     the order rotated from round to round (no one always runs first);
#   - the page cache is dropped before every run (sync, then drop_caches);
#   - every output is deleted (and the deletion synced) before the next run;
#   - the goal is the ratio of the medians over PAIRS rounds (throughput:
#     bundle bytes per second over tar bytes per second; >= 1: create is as
#     fast as tar + sync), with every run, the spread and the load printed.
# BASE=path/to/another/gpubundle adds that binary to every round (the code
# before a change, measured in the same run), and checks that both write the
# same bytes (sha256 of each one's first bundle).
# Usage: bench/bundle_10g.sh [BUILD_DIR]
# Env: BUNDLE_GB (10), PAIRS (5, at least 5 for the goal), BASE (none),
#      DROP_CACHES (1; needs root, 0 leaves the cache as it is),
#      BUNDLE_WORK=DIR (keep the mirrored store there and reuse it next time;
#      default: a temp folder removed on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
GB=$(realpath "${1:-build}")/builder/gpubundle
BUNDLE_GB=${BUNDLE_GB:-10}
PAIRS=${PAIRS:-5}
BASE=${BASE:-}
DROP_CACHES=${DROP_CACHES:-1}
# shellcheck source=tests/integration/mirror_lib.sh
source tests/integration/mirror_lib.sh  # W, start_registry, registry_config, make_lock, jget, fail
# shellcheck source=bench/measure.sh
source bench/measure.sh  # goal
[ -x "$GB" ] || { echo "no gpubundle at $GB (build first)" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "BASE=$BASE is not an executable" >&2; exit 2; }
/usr/bin/python3 -c 'import cryptography' 2>/dev/null || { echo "SKIP: needs python3-cryptography" >&2; exit 77; }
if [ "$DROP_CACHES" = 1 ] && ! [ -w /proc/sys/vm/drop_caches ]; then
  echo "DROP_CACHES=1 needs root (or run with DROP_CACHES=0)" >&2; exit 2
fi

D=${BUNDLE_WORK:-$W}  # the store, lock and key; outputs go next to them (one filesystem)
mkdir -p "$D"
export TMPDIR=$D/tmp
mkdir -p "$TMPDIR"
G=$W/measure
mkdir -p "$G"

# The store, mirrored once (or found from an earlier run with BUNDLE_WORK).
if [ -f "$D/ready-$BUNDLE_GB" ]; then
  echo "reusing the $BUNDLE_GB GB store in $D"
else
  rm -rf "$D/store" "$D"/ready-*
  need=$(awk -v g="$BUNDLE_GB" 'BEGIN{printf "%d", g * 2.2e9 + 20e9}')  # source + store, then store + one output; 20 GB to spare
  free=$(df --output=avail -B1 "$D" | tail -1)
  [ "$free" -gt "$need" ] || { echo "need $((need >> 30)) GiB free in $D, have $((free >> 30)) GiB" >&2; exit 2; }
  src=$(start_registry src)
  echo "seeding $BUNDLE_GB GB (seed.py --set scale) ..." >&2
  "$PY" "$TOOLS/seed.py" --registry "$src" --plain-http --set scale --scale-gb "$BUNDLE_GB" -j 4 > "$D/seed.json"
  make_lock "$D/site.lock.json" "$D/seed.json" linux/amd64,linux/arm64
  "$PY" "$TOOLS/helmrepo.py" pack --release v26.7.0 --out "$D/charts" >/dev/null  # the stand-in chart
  "$PY" - "$D/site.lock.json" "$D/charts/gpu-operator-v26.7.0.tgz" <<'PYEOF'
import json, sys
lock = json.load(open(sys.argv[1])); lock["chart"]["source"] = sys.argv[2]
lock["operator"]["version"] = lock["chart"]["version"] = lock["chart"]["appVersion"] = "v26.7.0"
json.dump(lock, open(sys.argv[1], "w"), indent=2)
PYEOF
  registry_config "$W/reg.yaml" "$src" "http://$src"
  echo "mirroring ..." >&2
  "$GB" -q --store "$D/store" mirror "$D/site.lock.json" --registry-config "$W/reg.yaml" -j 8 || fail "mirror"
  "$PY" "$TOOLS/registry.py" stop --dir "$W/reg" >/dev/null; rm -rf "$W/reg"  # the source is done with
  "$GB" keys generate --out "$D/k" >/dev/null 2>&1
  touch "$D/ready-$BUNDLE_GB"
fi
free=$(df --output=avail -B1 "$D" | tail -1)
store_b=$(du -sb "$D/store" | cut -f1)
[ "$free" -gt $((store_b + 20000000000)) ] || { echo "need one more store's size and 20 GB free in $D, have $((free >> 30)) GiB" >&2; exit 2; }

caches() {
  sync
  if [ "$DROP_CACHES" = 1 ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

# contender NAME: runs it once, timed, after dropping the cache; appends
# "NAME seconds user sys bytes load1" to $G/runs and removes the output.
contender() {
  local name=$1 out cmd
  # shellcheck disable=SC2016 # $1 is expanded by sh -c
  case $name in
    tar) out=$D/store.tar; cmd=(sh -c 'tar -cf "$1/store.tar" -C "$1" store && sync "$1/store.tar"' _ "$D") ;;
    gpubundle) out=$D/b.bundle; cmd=("$GB" --store "$D/store" -q bundle create "$D/site.lock.json" -o "$out" --key "$D/k.key") ;;
    base) out=$D/base.bundle; cmd=("$BASE" --store "$D/store" -q bundle create "$D/site.lock.json" -o "$out" --key "$D/k.key") ;;
  esac
  caches
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -o "$G/time" -f '%e %U %S' "${cmd[@]}" > "$G/log" 2>&1 || { cat "$G/log" >&2; fail "$name"; }
  local bytes; bytes=$(stat -c %s "$out")
  # The first bundle of each binary: its digest, to check that both write the same bytes.
  if [ "$name" != tar ] && [ -n "$BASE" ] && ! [ -f "$G/sum.$name" ]; then sha256sum < "$out" | cut -c1-64 > "$G/sum.$name"; fi
  rm -f "$out"
  sync  # the deletion's own work lands here, not in the next run
  read -r secs user sys < "$G/time"
  echo "$name $secs $user $sys $bytes $load" >> "$G/runs"
}

contenders=(gpubundle tar)
[ -z "$BASE" ] || contenders+=(base)
n=${#contenders[@]}
: > "$G/runs"
echo "bundle create vs tar -cf + sync at $BUNDLE_GB GB ($((store_b >> 20)) MiB store), $PAIRS rounds of: ${contenders[*]}"
echo "gpubundle: $GB${BASE:+; base: $BASE}; caches $([ "$DROP_CACHES" = 1 ] && echo dropped before each run || echo left warm)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (nproc $(nproc), $(free -g | awk '/Mem:/ {print $2}') GiB RAM)"
for ((round = 1; round <= PAIRS; round++)); do
  line="round $round:"
  for ((k = 0; k < n; k++)); do
    c=${contenders[$(((round - 1 + k) % n))]}
    contender "$c"
    line+=$(tail -1 "$G/runs" | awk '{printf "  %s %.2f s (user %.1f sys %.1f, load %s)", $1, $2, $3, $4, $6}')
  done
  echo "$line"
done

if [ -n "$BASE" ]; then
  if cmp -s "$G/sum.gpubundle" "$G/sum.base"; then echo "gpubundle and base wrote the same bundle (sha256 $(cut -c1-16 "$G/sum.base")...)"
  else echo "gpubundle and base wrote DIFFERENT bundles: $(cat "$G/sum.gpubundle") vs $(cat "$G/sum.base")"; fi
fi

# Medians, spread (min-max), and the ratios of the medians.
awk '
  function median(name,   i, j, t, m, a) {
    m = cnt[name]; for (i = 1; i <= m; i++) a[i] = s[name, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    lo[name] = a[1]; hi[name] = a[m]
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  { s[$1, ++cnt[$1]] = $2; bytes[$1] = $5; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  END {
    printf "\n%-10s %8s %8s %8s %9s %7s\n", "", "median", "min", "max", "spread", "MiB/s"
    for (i = 1; i <= k; i++) {
      c = order[i]; med[c] = median(c)
      printf "%-10s %6.2f s %6.2f s %6.2f s %8.0f%% %7.0f\n", c, med[c], lo[c], hi[c], 100 * (hi[c] - lo[c]) / med[c], bytes[c] / med[c] / 1048576
    }
    r = (bytes["gpubundle"] / med["gpubundle"]) / (bytes["tar"] / med["tar"])
    printf "ratio %.2f\n", r > "/dev/stderr"
    if ("base" in med) printf "base %.2f\n", (bytes["base"] / med["base"]) / (bytes["tar"] / med["tar"]) > "/dev/stderr"
  }' "$G/runs" 2> "$G/ratios"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
while read -r what r; do
  case $what in
    base) echo "base vs tar + sync: ${r}x (same run)" ;;
    ratio)
      if [ "$PAIRS" -ge 5 ]; then goal "bundle create at $BUNDLE_GB GB vs tar + sync (median of $PAIRS interleaved pairs)" "$r" ">=" 1.0 x
      else echo "bundle create vs tar + sync: ${r}x (only $PAIRS rounds: no goal line)"; fi ;;
  esac
done < "$G/ratios"
