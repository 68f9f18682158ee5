#!/usr/bin/env bash
# The test command (README, .ci/run): install dependencies, configure, build,
# and run every unit and integration test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${GPUBUNDLE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j 2 --timeout 600
