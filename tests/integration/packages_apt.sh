#!/bin/bash
# The apt repository client (packages/apt.cpp through fetch_packages) against
# dpkg's version order on random pairs, and a stand-in repository of real Debian packages (tests/tools/apt_standin.py:
# apt-ftparchive, gpg, served on 127.0.0.1): the full closure is what apt
# itself lists, the kernel's own packages alone, and every tampering refused
# with one line naming the URL or package and nothing unverified left behind.
# Usage: packages_apt.sh PATH/TO/fetch_packages_main
set -euo pipefail
FETCH=$(realpath "$1")
PY=/usr/bin/python3
TOOLS=$(cd "$(dirname "$0")/../tools" && pwd)
for tool in apt-ftparchive apt-cache gpg gpgv xz; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/install-deps.sh)"; exit 77; }
done
W=$(mktemp -d -t gb-packages-apt.XXXXXX)
trap '"$PY" "$TOOLS/apt_standin.py" stop --dir "$W/apt" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# --- Debian's version order, against dpkg's own -------------------------------
# Random [epoch:]upstream[-revision] pairs from the characters that matter
# (digits, letters, '.', '+', '~', '-' in the upstream part when a revision
# follows), each compared by `dpkg --compare-versions` and by ours.
"$PY" - "$W/vercmp" <<'EOF'
import random, subprocess, sys
rng = random.Random(23)
def part(first_digit, extra):
    chars = ["0", "1", "2", "9", "10", "007", "a", "b", "rc", "Z", ".", "+", "~", "~"] + extra
    s = "".join(rng.choice(chars) for _ in range(rng.randint(1, 5)))
    return (rng.choice("0123456789") + s) if first_digit else s
def version():
    epoch = rng.choice(["", "", "0:", "1:", "2:", "10:"])
    revision = rng.choice(["", "-" + part(False, []), "-1", "-0ubuntu1~22.04"])
    upstream = part(True, ["-"] if revision else [])
    return epoch + upstream + revision
with open(sys.argv[1] + ".in", "w") as pairs, open(sys.argv[1] + ".want", "w") as want:
    for _ in range(1200):
        a = version()
        b = a if rng.random() < 0.1 else version()
        if rng.random() < 0.3:  # near misses: the same but one character
            i = rng.randrange(len(b)); b = b[:i] + rng.choice("0~a.+") + b[i + 1:]
            if b[b.find(":") + 1 if ":" in b else 0:][:1] not in "0123456789" or b.endswith("-") or b.startswith(":"): b = a
        elif rng.random() < 0.2:  # or a little longer: to dpkg a missing number or revision is 0
            b = a + rng.choice(["0", "00", "~", "0~", "a", ".0", "-0", "-~"])
        run = lambda op: subprocess.run(["dpkg", "--compare-versions", a, op, b], stderr=subprocess.DEVNULL).returncode == 0
        if subprocess.run(["dpkg", "--validate-version", a], stderr=subprocess.DEVNULL).returncode or \
           subprocess.run(["dpkg", "--validate-version", b], stderr=subprocess.DEVNULL).returncode:
            continue
        pairs.write(f"{a} {b}\n")
        want.write(f"{-1 if run('lt') else 0 if run('eq') else 1}\n")
EOF
"$FETCH" --vercmp <"$W/vercmp.in" >"$W/vercmp.got"
if ! cmp -s "$W/vercmp.want" "$W/vercmp.got"; then
  paste -d' ' "$W/vercmp.in" "$W/vercmp.want" "$W/vercmp.got" | awk '$3 != $4' | head -5 >&2
  fail "compare_versions differs from dpkg --compare-versions (A B dpkg ours above)"
fi
pass "Debian version order: $(wc -l <"$W/vercmp.in") random pairs ordered as dpkg --compare-versions orders them"

rc=0
"$PY" "$TOOLS/apt_standin.py" start --dir "$W/apt" > "$W/standin.env" || rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || fail "the stand-in apt repository did not start"
source "$W/standin.env"
K=$APT_KERNEL
DISTS="$W/apt/repo/dists/$APT_SUITE"

# recipe FILE URL [SUITE]: a recipe whose one package source is the stand-in.
recipe() {
  cat > "$1" <<YAML
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: site}
operator: {version: v26.7.0, chart: ./chart.tgz}
target: {gpus: [H100-SXM5-80GB], os: debian12, kernels: [$K], platforms: [linux/amd64]}
driver: {mode: precompiled, version: "580.105.08"}
packages:
  sources:
    - {name: standin, type: apt, url: "$2", suites: [${3:-$APT_SUITE}], components: [$APT_COMPONENT], keyring: "$APT_KEYRING"}
