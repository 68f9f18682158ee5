#!/usr/bin/env bash
# The README's main command: the whole story on one machine with no internet.
#   1. install the dependencies and build;
#   2. start a stand-in upstream on loopback: registries playing nvcr.io and
#      registry.k8s.io, seeded with synthetic images named like a real GPU
#      Operator release, and a Helm repo serving a chart generated from the
#      facts in tests/tools/releases.yaml (nothing outside the repository);
#   3. gpubundle build: resolve, mirror, install kit, signed bundle, verify;
#   4. verify the bundle as the site would, import it into a registry playing
#      the site, and show the install kit and the next steps;
#   5. node images with a preinstalled driver: bake a signed overlay from a
#      stand-in NVIDIA installer for this machine's kernel headers, ship it in
#      a delta bundle, and export it at the site;
#   6. the handover report: the install kit plus recorded acceptance results
#      (examples/acceptance-results) into one self-contained HTML file;
#   7. a site without a registry: gpubundle serve answers pulls straight from
#      the bundle; one image pulled through it with the bundle's digest;
#   8. stop everything it started, even when a step fails.
# --keep leaves the registries up for exploring.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=false
[[ ${1:-} == --keep ]] && keep=true

section() { printf '\n\033[1m==== %s\033[0m\n\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

section "0. Dependencies (Debian packages) and the build"
echo "checking the Debian packages gpubundle needs (scripts/install-deps.sh installs what is missing):"
bash scripts/install-deps.sh
build=${GPUBUNDLE_BUILD_DIR:-build}
echo "configuring and building gpubundle in $build/ with CMake and Ninja"
echo "(several minutes the first time on a small machine; [done/total] counts the compile steps):"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
SECONDS=0
cmake --build "$build" -j "$(nproc)" --target gpubundle  # the tests are built by scripts/test.sh
echo "built $build/builder/gpubundle in ${SECONDS}s"
GB=$(cd "$build" && pwd)/builder/gpubundle
TOOLS=$PWD/tests/tools
source scripts/standin.sh

W=$(mktemp -d /tmp/gpubundle-demo.XXXXXX)
serve_pid=
finish() {
  [[ -z $serve_pid ]] || kill -TERM "$serve_pid" 2>/dev/null || true
  if $keep; then
    printf '\nstill running (--keep): nvcr.io stand-in http://%s, registry.k8s.io stand-in http://%s, site http://%s, Helm repo %s\nstop them with: %s/tests/tools/registry.py stop --dir %s/reg; %s/tests/tools/helmrepo.py stop --dir %s/helm\n' \
      "$NVCR" "$K8S" "$SITE" "$HELM" "$PWD" "$W" "$PWD" "$W"
  else
    standin_stop "$W"
    rm -rf "$W"
  fi
}
trap finish EXIT

section "1. A recipe: H200 nodes on Ubuntu 22.04, two kernels, precompiled driver 580, GPU Operator v26.7.0"
cat examples/precompiled.yaml

section "2. A stand-in upstream on loopback (no internet here)"
echo "starting the registries and pushing synthetic images for every image the recipe resolves to..."
standin_start "$W" v26.7.0 examples/precompiled.yaml
echo "nvcr.io          -> http://$NVCR  ($("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$W/seed-nvcr.json") images)"
echo "registry.k8s.io  -> http://$K8S"
echo "Helm repository  -> $HELM  (gpu-operator v26.7.0: a stand-in chart made from tests/tools/releases.yaml)"
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
echo "values.yaml, the whole file (every image at the site registry, pinned by digest where the operator allows):"
cat "$W/install-kit/values.yaml"
echo
"$W/install-kit/install.sh" --help 2>/dev/null | head -5 || true
cat <<NEXT

Next steps at the site:
  1. copy install-kit/containerd/certs.d/* to /etc/containerd/certs.d/ on every node
     (or install-kit/crio/registries.conf.d/* for CRI-O), so nodes pull nvcr.io/... from the site;
  2. review install-kit/values.yaml, then: install-kit/install.sh --dry-run && install-kit/install.sh
  3. after the operator settles: install-kit/verify.sh (operator pods, GPUs allocatable, CUDA smoke pod, MIG state)
NEXT

section "6. Node images with the driver preinstalled (driver.enabled=false)"
kbuild=$(ls -d /lib/modules/*/build 2>/dev/null | head -n1 || true)
if [[ -z $kbuild || ! -f $kbuild/include/generated/utsrelease.h ]]; then
  echo "skipped: no kernel build tree under /lib/modules/*/build (linux-headers-amd64)"
