#!/usr/bin/env bash
# Installs every build and test dependency of gpubundle from Debian 12 packages.
# Idempotent: packages already present are skipped; safe to run on every CI start.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config ninja-build
  libcurl4-openssl-dev libarchive-dev libssl-dev libyaml-cpp-dev libzstd-dev
  libsqlite3-dev libcli11-dev catch2 nlohmann-json3-dev
  # real peers used by the tests and the demo
  docker-registry skopeo umoci makeself kmod linux-headers-amd64
  python3 python3-yaml openssl shellcheck apache2-utils ca-certificates curl time zstd
  debootstrap  # node-image bake test: minbase root, made once and cached
  containerd podman python3-yaml  # kit-runtimes test: the kit's runtime config read by real runtimes
  python3-cryptography util-linux-extra  # bench/scale.sh: AES-keystream layers in seed.py --set scale; fincore
  # run by gpubundle itself for package repositories: gpgv and gpg (OpenPGP),
  # createrepo_c (rpm-md site repositories), rpmkeys (rpms signed one by one)
  gpgv gnupg gpgconf createrepo-c rpm
  apt-utils xz-utils  # packages-apt test: the stand-in apt repository (apt-ftparchive)
  busybox  # package-repo test: the repository image's httpd command, run by a real busybox
  prometheus  # monitoring test: promtool check rules / test rules on the kit's alerts and dashboard queries
  chromium  # report-browser test: headless Chromium screenshots the handover report
  pci.ids  # GPU names for PCI ids the catalog lacks (resolver messages)
  dnf python3-rpm  # rpm-md tests: dnf and rpm's own version order as the references
  # sanitizer and fuzz jobs: clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  sudo=sudo
else
  sudo=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
