#!/usr/bin/env bash
# The site package repository end to end (issue 17, conventional driver):
# `gpubundle build` of a conventional recipe whose packages come from a
# stand-in apt repository of real Debian packages (tests/tools/apt_standin.py)
# -> bundle -> `gpubundle import` into a loopback site registry -> the kit's
# package-repo.yaml and values -> the repository image pulled back from the
# site registry with skopeo, its last layer extracted and served on loopback
# by a real busybox httpd running the image's own command -> real apt,
# configured only by the kit's sources line and key (URL and key path
# rewritten to this machine), updates and downloads the kernel headers on an
# empty dpkg status, so the repository alone satisfies their closure.
# Then refusals: a tampered InRelease, a key other than the kit's.
# Usage: package_repo.sh PATH/TO/gpubundle
set -euo pipefail
GB=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/../tools
source "$HERE/../../scripts/standin.sh"
# shellcheck source=tests/integration/package_repo_lib.sh
source "$HERE/package_repo_lib.sh"
for tool in docker-registry skopeo apt-ftparchive apt-get gpg gpgv xz busybox; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh)"; exit 77; }
done
# grep reads all of the list: with pipefail, grep -q quitting early gave busybox a
# SIGPIPE, and the suite skipped as if httpd were missing.
busybox --list | grep -x httpd >/dev/null || { echo "SKIP: this busybox has no httpd applet"; exit 77; }
W=$(mktemp -d -t gb-package-repo.XXXXXX)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  "$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true
  standin_stop "$W"
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

apt_standin_up

# Only the headers' closure travels (kernelPackages); the server image is a
# stand-in in the nvcr.io stand-in, seeded like every other image of the lock.
cat > "$W/conventional.yaml" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site-conventional}
operator:
  version: v26.7.0
target: {gpus: [H100-SXM5-80GB], os: debian12, kernels: [$K], platforms: [linux/amd64]}
driver: {mode: conventional, version: "580.105.08"}
packages:
  sources:
    - {name: standin, type: apt, url: "$APT_URL", suites: [$APT_SUITE], components: [$APT_COMPONENT], keyring: "$APT_KEYRING"}
  kernelPackages: ["linux-headers-{kernel}"]
  server: {image: "nvcr.io/gpubundle-test/httpd:1.36.1"}
YAML
standin_start "$W" v26.7.0 "$W/conventional.yaml"
"$GB" keys generate --out "$W/release" >/dev/null
export SOURCE_DATE_EPOCH=1764460800

"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/site.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" > "$W/build1.json" 2> "$W/build1.err" || { cat "$W/build1.err"; fail "build"; }
[[ $(jget "$W/build1.json" '"packages" in d["phases"]') == True ]] || fail "no packages step: $(cat "$W/build1.json")"
lock=$W/site-conventional.lock.json
KEY_FILE=$W/store/keys/package-repo.asc
[ -f "$KEY_FILE" ] || fail "no repository key made in the store"
[ "$(stat -c %a "$KEY_FILE")" = 600 ] || fail "the repository key is not mode 0600"
FPR=$(gpg --batch --with-colons --show-keys "$KEY_FILE" 2>/dev/null | awk -F: '$1=="fpr"{print $10; exit}')
[[ $(jget "$lock" 'd["packageRepo"]["fingerprint"]') == "$FPR" ]] || fail "the lock's fingerprint is not the store key's ($FPR)"
[[ $(jget "$lock" 'd["packageRepo"]["publicKey"].startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")') == True ]] || fail "no public key in the lock"
grep -q "PRIVATE KEY" "$lock" && fail "the lock carries a private key"
REPO_SRC=$(jget "$lock" '[i["source"] for i in d["images"] if i["components"] == ["packageRepo"] and i["origin"] == "built"][0]')
REPO_DIGEST=$(jget "$lock" '[i["digest"] for i in d["images"] if i["components"] == ["packageRepo"]][0]')
[[ $(jget "$lock" '[i["source"] for i in d["images"] if i["components"] == ["packageServer"]]') == "['nvcr.io/gpubundle-test/httpd:1.36.1']" ]] \
  || fail "the server image is not in the lock's closure"
pass "build: $REPO_SRC ($REPO_DIGEST), key $FPR; packages step $(jget "$W/build1.json" '"%.1f s" % d["phases"]["packages"]')"
# The one package cache is the store's blobs: the headers .deb is one, and
# nothing is kept beside them in packages/.
headers_deb=$(find "$W" -path "$W/store" -prune -o -name "linux-headers-${K}_*.deb" -print | head -n1)
[[ -n $headers_deb ]] || fail "no linux-headers-$K .deb in the stand-in"
[ -f "$W/store/blobs/sha256/$(sha256sum < "$headers_deb" | cut -d' ' -f1)" ] || fail "the headers package is not a blob of the store"
[[ -z $(find "$W/store/packages" -maxdepth 1 -type f) ]] || fail "package files beside the blobs: $(ls "$W/store/packages")"
pass "the fetched packages are blobs of the store (one cache)"

