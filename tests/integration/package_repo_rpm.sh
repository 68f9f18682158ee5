#!/usr/bin/env bash
# The site package repository for the RHEL family (issue 17, conventional
# driver, rpm-md): `gpubundle build` of a rhel9 conventional recipe whose
# kernel packages come from a stand-in rpm-md mirror (tests/tools/rpm-standin.sh:
# signed repomd.xml, signed rpms) -> bundle -> `gpubundle import` into a
# loopback site registry -> the kit's repoConfig ConfigMap (a .repo file and
# the key, as the operator mounts them at /etc/yum.repos.d) -> the repository
# image pulled back from the site registry, its last layer served on loopback
# -> real dnf, configured by the ConfigMap over the driver image's own .repo
# files (repo_gpgcheck=1), runs makecache and downloads what the RHEL 9 driver
# script installs into an empty root: the repository alone satisfies their
# closure. A key other than the kit's is refused by dnf; without the kit's
# same-name keys the image's repositories fail makecache.
# Usage: package_repo_rpm.sh PATH/TO/gpubundle
set -euo pipefail
GB=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
# shellcheck source=tests/integration/package_repo_lib.sh
source "$HERE/package_repo_lib.sh"
for tool in docker-registry skopeo rpmbuild createrepo_c dnf gpg; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh)"; exit 77; }
done
W=$(mktemp -d -t gb-package-repo-rpm.XXXXXX)
cleanup() {
  bash "$TOOLS/rpm-standin.sh" stop "$W/rpm" >/dev/null 2>&1 || true
  standin_stop "$W"
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

bash "$TOOLS/rpm-standin.sh" "$W/rpm" > "$W/rpm.env" || fail "the stand-in rpm-md mirror did not start"
source "$W/rpm.env"
K=6.1.0-1.el9.x86_64

cat > "$W/conventional.yaml" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site-rhel}
operator:
  version: v26.7.0
target: {gpus: [H100-SXM5-80GB], os: rhel9, kernels: [$K], platforms: [linux/amd64]}
driver: {mode: conventional, version: "580.105.08"}
packages:
  sources:
    - {name: el9, type: rpm-md, url: "$RPM_STANDIN_URL", suites: [BaseOS, AppStream], keyring: "$RPM_STANDIN_KEYRING"}
  server: {image: "nvcr.io/gpubundle-test/httpd:1.36.1"}
YAML
standin_start "$W" v26.7.0 "$W/conventional.yaml"
"$GB" keys generate --out "$W/release" >/dev/null
export SOURCE_DATE_EPOCH=1764460800

"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" > "$W/build.json" 2> "$W/build.err" || { cat "$W/build.err"; fail "build"; }
lock=$W/site-rhel.lock.json
[[ $(jget "$lock" 'd["packageRepo"]["format"]') == rpm-md ]] || fail "the lock's packageRepo is not rpm-md"
echo "ok: build made an rpm-md site repository image ($(jget "$lock" '[i["source"] for i in d["images"] if i["components"] == ["packageRepo"]][0]'))"

"$GB" -q import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" || fail "import"
"$PY" - "$W/kit" "$W" > "$W/kit.env" <<'PYEOF' || fail "kit package-repo.yaml / values.yaml"
import sys, yaml
kit, w = sys.argv[1:3]
docs = list(yaml.safe_load_all(open(kit + "/package-repo.yaml")))
assert [d["kind"] for d in docs] == ["ConfigMap", "Deployment", "Service"], docs
data = docs[0]["data"]
masked = {"ubi.repo", "cuda-rhel8.repo", "cuda-rhel9.repo", "cuda-rhel10.repo", "epel.repo", "epel-testing.repo", "epel-cisco-openh264.repo"}
assert set(data) == {"gpubundle.repo", "gpubundle-repo.asc"} | masked, list(data)
repo = data["gpubundle.repo"]
import os
os.makedirs(w + "/configmap", exist_ok=True)
for key, text in data.items():
    open(w + "/configmap/" + key, "w").write(text)
assert "repo_gpgcheck=1" in repo.splitlines() and "gpgkey=file:///etc/yum.repos.d/gpubundle-repo.asc" in repo.splitlines(), repo
values = yaml.safe_load(open(kit + "/values.yaml"))
assert values["driver"]["repoConfig"]["configMapName"] == docs[0]["metadata"]["name"], values["driver"]
open(w + "/kit.repo", "w").write(repo)
open(w + "/kit-key.asc", "w").write(data["gpubundle-repo.asc"])
image = docs[1]["spec"]["template"]["spec"]["containers"][0]["image"]
name, digest = image.split("@")
print("IMAGE_BY_DIGEST=" + name.rsplit(":", 1)[0] + "@" + digest)
PYEOF
source "$W/kit.env"
echo "ok: kit: repoConfig ConfigMap with a .repo file (repo_gpgcheck=1) and the key, values driver.repoConfig"

