#!/usr/bin/env bash
# The test command (README, .ci/run): install dependencies, configure, build,
# and run every unit and integration test with CTest. Then the hostile-input
# jobs (docs/security.md):
#   - sanitizer job: an ASan+UBSan build in build-asan running the unit tests
#     and the hostile-input suites (ctest -L 'unit|hostile'); any sanitizer
#     report fails the run, even from a process whose failure a test expected;
#   - fuzz job: the libFuzzer targets (clang) in build-fuzz, each replaying its
#     regression inputs and corpus, then fuzzing for GPUBUNDLE_FUZZ_SECONDS.
# The two jobs run with GPUBUNDLE_HOSTILE_JOBS=1. They are not yet on by
# default: neither has run end to end on the 2-core CI machine (see the
# issue's closing note), and a red CI would hold back everything else.
set -euo pipefail
cd "$(dirname "$0")/.."

phase() { echo "== test.sh: $1 ($SECONDS s since start)"; }

bash scripts/install-deps.sh
build=${GPUBUNDLE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j 2 --timeout 600
if [[ ${GPUBUNDLE_HOSTILE_JOBS:-0} != 1 ]]; then
  echo "test.sh: sanitizer and fuzz jobs not run (GPUBUNDLE_HOSTILE_JOBS=1 runs them)"
  exit 0
fi

phase "sanitizer job (build-asan)"
asan="build-asan"
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUBUNDLE_SANITIZE=ON >/dev/null
cmake --build "$asan" -j "$(nproc)"
# Reports go to files as well as failing the process: a hostile-input test
# expects non-zero exits, so only the files tell a sanitizer abort apart.
# One prefix for both: a process with both runtimes writes where UBSan says.
reports=$PWD/$asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
common=halt_on_error=1:abort_on_error=1
suites_rc=0
ASAN_OPTIONS=$common:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1:log_path=$reports/report \
UBSAN_OPTIONS=$common:print_stacktrace=1:log_path=$reports/report \
  ctest --test-dir "$asan" -L 'unit|hostile' --output-on-failure -j 2 --timeout 900 || suites_rc=$?
if compgen -G "$reports/*" >/dev/null; then
  echo "test.sh: sanitizer reports:"
  for f in "$reports"/*; do echo "--- $f"; head -n 60 "$f"; done
  exit 1
fi
((suites_rc == 0)) || exit "$suites_rc"

phase "fuzz job (build-fuzz)"
fuzz="build-fuzz"
cmake -S . -B "$fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUBUNDLE_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$fuzz" --target fuzz_targets -j "$(nproc)"
bash fuzz/run.sh "$fuzz" "${GPUBUNDLE_FUZZ_SECONDS:-25}"
phase "done"
