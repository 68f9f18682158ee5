#!/usr/bin/env bash
# Every benchmark in one run, then each goal line they printed (measured,
# target, holds or misses), with the machine load before and after.
# Usage: bench/all.sh [BUILD_DIR]   (env: BIG_MB for mirror.sh; SCALE_GB=N adds scale.sh;
#        BUNDLE_GB=N adds bundle_10g.sh, create vs tar + sync past the page cache, ~10 min at 10)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
out=$(mktemp /tmp/gb-bench-all.XXXXXX)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
run() { echo "== $*"; "$@" 2>&1 | tee -a "$out"; }
run bash bench/mirror.sh "$build/builder/gpubundle"
run bash bench/bundle.sh "$build"
run bash bench/import.sh "$build"
if [[ -n ${SCALE_GB:-} ]]; then run bash bench/scale.sh "$build"; fi
if [[ -n ${BUNDLE_GB:-} ]]; then run bash bench/bundle_10g.sh "$build"; fi
echo
echo "== goals (load after: $(cut -d' ' -f1-3 /proc/loadavg))"
grep '^goal:' "$out"