# The repository as the site has it: the image from the site registry, its last layer.
layer=$(repo_image_layer "$IMAGE_BY_DIGEST" "$W/pulled")
mkdir -p "$W/served"
tar -xzf "$layer" -C "$W/served"
[ -f "$W/served/srv/gpubundle-repo/repodata/repomd.xml.asc" ] || fail "no signed repomd.xml in the image's last layer"
url=$(bash "$TOOLS/rpm-standin.sh" serve "$W/rpm" site "$W/served/srv/gpubundle-repo" /repodata/repomd.xml)

# dnf as the RHEL 9 driver container runs it (gpu-driver-container
# rhel9/nvidia-driver): reposdir is /etc/yum.repos.d as the image has it (its
# UBI, CUDA and EPEL repositories, here pointing at a closed port, as the
# internet is from an air-gapped node) with each ConfigMap key mounted over
# it; only the baseurl and the key's folder are moved to this machine. Then
# `yum makecache`, elfutils-libelf(-devel), kernel-headers, kernel-devel,
# kernel (which brings kernel-core and kernel-modules) and gcc at the version
# the kernel was built with (its .config: 11.3.1 for 6.1.0, where the closure
# alone would bring the newest, 11.4.1).
dnf_fetch() {  # NAME KEYFILE [MASK]
  local d=$W/dnf-$1 f
  rm -rf "$d" && mkdir -p "$d/repos"
  for f in ubi.repo cuda-rhel9.repo epel.repo; do
    printf '[%s]\nname=%s\nbaseurl=http://127.0.0.1:9/%s\nenabled=1\ngpgcheck=0\n' "${f%.repo}" "${f%.repo}" "${f%.repo}" > "$d/repos/$f"
  done
  if [ "${3:-mask}" = mask ]; then cp "$W"/configmap/*.repo "$d/repos/"; fi
  cp "$2" "$d/repos/gpubundle-repo.asc"
  sed -e "s|^baseurl=.*|baseurl=$url|" -e "s|^gpgkey=file:///etc/yum.repos.d/|gpgkey=file://$d/repos/|" "$W/kit.repo" > "$d/repos/gpubundle.repo"
  printf '[main]\ncachedir=%s/cache\nlogdir=%s/log\npersistdir=%s/persist\nreposdir=%s/repos\ninstall_weak_deps=0\n' \
    "$d" "$d" "$d" "$d" > "$d/dnf.conf"
  local dnf=(dnf -y --config "$d/dnf.conf" --setopt=reposdir="$d/repos" --installroot "$d/root" --releasever 9)
  "${dnf[@]}" makecache > "$d/out.log" 2>&1 || return 1
  "${dnf[@]}" install --downloadonly --destdir "$d/got" elfutils-libelf.x86_64 elfutils-libelf-devel.x86_64 \
    "kernel-headers-$K" "kernel-devel-$K" "kernel-$K" gcc-11.3.1 >> "$d/out.log" 2>&1
}
dnf_fetch site "$W/kit-key.asc" || { tail -5 "$W/dnf-site/out.log"; fail "dnf refused the site repository"; }
for p in kernel kernel-headers kernel-devel kernel-core kernel-modules; do
  f=$W/dnf-site/got/$p-${K%.x86_64}.x86_64.rpm
  [ -f "$f" ] || fail "dnf did not fetch $p: $(ls "$W/dnf-site/got")"
  cmp -s "$f" "$RPM_STANDIN_WWW/BaseOS/Packages/$(basename "$f")" || fail "$(basename "$f") differs from the upstream mirror's"
done
for f in elfutils-libelf-0.190-2.el9.x86_64.rpm elfutils-libelf-devel-0.190-2.el9.x86_64.rpm gcc-11.3.1-1.el9.x86_64.rpm; do
  [ -f "$W/dnf-site/got/$f" ] || fail "dnf did not fetch $f: $(ls "$W/dnf-site/got")"
done
echo "ok: real dnf with the kit's repoConfig over the image's own repositories: makecache, then what the RHEL 9 driver script installs (kernel, elfutils-libelf-devel, gcc-11.3.1 as the kernel's .config names)"
if dnf_fetch unmasked "$W/kit-key.asc" keep; then fail "dnf makecache passed with the image's unreachable repositories enabled"; fi
grep -q '127.0.0.1:9' "$W/dnf-unmasked/out.log" || fail "makecache without the masking keys failed for another reason: $(tail -3 "$W/dnf-unmasked/out.log")"
echo "ok: without the kit's same-name keys, makecache fails on the image's own repositories (as on an air-gapped node)"
if dnf_fetch other "$W/rpm/other-key.asc"; then fail "dnf took the site repository under another key"; fi
echo "ok: under another key dnf refuses the site repository"
echo "PASS package-repo-rpm"