# The same packages and key make the same image; the key stays.
"$GB" --store "$W/store" --json build "$W/recipe.yaml" -o "$W/again.bundle" --key "$W/release.key" \
  --registry-config "$W/registries.yaml" > "$W/build2.json" 2>/dev/null || fail "second build"
[[ $(jget "$lock" '[i["digest"] for i in d["images"] if i["components"] == ["packageRepo"]][0]') == "$REPO_DIGEST" ]] \
  || fail "the second build made another repository image"
cmp -s "$W/site.bundle" "$W/again.bundle" || fail "the second bundle is not byte-identical"
pass "re-build: same key, same repository image, byte-identical bundle; packages step $(jget "$W/build2.json" '"%.1f s" % d["phases"]["packages"]')"
# No image reaches the site repository's package blobs: gc frees them.
"$GB" --store "$W/store" store gc > "$W/gc.out" || fail "store gc"
[ ! -f "$W/store/blobs/sha256/$(sha256sum < "$headers_deb" | cut -d' ' -f1)" ] || fail "gc kept the headers package blob: $(cat "$W/gc.out")"
pass "store gc frees the cached packages: $(cat "$W/gc.out")"

# --repo-key: the site's own key signs instead; a missing one is one line naming it.
export GNUPGHOME=$W/gnupg-own
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-generate-key "site key <site@example.invalid>" ed25519 sign never 2>/dev/null
gpg --batch --armor --export-secret-keys > "$W/own.asc"
OWN=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1=="fpr"{print $10; exit}')
gpgconf --kill gpg-agent 2>/dev/null || true
unset GNUPGHOME
"$GB" --store "$W/store" -q build "$W/recipe.yaml" -o "$W/own.bundle" --key "$W/release.key" --lock "$W/own.lock.json" \
  --registry-config "$W/registries.yaml" --repo-key "$W/own.asc" || fail "build --repo-key"
[[ $(jget "$W/own.lock.json" 'd["packageRepo"]["fingerprint"]') == "$OWN" ]] || fail "--repo-key did not sign"
rc=0
"$GB" --store "$W/store" -q build "$W/recipe.yaml" -o "$W/none.bundle" --key "$W/release.key" --lock "$W/none.lock.json" \
  --registry-config "$W/registries.yaml" --repo-key "$W/missing.asc" 2> "$W/missing.err" || rc=$?
[ "$rc" = 2 ] && grep -q "missing.asc" "$W/missing.err" && [ "$(grep -c . "$W/missing.err")" = 1 ] \
  || { cat "$W/missing.err"; fail "a missing --repo-key: exit $rc, not one line"; }
pass "--repo-key signs with the site's key ($OWN); a missing one is refused"

"$GB" --json import "$W/site.bundle" --registry "http://$SITE/gpu" --pubkey "$W/release.pub" -o "$W/kit" > "$W/import.json" \
  || fail "import"
KIT=$W/kit
[ -f "$KIT/package-repo.yaml" ] || fail "the kit has no package-repo.yaml"
"$PY" - "$KIT" "$SITE" "$FPR" > "$W/kit.env" <<'PYEOF' || fail "kit package-repo.yaml / values.yaml"
import sys, yaml
kit, site, fpr = sys.argv[1:4]
docs = list(yaml.safe_load_all(open(kit + "/package-repo.yaml")))
kinds = [d["kind"] for d in docs]
assert kinds == ["ConfigMap", "Deployment", "Service"], kinds
cm = docs[0]
assert cm["metadata"]["name"] == "gpubundle-repo-config", cm["metadata"]
assert not any("namespace" in d["metadata"] for d in docs), "package-repo.yaml pins a namespace"  # install.sh applies it into its own
listing = cm["data"]["gpubundle.list"]
assert "trusted=yes" not in listing, listing
assert "signed-by=/etc/apt/sources.list.d/gpubundle-repo.asc" in listing, listing
image = docs[1]["spec"]["template"]["spec"]["containers"][0]["image"]
assert image.startswith(site + "/gpu/gpubundle/package-repo:"), image
assert "@sha256:" in image, image
values = yaml.safe_load(open(kit + "/values.yaml"))
assert values["driver"]["repoConfig"]["configMapName"] == "gpubundle-repo-config", values["driver"]
install = open(kit + "/install.sh").read()
assert install.index("package-repo.yaml") < install.index('helm upgrade --install "$release"')
open(sys.argv[1] + "/../kit-sources.list", "w").write(listing)
open(sys.argv[1] + "/../kit-key.asc", "w").write(cm["data"]["gpubundle-repo.asc"])
print("IMAGE=" + image)
name, digest = image.split("@")
print("IMAGE_BY_DIGEST=" + name.rsplit(":", 1)[0] + "@" + digest)  # skopeo takes a tag or a digest, not both
PYEOF
source "$W/kit.env"
grep -q "$FPR" "$KIT/package-repo.yaml" || fail "package-repo.yaml does not name the key"
pass "kit: repoConfig ConfigMap with the key, Deployment of $IMAGE, Service, driver.repoConfig"

