# Sourced by tests/integration/driver_matrix.sh and bench/driver_matrix.sh:
# the inputs of a six-kernel precompiled driver matrix, all on loopback.
#   matrix_setup     needs GB, W, TOOLS, HERE (tests/integration), PY and
#                    scripts/standin.sh sourced; exits 77 when the Debian
#                    packages are not at hand. Sets kernels (array), klist,
#                    run (the stand-in installer), base, push (the build
#                    registry, a real docker-registry, with a prefix) and writes
#                    W/recipe.yaml, W/registries.yaml (upstream stand-ins),
#                    W/build-registries.yaml (those plus the build registry),
#                    W/release.key and .pub.
# shellcheck shell=bash disable=SC2034  # sets variables for its callers
source "$HERE/package_repo_lib.sh"
matrix_setup() {
  # Six kernels: the newest Debian 12 ABI apt knows and the one before it, each
  # in its amd64, cloud-amd64 and rt-amd64 flavour.
  kver=$(apt-cache depends linux-headers-amd64 | sed -n 's/.*Depends: linux-headers-\(.*\)$/\1/p' | head -n1)
  [[ -n $kver ]] || { echo "SKIP: apt knows no linux-headers-amd64"; exit 77; }
  abi=${kver%-amd64}
  prev=$(apt-cache search --names-only '^linux-headers-[0-9.]+-[0-9]+-amd64$' | cut -d' ' -f1 | sed 's/^linux-headers-//; s/-amd64$//' |
    sort -V | grep -B1 -x -- "$abi" | head -n1)
  [[ -n $prev && $prev != "$abi" ]] || { echo "SKIP: apt knows no Debian kernel ABI before $abi"; exit 77; }
  kernels=()
  for a in "$abi" "$prev"; do kernels+=("$a-amd64" "$a-cloud-amd64" "$a-rt-amd64"); done
  with=()
  for k in "${kernels[@]}"; do with+=(--with "linux-headers-$k"); done
  apt_standin_up "${with[@]}"

  klist=$(IFS=,; echo "${kernels[*]}")
  {
    sed -e "s/^  kernels: \[.*\]/  kernels: [${klist//,/, }]/" "$HERE/../../examples/precompiled.yaml"
    apt_standin_sources
  } > "$W/in.yaml"
  standin_start "$W" v26.7.0 "$W/in.yaml"
  bash "$HERE/fixtures/make-installer.sh" "$W/inst" 580.95.05 >/dev/null
  run=$W/inst/NVIDIA-Linux-x86_64-580.95.05.run
  base=nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
  "$GB" keys generate --out "$W/release" >/dev/null
  # The build registry is the stand-in's empty docker-registry, plain HTTP.
  push="$SITE/drivers"
  cp "$W/registries.yaml" "$W/build-registries.yaml"
  printf '  %s:\n    plainHttp: true\n' "$SITE" >> "$W/build-registries.yaml"
}