YAML
}
recipe "$W/recipe.yaml" "$APT_URL"

# refused WHAT EXIT DEST GOT NEEDLE...: the fetch into DEST failed with exit
# EXIT and one line on stderr holding every NEEDLE. DEST holds nothing, or with
# KEEP_VERIFIED=1 only files that are apt's own (name and sha256).
refused() {
  local what=$1 want=$2 dest=$3 got=$4 f
  shift 4
  [ "$got" = "$want" ] || { cat "$W/err"; fail "$what: exit $got, not $want"; }
  [ "$(wc -l < "$W/err")" = 1 ] || { cat "$W/err"; fail "$what: not one line of error"; }
  for needle in "$@"; do
    grep -qF -- "$needle" "$W/err" || { cat "$W/err"; fail "$what: the error does not name '$needle'"; }
  done
  for f in $( [ -d "$dest" ] && ls -A "$dest"); do
    [ "${KEEP_VERIFIED:-0}" = 1 ] || fail "$what: $f left in $dest"
    grep -qxF "$(cd "$dest" && sha256sum -- "$f")" "$W/apt-sums" || fail "$what: $f left in $dest is not apt's file"
  done
  pass "$what refused: $(cat "$W/err")"
}
# fetch DEST ARGS...: runs the client; its exit code in $got.
fetch() {
  local dest=$1
  shift
  got=0
  "$FETCH" "$W/recipe.yaml" "$dest" "$@" > "$W/out" 2> "$W/err" || got=$?
}

# What apt itself installs for the headers on an empty root, and apt's own
# sha256 of each file (from the machine's Debian lists, not the stand-in's).
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances \
  "linux-headers-$K" | grep -v '^[ <]' | sort -u > "$W/apt-closure"
mapfile -t closure < "$W/apt-closure"
apt-get download --print-uris "${closure[@]}" | "$PY" -c '
import sys, urllib.parse  # the archive file name is the URL path, unquoted (no epoch there)
for l in sys.stdin:
    url, _, _, digest = l.split()
    print(digest.split(":")[1] + "  " + urllib.parse.unquote(url.strip("\x27").rsplit("/", 1)[1]))' | sort -k2 > "$W/apt-sums"

# 1. The full closure: exactly apt's list, every file with apt's own hash.
fetch "$W/full" --closure full --why "kernel $K" "linux-headers-$K"
[ "$got" = 0 ] || { cat "$W/err"; fail "full closure: exit $got"; }
cut -d' ' -f1 "$W/out" > "$W/got-closure"
diff "$W/apt-closure" "$W/got-closure" || fail "the full closure differs from apt-cache depends --recurse"
(cd "$W/full" && sha256sum -- *.deb | sort -k2) > "$W/got-sums"
diff "$W/apt-sums" "$W/got-sums" || fail "fetched files differ from apt's sha256 (or extra files in dest)"
pass "full closure of linux-headers-$K: $(wc -l < "$W/out") packages, as apt lists them, with apt's hashes"

# 2. SameSource: the packages of the kernel's own source, reached from the headers.
src=$(apt-cache show --no-all-versions "linux-headers-$K" | sed -n 's/^Source: \([^ ]*\).*/\1/p')
apt-cache show --no-all-versions "${closure[@]}" |
  awk -v src="$src" '/^Package:/ {p = $2; s = $2} /^Source:/ {s = $2} /^$/ && p {if (s == src) print p; p = ""}
                     END {if (p && s == src) print p}' | sort -u > "$W/same-want"
grep -qx "linux-headers-${K%-*}-common" "$W/same-want" && grep -qx 'linux-kbuild-.*' "$W/same-want" ||
  fail "apt lists no -common or linux-kbuild of source $src for linux-headers-$K (want: $(cat "$W/same-want"))"
fetch "$W/same" --closure same-source --why "kernel $K" "linux-headers-$K"
[ "$got" = 0 ] || { cat "$W/err"; fail "same-source closure: exit $got"; }
cut -d' ' -f1 "$W/out" | diff "$W/same-want" - || fail "the same-source closure differs from apt's packages of source $src"
[ "$(ls "$W/same" | wc -l)" = "$(wc -l < "$W/same-want")" ] || fail "same-source: other files in dest"
pass "same-source closure: $(tr '\n' ' ' < "$W/same-want")"

# 3. Release + Release.gpg when there is no InRelease.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt" --no-inrelease
fetch "$W/detached" --closure same-source "linux-headers-$K"
[ "$got" = 0 ] || { cat "$W/err"; fail "Release + Release.gpg: exit $got"; }
pass "Release with a detached signature read when InRelease is 404"

