#!/usr/bin/env bash
# Runs every fuzz target of a GPUBUNDLE_FUZZ build (docs/security.md):
#   1. replays fuzz/regressions/<target>/ (inputs that once crashed it);
#   2. fuzzes for SECONDS from fuzz/corpus/<target>/ (replayed first), new
#      inputs going to a scratch folder so the committed corpus stays as is.
# A crash, leak, timeout or out-of-memory fails the run; the input is kept
# under OUT_DIR/<target>/ and named in the output: copy it into
# fuzz/regressions/<target>/ once fixed.
#   fuzz/run.sh BUILD_FUZZ_DIR [SECONDS] [OUT_DIR] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:?usage: fuzz/run.sh BUILD_FUZZ_DIR [SECONDS] [OUT_DIR] [TARGET...]}
seconds=${2:-25}
out=${3:-$build/fuzz-findings}
shift $(($# < 3 ? $# : 3))
targets=("$@")
if ((${#targets[@]} == 0)); then
  for c in fuzz/corpus/*/; do targets+=("$(basename "$c")"); done
fi
# Same sanitizer settings as the ASan job; leaks count as failures in both.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
# Per input: 10 s and 2 GiB, far above what any reader needs for a few KB.
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536)

# fuzz_one TARGET: replays, then fuzzes; its verdict line goes to $out/TARGET.verdict.
fuzz_one() {
  local t=$1
  local bin=$build/fuzz/fuzz_$t log=$out/$t.log verdict=$out/$t.verdict
  if [[ ! -x $bin ]]; then
    echo "fuzz: $bin missing (build the fuzz_targets target)" > "$verdict"
    return 1
  fi
  mkdir -p "$out/$t"
  local regressions=("fuzz/regressions/$t"/*)
  if [[ -e ${regressions[0]} ]] && ! "$bin" "${limits[@]}" "${regressions[@]}" >"$log.regressions" 2>&1; then
    { echo "fuzz: $t FAILED on a regression input:"; tail -n 40 "$log.regressions"; } > "$verdict"
    return 1
  fi
  local scratch start=$SECONDS rc=0
  scratch=$(mktemp -d)
  "$bin" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/$t/" \
    "$scratch" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  rm -rf "$scratch"
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  if ((rc != 0)); then
    { echo "fuzz: $t FAILED (exit $rc) after $((SECONDS - start)) s; input kept in $out/$t/:"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|    #[0-9] )' "$log" | head -n 30
      ls "$out/$t/"; } > "$verdict"
    return 1
  fi
  echo "fuzz: $t ok: ${runs:-?} inputs in $((SECONDS - start)) s, ${cov:-cov: ?}" > "$verdict"
}

# One target per core at a time: each fuzzer is single-threaded.
jobs=${GPUBUNDLE_FUZZ_JOBS:-$(nproc)}
mkdir -p "$out"
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
  rm -f "$out/$t.verdict"
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$out/$t.verdict" 2>/dev/null || echo "fuzz: $t gave no verdict"
  grep -q "^fuzz: $t ok: " "$out/$t.verdict" 2>/dev/null || failed+=("$t")
done
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (logs in $out)"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