else
  kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kbuild/include/generated/utsrelease.h")
  echo "a stand-in NVIDIA-Linux-x86_64-580.95.05.run (real makeself, real Kbuild modules) and a Secure Boot key:"
  bash tests/integration/fixtures/make-installer.sh "$W/installer" 580.95.05 >/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/mok.key" -out "$W/mok.crt" -days 365 -subj "/CN=site MOK" 2>/dev/null
  sed -e "s/^  kernels: .*/  kernels: [$kver]/" -e 's/^  mode: precompiled/  mode: host\n  version: "580.95.05"/' \
    -e '/^  branch:/d' "$W/recipe.yaml" > "$W/node-image.yaml"
  cd "$W"
  run "$GB" --store "$W/store" node-image bake node-image.yaml --installer installer/NVIDIA-Linux-x86_64-580.95.05.run \
    --kernel-build "$kbuild" --sign-key mok.key --sign-cert mok.crt -o overlay --lock site-precompiled.lock.json
  echo
  echo "a delta bundle against the one the site has: only the overlay travels"
  run "$GB" --store "$W/store" bundle create site-precompiled.lock.json -o site-b.bundle --key release.key --since site-a.bundle
  run "$GB" node-image export --bundle site-b.bundle --pubkey release.pub -o site-overlay
  (cd site-overlay && find . -type f | sort)
  echo
  echo "the image pipeline runs: site-overlay/install.sh --root IMAGE_ROOT, then uses site-overlay/values.yaml:"
  cat site-overlay/values.yaml
  cd - >/dev/null
fi

section "7. The handover report"
echo "after install.sh the site runs verify.sh --json, gpubundle-node check --json on each node and the NCCL"
echo "all-reduce runs, and gathers the JSON in one folder. Here: the recorded samples in examples/acceptance-results"
echo "(its README says which are real and which are synthetic):"
ls examples/acceptance-results
echo "They come from other kits and clusters, so the report does not say PASS: it says INCOMPLETE and names them."
report="$(cd "$build" && pwd)/acceptance-report.html"
run "$GB" report --kit "$W/install-kit" examples/acceptance-results -o "$report"
echo "one HTML file, no external assets (inline SVG plot, no script): open $report in a browser"
echo

section "8. A site without a registry: gpubundle serve"
echo "serve verifies the bundle as import does, then answers the registry pull API straight from the bundle file,"
echo "read-only (docs/serve.md); the kit from import --serve points the nodes at it and carries its systemd unit:"
run "$GB" -q import "$W/site-a.bundle" --serve "http://127.0.0.1:5055/gpu" --pubkey "$W/release.pub" -o "$W/serve-kit"
(cd "$W/serve-kit" && ls serve)
"$GB" serve "$W/site-a.bundle" --pubkey "$W/release.pub" --prefix gpu --listen 127.0.0.1:0 --ready-file "$W/serve.ready" \
  --access-log "$W/serve-access.log" &
serve_pid=$!
for _ in $(seq 300); do [[ -s $W/serve.ready ]] && break; sleep 0.1; done
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$W/serve.ready")
"$GB" --json bundle inspect "$W/site-a.bundle" > "$W/inspect.json"
read -r image digest < <(python3 -c 'import json,sys; i=next(i for i in json.load(open(sys.argv[1]))["images"] if "/gpu-operator:" in i["ref"]); print(i["ref"], i["digest"])' "$W/inspect.json")
echo "pulling ${image} through serve, as 127.0.0.1:$port/gpu/${image#*/}:"
run skopeo copy -q --all --preserve-digests --src-tls-verify=false "docker://127.0.0.1:$port/gpu/${image#*/}" "dir:$W/pulled"
echo "its digest: sha256:$(sha256sum < "$W/pulled/manifest.json" | cut -d' ' -f1) (the bundle's: $digest)"
echo "the access log's last line: $(tail -n 1 "$W/serve-access.log")"
kill -TERM "$serve_pid"
wait "$serve_pid"
serve_pid=
echo
echo "demo: done"
