#!/usr/bin/env bash
# The README's main command: installs, builds, and shows gpubundle at work.
# Today it resolves every example recipe against the real GPU Operator chart
# values in ../shared; the end-to-end demo (mirror, bundle, import) grows here.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${GPUBUNDLE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
gpubundle=$build/builder/gpubundle
shared=$(cd .. && pwd)/shared/upstream/gpu-operator
if [[ ! -d $shared ]]; then
  echo "demo: $shared is absent; it holds the real chart values the demo resolves against" >&2
  exit 1
fi

section() { printf '\n==== %s\n\n' "$*"; }

for tag in v26.7.0 v24.9.2; do
  dir=examples; [[ $tag == v24.9.2 ]] && dir=examples/v24.9.2
  for mode in conventional precompiled host; do
    section "gpubundle resolve $dir/$mode.yaml (GPU Operator $tag)"
    "$gpubundle" resolve "$dir/$mode.yaml" --chart "$shared/$tag"
  done
done

section "A recipe the resolver refuses: B200 with driver 550"
if "$gpubundle" resolve examples/b200-driver-550.yaml --chart "$shared/v24.9.2"; then
  echo "demo: expected a refusal" >&2
  exit 1
fi
echo
echo "demo: done"