# On a server the site runs: no Deployment or Service, its CA for driver.certConfig.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$W/ca.key" -out "$W/ca.pem" -days 2 \
  -subj /CN=site-ca 2>/dev/null
"$GB" --store "$W/store" -q overrides "$lock" --registry "http://$SITE/gpu" -o "$W/kit-own" \
  --package-repo-url https://packages.site.example/gpu/ --package-repo-ca "$W/ca.pem" || fail "overrides --package-repo-url"
"$PY" - "$W/kit-own" "$W/ca.pem" <<'PYEOF' || fail "kit for the site's own package server"
import sys, yaml
kit, ca = sys.argv[1:3]
docs = list(yaml.safe_load_all(open(kit + "/package-repo.yaml")))
assert [d["kind"] for d in docs] == ["ConfigMap", "ConfigMap"], docs
assert " https://packages.site.example/gpu/ gpubundle main" in docs[0]["data"]["gpubundle.list"], docs[0]
assert docs[1]["data"]["gpubundle-repo-ca.crt"] == open(ca).read(), docs[1]
values = yaml.safe_load(open(kit + "/values.yaml"))
assert values["driver"]["certConfig"]["name"] == docs[1]["metadata"]["name"], values["driver"]
PYEOF
rc=0
"$GB" --store "$W/store" -q overrides "$lock" --registry "http://$SITE/gpu" -o "$W/kit-bad" --package-repo-ca "$W/ca.pem" \
  2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--package-repo-ca without --package-repo-url: exit $rc, not 2"
pass "overrides --package-repo-url/--package-repo-ca: sources at the site's server, certConfig, no Deployment"

# The repository as the site has it: the image from the site registry, its last layer.
skopeo copy -q --src-tls-verify=false "docker://$IMAGE_BY_DIGEST" "oci:$W/pulled:repo" || fail "skopeo copy $IMAGE_BY_DIGEST"
PORT=$("$PY" -c "import sys; sys.path.insert(0, '$TOOLS'); import harness; print(harness.free_port())")
# The image's own command, run by a real busybox, with only the port and the
# root folder moved to this machine's.
"$PY" - "$W/pulled" "$W/served" "$PORT" > "$W/image.env" <<'PYEOF' || fail "the pulled image's config"
import json, shlex, sys
d, served, port = sys.argv[1:4]
idx = json.load(open(d + "/index.json"))
m = json.load(open(d + "/blobs/sha256/" + idx["manifests"][0]["digest"].split(":")[1]))
cfg = json.load(open(d + "/blobs/sha256/" + m["config"]["digest"].split(":")[1]))["config"]
entry = cfg["Entrypoint"]
assert entry == ["httpd", "-f", "-v", "-p", "8080", "-h", "/srv/gpubundle-repo"] and not cfg.get("Cmd"), cfg
assert cfg["User"] == "65534:65534" and "8080/tcp" in cfg["ExposedPorts"], cfg
entry = [("127.0.0.1:" + port) if a == "8080" else (served + a) if a.startswith("/srv/") else a for a in entry]
print("LAYER=" + d + "/blobs/sha256/" + m["layers"][-1]["digest"].split(":")[1])
print("SERVE=(" + " ".join(shlex.quote(a) for a in entry) + ")")
PYEOF
source "$W/image.env"
mkdir -p "$W/served"
tar -xzf "$LAYER" -C "$W/served"
ROOT=$W/served/srv/gpubundle-repo
[ -f "$ROOT/dists/gpubundle/InRelease" ] || fail "no InRelease in the image's last layer"
busybox "${SERVE[@]}" > "$W/served.log" 2>&1 &
SERVER_PID=$!
URL=http://127.0.0.1:$PORT/
for _ in $(seq 50); do curl -fs "${URL}dists/gpubundle/Release" >/dev/null && break; sleep 0.2; done
curl -fs "${URL}dists/gpubundle/Release" >/dev/null || { cat "$W/served.log"; fail "busybox httpd does not serve the repository"; }

