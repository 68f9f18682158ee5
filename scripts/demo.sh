#!/usr/bin/env bash
# The README's main command: the whole story on one machine with no internet.
#   1. install the dependencies and build;
#   2. start a stand-in upstream on loopback: registries playing nvcr.io and
#      registry.k8s.io, seeded with synthetic images named like a real GPU
#      Operator release, and a Helm repo serving the chart from ../shared;
#   3. gpubundle build: resolve, mirror, install kit, signed bundle, verify;
#   4. verify the bundle as the site would, import it into a registry playing
#      the site, and show the install kit and the next steps;
#   5. stop everything it started, even when a step fails.
# --keep leaves the registries up for exploring.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=false
[[ ${1:-} == --keep ]] && keep=true

bash scripts/install-deps.sh
build=${GPUBUNDLE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
GB=$PWD/$build/builder/gpubundle
TOOLS=$PWD/tests/tools
source scripts/standin.sh

W=$(mktemp -d /tmp/gpubundle-demo.XXXXXX)
finish() {
  if $keep; then
    printf '\nstill running (--keep): nvcr.io stand-in http://%s, registry.k8s.io stand-in http://%s, site http://%s, Helm repo %s\nstop them with: %s/tests/tools/registry.py stop --dir %s/reg; %s/tests/tools/helmrepo.py stop --dir %s/helm\n' \
      "$NVCR" "$K8S" "$SITE" "$HELM" "$PWD" "$W" "$PWD" "$W"
  else
    standin_stop "$W"
    rm -rf "$W"
  fi
}
trap finish EXIT
section() { printf '\n\033[1m==== %s\033[0m\n\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

section "1. A recipe: H200 nodes on Ubuntu 22.04, two kernels, precompiled driver 580, GPU Operator v26.7.0"
cat examples/precompiled.yaml

section "2. A stand-in upstream on loopback (no internet here)"
standin_start "$W" v26.7.0 examples/precompiled.yaml
echo "nvcr.io          -> http://$NVCR  ($("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$W/seed-nvcr.json") images)"
echo "registry.k8s.io  -> http://$K8S"
echo "Helm repository  -> $HELM"
echo "site registry    -> http://$SITE"
cat "$W/registries.yaml"

section "3. The build machine: one command"
run "$GB" keys generate --out "$W/release"
cd "$W"
run "$GB" --store "$W/store" build recipe.yaml -o site-a.bundle --key release.key --registry-config registries.yaml
cd - >/dev/null

section "4. Across the air gap: verify, inspect, import into the site registry"
run "$GB" bundle verify "$W/site-a.bundle" --pubkey "$W/release.pub"
run "$GB" bundle inspect "$W/site-a.bundle"
run "$GB" import "$W/site-a.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/install-kit"
echo
echo "importing the same bundle again pushes nothing:"
run "$GB" import "$W/site-a.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" --no-kit

section "5. The install kit for the site"
(cd "$W/install-kit" && find . -type f | sort)
echo
echo "values.yaml (every image at the site registry):"
grep -E '^[a-zA-Z-]+:|repository:|version:|tag:' "$W/install-kit/values.yaml" | head -40
echo
"$W/install-kit/install.sh" --help 2>/dev/null | head -5 || true
cat <<NEXT

Next steps at the site:
  1. copy install-kit/containerd/certs.d/* to /etc/containerd/certs.d/ on every node
     (or install-kit/crio/registries.conf.d/* for CRI-O), so nodes pull nvcr.io/... from the site;
  2. review install-kit/values.yaml, then: install-kit/install.sh --dry-run && install-kit/install.sh
  3. after the operator settles: install-kit/verify.sh (operator pods, GPUs allocatable, CUDA smoke pod, MIG state)
NEXT
echo
echo "demo: done"