# 4. Tampering. (a) the index signed by another key, clearsigned or detached.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt" --key stranger
fetch "$W/t1" --closure same-source "linux-headers-$K"
refused "InRelease signed by another key" 1 "$W/t1" "$got" "$APT_URL/dists/$APT_SUITE/InRelease"
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt" --key stranger --no-inrelease
fetch "$W/t2" --closure same-source "linux-headers-$K"
refused "Release.gpg by another key" 1 "$W/t2" "$got" "$APT_URL/dists/$APT_SUITE/Release"

# (b) a Packages list edited after signing: linux-kbuild's entry points at another file.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
other=$(awk '/^SHA256:/ {print $2; exit}' "$DISTS/main/binary-amd64/Packages")
sed -i "/^Package: linux-kbuild/,/^$/ s/^SHA256: .*/SHA256: $other/" "$DISTS/main/binary-amd64/Packages"
xz -9 -c "$DISTS/main/binary-amd64/Packages" > "$DISTS/main/binary-amd64/Packages.xz"
fetch "$W/t3" --closure same-source "linux-headers-$K"
refused "Packages edited after signing" 1 "$W/t3" "$got" "$APT_URL/dists/$APT_SUITE/main/binary-amd64/Packages.xz" \
  "the signed Release"

# The same size, one byte changed: the hash alone catches it.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
"$PY" - "$DISTS/main/binary-amd64/Packages.xz" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 1
open(sys.argv[1], "wb").write(b)
PYEOF
fetch "$W/t3b" --closure same-source "linux-headers-$K"
refused "Packages with one byte flipped" 1 "$W/t3b" "$got" "$APT_URL/dists/$APT_SUITE/main/binary-amd64/Packages.xz" "sha256"

# (c) a .deb in the pool swapped for another (real) package file.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
kbuild=$(ls "$W/apt/repo/pool/main/"linux-kbuild-*/*.deb)
cp "$kbuild" "$W/kbuild.orig"
cp --remove-destination "$(ls "$W/apt/repo/pool/main/zlib1g/"*.deb)" "$kbuild"
fetch "$W/t4" --closure same-source "linux-headers-$K"
KEEP_VERIFIED=1 refused "a swapped .deb" 1 "$W/t4" "$got" "$(basename "$kbuild")"
cp --remove-destination "$W/kbuild.orig" "$kbuild"

# (d) a Release past its Valid-Until; (e) a signed Release of another suite, replayed.
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt" --valid-until "Thu, 01 Jan 2026 00:00:00 UTC"
fetch "$W/t5" --closure same-source "linux-headers-$K"
refused "an expired Release" 1 "$W/t5" "$got" "$APT_URL/dists/$APT_SUITE/InRelease" "Valid-Until"
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
cp -r "$DISTS" "$W/apt/repo/dists/bookworm-updates"
recipe "$W/recipe.yaml" "$APT_URL" bookworm-updates
fetch "$W/t6" --closure same-source "linux-headers-$K"
refused "the Release of another suite" 1 "$W/t6" "$got" "$APT_URL/dists/bookworm-updates/InRelease" "not of 'bookworm-updates'"

# 5. Bad input: an unknown kernel names the kernel and the repository.
recipe "$W/recipe.yaml" "$APT_URL"
fetch "$W/t7" --closure same-source --why "kernel 9.9.9-nope" linux-headers-9.9.9-nope
refused "an unknown kernel" 2 "$W/t7" "$got" "9.9.9-nope" "standin ($APT_URL)"

# A dependency the repository lacks names the package that needs it, the kernel and the repository.
mv "$W/apt/repo/pool/main/libelf1" "$W/libelf1"
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
fetch "$W/t7a" --closure full --why "kernel $K" "linux-headers-$K"
refused "a missing dependency" 2 "$W/t7a" "$got" "kernel $K" "linux-kbuild-" "needs libelf1" "standin ($APT_URL)"
mv "$W/libelf1" "$W/apt/repo/pool/main/libelf1"
"$PY" "$TOOLS/apt_standin.py" index --dir "$W/apt"
sed -i 's/components: \[main\]/components: [contrib]/' "$W/recipe.yaml"
fetch "$W/t7b" --closure same-source "linux-headers-$K"
refused "a component the repository lacks" 2 "$W/t7b" "$got" "$APT_URL/dists/$APT_SUITE/" "'contrib'" "'amd64'"

# 6. An unreachable mirror (a port nobody listens on) names the repository URL.
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
recipe "$W/recipe.yaml" "http://127.0.0.1:$port/debian"
fetch "$W/t8" --closure same-source "linux-headers-$K"
refused "an unreachable mirror" 1 "$W/t8" "$got" "http://127.0.0.1:$port/debian"

echo "packages-apt: all checks passed"