# apt with a private configuration: only the kit's sources line and key are trusted.
A=$W/aptroot
mkdir -p "$A/sources.list.d" "$A/state/lists/partial" "$A/cache/archives/partial" "$A/keys"
# The ConfigMap as the operator mounts it: both keys as files of sources.list.d.
cp "$W/kit-key.asc" "$A/sources.list.d/gpubundle-repo.asc"
: > "$A/status"  # an empty system: the repository alone must satisfy the closure
: > "$A/sources.list"
kit_line=$(cat "$W/kit-sources.list")
line=${kit_line//\/etc\/apt\/sources.list.d\//$A\/sources.list.d\/}
line=$(sed -E "s#http://[^ ]+/ #$URL #" <<< "$line")
[ "$line" != "$kit_line" ] || fail "could not point the kit's sources line at the served copy"
echo "$line" > "$A/sources.list.d/gpubundle.list"
apt_private update > "$W/apt-update.log" 2>&1 || { cat "$W/apt-update.log"; fail "apt-get update against the kit's sources"; }
grep -qE '^(W|E):' "$W/apt-update.log" && { cat "$W/apt-update.log"; fail "apt-get update warned"; }
apt_private install -y --download-only "linux-headers-$K" > "$W/apt-install.log" 2>&1 \
  || { cat "$W/apt-install.log"; fail "apt-get install --download-only linux-headers-$K"; }
deb=$(ls "$A/cache/archives/linux-headers-${K}"_*.deb)
want=$(sha256sum "$W/apt/repo/pool/main/"*/"$(basename "$deb")" | cut -d' ' -f1)
[ "$(sha256sum < "$deb" | cut -d' ' -f1)" = "$want" ] || fail "the downloaded headers differ from the archive's"
n=$(ls "$A/cache/archives"/*.deb | wc -l)
pass "real apt: update and download of linux-headers-$K and its closure ($n packages) from the imported image"

# As in the driver container, whose own sources.list names the public archive,
# unreachable offline: apt warns and installs from the site repository.
echo "deb http://127.0.0.1:1/ubuntu jammy main" > "$A/sources.list"
rm -f "$A/cache/archives"/*.deb
apt_private update > "$W/apt-offline.log" 2>&1 || { cat "$W/apt-offline.log"; fail "apt-get update with an unreachable archive beside"; }
grep -q '^W: Failed to fetch http://127.0.0.1:1/' "$W/apt-offline.log" || { cat "$W/apt-offline.log"; fail "the unreachable archive was not tried"; }
apt_private install -y --download-only "linux-headers-$K" > "$W/apt-install2.log" 2>&1 \
  || { cat "$W/apt-install2.log"; fail "apt-get install beside an unreachable archive"; }
: > "$A/sources.list"
pass "an unreachable archive beside it (the driver container's own sources.list) is only a warning"

# Refused: a tampered InRelease (one signed byte changed), and any key but the kit's.
rm -rf "$A/state/lists"/* && mkdir -p "$A/state/lists/partial"
cp "$ROOT/dists/gpubundle/InRelease" "$W/InRelease.good"
sed -i 's/^Label: gpubundle$/Label: gpubundlf/' "$ROOT/dists/gpubundle/InRelease"
cmp -s "$W/InRelease.good" "$ROOT/dists/gpubundle/InRelease" && fail "the InRelease tamper changed nothing"
if apt_private update > "$W/apt-tamper.log" 2>&1 && ! grep -q '^E:' "$W/apt-tamper.log"; then
  cat "$W/apt-tamper.log"; fail "apt accepted a tampered InRelease"
fi
grep -qiE 'BADSIG|signature|not signed' "$W/apt-tamper.log" || { cat "$W/apt-tamper.log"; fail "apt's refusal does not name the signature"; }
[ -z "$(find "$A/state/lists" -maxdepth 1 -type f -name '*gpubundle*')" ] || { ls "$A/state/lists"; fail "apt kept lists from a tampered InRelease"; }
pass "tampered InRelease refused: $(grep -m1 -iE 'BADSIG|signature' "$W/apt-tamper.log")"
cp "$W/InRelease.good" "$ROOT/dists/gpubundle/InRelease"
cp "$APT_STRANGER_KEYRING" "$A/keys/gpubundle-repo.gpg"
sed -i "s#$A/sources.list.d/gpubundle-repo.asc#$A/keys/gpubundle-repo.gpg#" "$A/sources.list.d/gpubundle.list"
if apt_private update > "$W/apt-stranger.log" 2>&1 && ! grep -q '^E:' "$W/apt-stranger.log"; then
  cat "$W/apt-stranger.log"; fail "apt accepted the repository under another key"
fi
grep -qE 'NO_PUBKEY|not signed|signature' "$W/apt-stranger.log" || { cat "$W/apt-stranger.log"; fail "apt's refusal does not name the key"; }
pass "another key refused: $(grep -m1 -E 'NO_PUBKEY|signature' "$W/apt-stranger.log")"
echo "package-repo: ok"
