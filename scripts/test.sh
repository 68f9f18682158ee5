#!/usr/bin/env bash
# The test command (README, .ci/run): install dependencies, configure, build,
# and run the integration tests with CTest. Then the hostile-input job
# (docs/security.md), in one clang build in build-asan with ASan, UBSan and
# libFuzzer coverage:
#   - the unit tests and the hostile-input suites (ctest -L 'unit|hostile'),
#     which run only here;
#     any sanitizer report fails the run, even from a process whose failure a
#     test expected;
#   - the libFuzzer targets, each replaying its regression inputs and corpus,
#     then fuzzing for GPUBUNDLE_FUZZ_SECONDS (default 5).
# GPUBUNDLE_HOSTILE_JOBS=0 leaves that job out (a quick local run): then the
# first build runs every suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase line also gives the CPU time of the steps finished so far: this
# shell's reaped children, user + system (fields 16 and 17 of /proc/PID/stat).
ticks=$(getconf CLK_TCK)
phase() {
  local st
  read -ra st </proc/$$/stat
  echo "== test.sh: $1 ($SECONDS s since start, $(((st[15] + st[16]) / ticks)) s CPU)"
}

phase "dependencies"
bash scripts/install-deps.sh
# Scratch space (TMPDIR) on tmpfs when /dev/shm has room: the driver suites
# unpack kernel header packages (driver-matrix's six-kernel build alone writes
# ~84,000 files), and on a virtual disk creating a file can cost up to a
# millisecond of kernel time (over half of their CPU). The checks are the same; bench/ keeps
# measuring the disk.
# GPUBUNDLE_TEST_TMPDIR=DIR picks the place instead (e.g. /tmp).
scratch_base=${GPUBUNDLE_TEST_TMPDIR:-}
if [[ -z $scratch_base && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]] &&
  (($(df -Pk /dev/shm | awk 'NR == 2 {print $4}') >= 6 << 20)) &&
  (($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) >= 12 << 20)); then
  scratch_base=/dev/shm
fi
scratch_base=${scratch_base:-${TMPDIR:-/tmp}}
TMPDIR=$(mktemp -d "$scratch_base/gpubundle-test.XXXXXX")
export TMPDIR
cleanup_scratch() { rm -rf "$TMPDIR"; }
trap cleanup_scratch EXIT
echo "test.sh: scratch space (TMPDIR) $TMPDIR ($(stat -f -c %T "$TMPDIR"))"

phase "build"
build=${GPUBUNDLE_BUILD_DIR:-build}
hostile=${GPUBUNDLE_HOSTILE_JOBS:-1}
# The suites labelled unit or hostile run once, in the sanitizer build below:
# under ASan and UBSan they check more than here. This build runs the rest and
# leaves their own programs out (a quarter of its compile time).
skip=OFF only=()
[[ $hostile == 0 ]] || { skip=ON; only=(-LE 'unit|hostile'); }
# Unity builds (CMakeLists.txt), and -O1 for -O2: the integration suites
# spend their time in peers, OpenSSL and zstd, and -O1 compiles in two thirds
# of the CPU time (229 s against 354 s, alone on CI's two cores).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUBUNDLE_UNITY=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG" -DGPUBUNDLE_SKIP_SANITIZED_SUITES=$skip >/dev/null
cmake --build "$build" -j "$(nproc)"
asan="build-asan"
if [[ $hostile != 0 ]]; then
  # The sanitizer build (below) starts now, at the lowest priority: the
  # integration suites mostly wait on registries and peers, and it takes
  # the cores they leave idle.
  # One build serves both: every library carries ASan, UBSan and the fuzzer's
  # coverage hooks (harmless outside a fuzz target), which halves CI's build.
  # lld: its two dozen links (ASan runtime in each) cost ~55 s less CPU than
  # with ld.bfd.
  cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUBUNDLE_FUZZ=ON -DGPUBUNDLE_UNITY=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld >/dev/null
  # ninja itself (not cmake --build), so that killing it stops its compilers.
  nice -n 19 ninja -C "$asan" -j "$(nproc)" >"$asan/build.log" 2>&1 &
  asan_build=$!
  trap 'kill "$asan_build" 2>/dev/null || true; cleanup_scratch' EXIT
fi
phase "tests"
# hostile-unit is a subset of unit (the [hostile] cases, for `ctest -L hostile`
# alone): unit runs every case already.
ctest --test-dir "$build" --output-on-failure -j 2 --timeout 600 -E '^hostile-unit$' "${only[@]}"
if [[ $hostile == 0 ]]; then
  echo "test.sh: sanitizer and fuzz job left out (GPUBUNDLE_HOSTILE_JOBS=0)"
  exit 0
fi

phase "sanitizer and fuzz job (build-asan, started beside the tests)"
wait "$asan_build" || { tail -n 40 "$asan/build.log"; echo "test.sh: the sanitizer build failed (log: $asan/build.log)"; exit 1; }
trap cleanup_scratch EXIT
cmake --build "$asan" -j "$(nproc)"  # nothing left to do; prints the last step
phase "sanitizer suites"
# Reports go to files as well as failing the process: a hostile-input test
# expects non-zero exits, so only the files tell a sanitizer abort apart.
# One prefix for both: a process with both runtimes writes where UBSan says.
# One suite more than cores: they wait on registries and peers for a sixth of
# the time (118 s against 137 s for the 13 at -j 3 and -j 2 on CI's two cores).
reports=$PWD/$asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common=halt_on_error=1:abort_on_error=1
suites_rc=0
ASAN_OPTIONS=$common:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1:log_path=$reports/report \
UBSAN_OPTIONS=$common:print_stacktrace=1:log_path=$reports/report \
  ctest --test-dir "$asan" -L 'unit|hostile' -E '^hostile-unit$' --output-on-failure -j "$(($(nproc) + 1))" --timeout 900 || suites_rc=$?
# LeakSanitizer's exit check cannot read the registers of a thread that is
# being killed (the kill -9 suites do that at random moments); it says so and
# goes on. A file with only that line is no finding; any other line is.
benign='^==[0-9]+==Unable to get registers from thread [0-9]+\.$'
findings=0
for f in "$reports"/*; do
  [[ -e $f ]] || continue
  if grep -qE "$benign" "$f" && ! grep -qvE "$benign" "$f"; then
    echo "test.sh: note: $f: LeakSanitizer could not stop a thread that was being killed: $(head -n 1 "$f")"
    continue
  fi
  ((findings == 0)) && echo "test.sh: sanitizer reports:"
  findings=$((findings + 1))
  echo "--- $f"; head -n 60 "$f"
done
((findings == 0)) || exit 1
((suites_rc == 0)) || exit "$suites_rc"

phase "fuzz targets"
bash fuzz/run.sh "$asan" "${GPUBUNDLE_FUZZ_SECONDS:-5}"
phase "done"
