#!/usr/bin/env bash
# The rpm-md client against real parts: a stand-in RHEL mirror built with
# Debian's rpm, createrepo_c and gpg (tests/tools/rpm-standin.sh), served on
# loopback, and dnf with a private configuration as the reference.
#   - compare_versions agrees with python3-rpm's labelCompare on 3000 random pairs;
#   - the Full closure of a kernel's packages is what `dnf install
#     --downloadonly` fetches into an empty root, byte for byte;
#   - SameSource is the part of it built from the kernel's source rpm;
#   - refused: repomd.xml signed by another key, unsigned, or edited after
#     signing; primary.xml edited; an rpm replaced; an unknown kernel; a
#     closed port; each one line naming the URL or the kernel and the repos;
#   - each rpm's own signature (rpmkeys) and header, for mirrors that sign
#     rpms but not repomd.xml: another key, another version, unsigned refused;
#   - the site repository (write_site_repo), served on loopback, read by dnf
#     through repo_file()'s .repo with repo_gpgcheck=1, and refused by dnf
#     under another key.
# Usage: packages_rpm.sh FETCH_PACKAGES_RPM
set -euo pipefail

tool=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for t in rpmbuild createrepo_c gpg gpgv dnf; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/install-deps.sh)"; exit 77; }
done

work=$(mktemp -d)
trap 'bash "$src/tests/tools/rpm-standin.sh" stop "$work/standin" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$src/tests/tools/rpm-standin.sh" "$work/standin" >"$work/standin.env"
# shellcheck disable=SC1091
source "$work/standin.env"
URL=$RPM_STANDIN_URL
WWW=$RPM_STANDIN_WWW
KVER=6.1.0-1.el9.x86_64

write_recipe() {  # FILE URL
  cat >"$1" <<EOF
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: rpm-test}
operator: {version: v26.7.0}
target:
  gpus: [H100-SXM5-80GB]
  os: rhel9.4
  kernels: [$KVER]
driver: {mode: conventional, version: "580.105.08"}
packages:
  sources:
    - {name: el9, type: rpm-md, url: $2, suites: [BaseOS, AppStream], keyring: $RPM_STANDIN_KEYRING}
EOF
}
write_recipe "$work/recipe.yaml" "$URL"

# dnf with nothing of this machine's: its own config, repos, cache and an empty root.
dnf_fetch() {  # NAME DEST REPOFILE-LINES... ; then the package names after --
  local name=$1 dest=$2
  shift 2
  local d="$work/dnf-$name"
  mkdir -p "$d/repos"
  while [[ $1 != -- ]]; do printf '%s\n' "$1" >>"$d/repos/test.repo"; shift; done
  shift
  printf '[main]\ngpgcheck=0\nrepo_gpgcheck=1\ncachedir=%s/cache\nlogdir=%s/log\npersistdir=%s/persist\nreposdir=%s/repos\ninstall_weak_deps=0\n' \
    "$d" "$d" "$d" "$d" >"$d/dnf.conf"
  dnf -y --config "$d/dnf.conf" --setopt=reposdir="$d/repos" --installroot "$d/root" --releasever 9 \
    install --downloadonly --destdir "$dest" "$@" >"$d/out.log" 2>&1
}
upstream_repo() {
  for r in BaseOS AppStream; do
    printf '%s\n' "[$r]" "name=$r" "baseurl=$URL/$r" "repo_gpgcheck=1" "gpgcheck=0" "gpgkey=file://$RPM_STANDIN_KEYRING"
  done
}
# What the RHEL 9 driver script installs (the default kernelPackages for rhel9).
names="elfutils-libelf elfutils-libelf-devel kernel-headers-$KVER kernel-devel-$KVER kernel-$KVER"

# --- rpm's version order, against rpm's own ---------------------------------
# Random epoch:version-release pairs from the characters that matter (digits,
# letters, separators, ~ and ^), compared by python3-rpm's labelCompare.
/usr/bin/python3 - "$work/vercmp" <<'EOF'
import random, sys
import rpm
rng = random.Random(17)
parts = ["0", "1", "2", "9", "10", "007", "a", "b", "rc", "Z", ".", "_", "+", "~", "^", "~", "^"]
def seg():
    return "".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
with open(sys.argv[1] + ".in", "w") as pairs, open(sys.argv[1] + ".want", "w") as want:
    for _ in range(3000):
        (e1, e2) = (rng.choice(["", "0", "1", "2", "10"]) for _ in range(2))
        (v1, v2) = (seg() for _ in range(2))
        if rng.random() < 0.3: v2 = v1
        (r1, r2) = (seg() for _ in range(2))
        if rng.random() < 0.3: r2 = r1
        a = (e1 + ":" if e1 else "") + v1 + "-" + r1
        b = (e2 + ":" if e2 else "") + v2 + "-" + r2
        pairs.write(f"{a} {b}\n")
        want.write(f"{rpm.labelCompare((e1 or None, v1, r1), (e2 or None, v2, r2))}\n")
EOF
"$tool" --vercmp <"$work/vercmp.in" >"$work/vercmp.got"
if ! cmp -s "$work/vercmp.want" "$work/vercmp.got"; then
  paste -d' ' "$work/vercmp.in" "$work/vercmp.want" "$work/vercmp.got" | awk '$3 != $4' | head -5 >&2
  fail "compare_versions differs from rpm's labelCompare (A B rpm ours above)"
fi

# --- the Full closure is dnf's -----------------------------------------------
"$tool" "$work/recipe.yaml" --kernel "$KVER" --dest "$work/full" >"$work/full.txt" 2>"$work/err" || fail "Full: $(cat "$work/err")"
mapfile -t upstream < <(upstream_repo)
# shellcheck disable=SC2086
dnf_fetch ref "$work/dnf-full" "${upstream[@]}" -- $names || fail "dnf could not fetch the stand-in's kernel packages: $(tail -5 "$work/dnf-ref/out.log")"
diff <(ls "$work/dnf-full") <(ls "$work/full") || fail "the Full closure differs from dnf's (left: dnf)"
for f in "$work"/full/*.rpm; do
  repo_file=$(find "$WWW" -name "$(basename "$f")")
  cmp -s "$f" "$repo_file" || fail "$(basename "$f") differs from the served file"
done
# What dnf and we agree on is what the stand-in was made to need.
for want in kernel-devel-6.1.0-1.el9.x86_64.rpm kernel-headers-6.1.0-1.el9.x86_64.rpm bash-5.1.8-6.el9.x86_64.rpm \
            gcc-11.4.1-3.el9.x86_64.rpm cpp-11.4.1-3.el9.x86_64.rpm tzdata-2024a-1.el9.noarch.rpm dracut-057-53.el9.x86_64.rpm; do
  [[ -f $work/full/$want ]] || fail "Full: $want is missing"
done
[[ ! -e $work/full/kernel-devel-6.2.0-1.el9.x86_64.rpm && ! -e $work/full/gcc-11.3.1-1.el9.x86_64.rpm ]] || fail "Full: a version not asked for"
grep -qx "kernel-devel 6.1.0-1.el9 x86_64 $work/full/kernel-devel-6.1.0-1.el9.x86_64.rpm" "$work/full.txt" || fail "Full: the listing: $(cat "$work/full.txt")"

# --- SameSource: the kernel's own source rpm ---------------------------------
"$tool" "$work/recipe.yaml" --kernel "$KVER" --closure same-source --dest "$work/same" >/dev/null 2>"$work/err" || fail "SameSource: $(cat "$work/err")"
# The names asked for (elfutils-libelf-devel, elfutils-libelf) and what they
# need from their own source rpms: the kernel's 5 packages.
want=$(for f in "$work"/full/*.rpm; do
  src=$(rpm -qp --nosignature --queryformat '%{SOURCERPM}' "$f")
  if [[ $src == kernel-6.1.0-1.el9.src.rpm || $src == elfutils-libelf-0.190-2.el9.src.rpm || $src == elfutils-libelf-devel-0.190-2.el9.src.rpm ]]; then
    basename "$f"
  fi
done | sort)
[[ $(echo "$want" | wc -l) -eq 7 ]] || fail "SameSource: the stand-in's kernel has 5 packages and elfutils 2, not: $(echo $want)"
diff <(echo "$want") <(ls "$work/same") || fail "SameSource differs from the Full closure's kernel-6.1.0-1.el9.src.rpm packages"

# --- a file requirement that only filelists.xml answers ----------------------
# helper-user (AppStream) requires /usr/libexec/gpubundle/helper, which
# primary.xml does not list: filelists.xml is read, and helper-tools (BaseOS)
# comes along, as dnf fetches it.
"$tool" "$work/recipe.yaml" --name helper-user --dest "$work/files" >"$work/files.txt" 2>"$work/err" || fail "file requirement: $(cat "$work/err")"
dnf_fetch fileref "$work/dnf-files" "${upstream[@]}" -- helper-user || fail "dnf could not fetch helper-user: $(tail -5 "$work/dnf-fileref/out.log")"
diff <(ls "$work/dnf-files") <(ls "$work/files") || fail "the closure of a file requirement differs from dnf's (left: dnf)"
grep -q "^helper-tools 1.0-1.el9 x86_64 " "$work/files.txt" || fail "helper-tools (the file's owner) is not in: $(cat "$work/files.txt")"
# The stand-in is shaped as meant: the file is in filelists.xml only.
zgrep -q /usr/libexec/gpubundle/helper "$WWW"/BaseOS/repodata/*filelists.xml* || fail "the stand-in's filelists.xml lacks the file"
! zgrep -q /usr/libexec/gpubundle/helper "$WWW"/BaseOS/repodata/*primary.xml* || fail "the stand-in's primary.xml lists the file"

# --- refusals ----------------------------------------------------------------
refused() {  # WANT-EXIT WANT-SUBSTRING ARGS...: the tool fails with that one line
  local code=$1 text=$2
  shift 2
  local rc=0
  "$tool" "$@" >/dev/null 2>"$work/err" || rc=$?
  [[ $rc -eq $code ]] || fail "exit $rc, not $code, for $*: $(cat "$work/err")"
  [[ $(wc -l <"$work/err") -eq 1 ]] || fail "more than one line: $(cat "$work/err")"
  grep -qF -- "$text" "$work/err" || fail "the error does not say '$text': $(cat "$work/err")"
}
base=$WWW/BaseOS/repodata
cp "$base/repomd.xml" "$work/repomd.xml.good"
cp "$base/repomd.xml.asc" "$work/repomd.xml.asc.good"
restore() { cp "$work/repomd.xml.good" "$base/repomd.xml"; cp "$work/repomd.xml.asc.good" "$base/repomd.xml.asc"; }

gpg --homedir "$RPM_STANDIN_OTHER_GNUPGHOME" --batch --yes --armor --detach-sign -o "$base/repomd.xml.asc" "$base/repomd.xml" 2>/dev/null
refused 1 "$URL/BaseOS/repodata/repomd.xml: " "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t1"
grep -qi "signature" "$work/err" || fail "repomd.xml under another key: $(cat "$work/err")"
restore

rm "$base/repomd.xml.asc"
refused 1 "$URL/BaseOS/repodata/repomd.xml: not signed ($URL/BaseOS/repodata/repomd.xml.asc: not found)" "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t2"
restore

# Red Hat's CDN, Fedora and EPEL publish no repomd.xml.asc and sign each rpm
# instead: with `signatures: packages` every rpm's own signature is checked.
for repo in BaseOS AppStream; do
  mkdir -p "$WWW/per-rpm/$repo"
  cp -r "$WWW/$repo/Packages" "$WWW/per-rpm/$repo/"
  createrepo_c --quiet "$WWW/per-rpm/$repo" >/dev/null
done
write_recipe "$work/per-rpm.yaml" "$URL/per-rpm"
sed -i 's/keyring: \(.*\)}$/keyring: \1, signatures: packages}/' "$work/per-rpm.yaml"
grep -q "signatures: packages" "$work/per-rpm.yaml" || fail "per-rpm recipe: $(cat "$work/per-rpm.yaml")"
"$tool" "$work/per-rpm.yaml" --kernel "$KVER" --dest "$work/t2p" >/dev/null 2>"$work/err" ||
  fail "signatures: packages with signed rpms and no repomd.xml.asc: $(cat "$work/err")"
write_recipe "$work/per-rpm-strict.yaml" "$URL/per-rpm"
refused 1 "say \`signatures: packages\`" "$work/per-rpm-strict.yaml" --kernel "$KVER" --dest "$work/t2r"
# One rpm unsigned and indexed as it is: its hash matches, its signature is missing.
unsigned=$(ls "$WWW"/per-rpm/BaseOS/Packages/kernel-headers-"${KVER%.x86_64}"*.rpm)
rpmsign --delsign "$unsigned" >/dev/null 2>&1
createrepo_c --quiet --update "$WWW/per-rpm/BaseOS" >/dev/null
refused 1 "not signed by a key in $RPM_STANDIN_KEYRING" "$work/per-rpm.yaml" --kernel "$KVER" --dest "$work/t2s"
[[ ! -e $work/t2s/$(basename "$unsigned") ]] || fail "the unsigned rpm was kept in dest"
# The unsigned repomd.xml is the sender's word: a primary.xml.gz that opens to
# 64 MiB from 64 KiB, declared as such, is stopped at 64x what came (4 MiB),
# not read up to the 2 GiB bound.
cp "$WWW/per-rpm/BaseOS/repodata/repomd.xml" "$work/per-rpm-repomd.good"
/usr/bin/python3 - "$WWW/per-rpm/BaseOS/repodata" <<'EOF2'
import gzip, hashlib, re, sys
d = sys.argv[1]
raw = b"<?xml version=\"1.0\"?>\n<metadata packages=\"0\">" + b" " * (64 << 20) + b"</metadata>\n"
packed = gzip.compress(raw, 9)
name = hashlib.sha256(packed).hexdigest() + "-primary.xml.gz"
open(f"{d}/{name}", "wb").write(packed)
text = open(f"{d}/repomd.xml").read()
block = re.search(r'<data type="primary">.*?</data>', text, re.S).group(0)
new = re.sub(r'<checksum type="sha256">[0-9a-f]+</checksum>', f'<checksum type="sha256">{hashlib.sha256(packed).hexdigest()}</checksum>', block)
new = re.sub(r'<open-checksum type="sha256">[0-9a-f]+</open-checksum>', f'<open-checksum type="sha256">{hashlib.sha256(raw).hexdigest()}</open-checksum>', new)
new = re.sub(r'<location href="[^"]+"/>', f'<location href="repodata/{name}"/>', new)
new = re.sub(r'<size>\d+</size>', f'<size>{len(packed)}</size>', new)
new = re.sub(r'<open-size>\d+</open-size>', f'<open-size>{len(raw)}</open-size>', new)
open(f"{d}/repomd.xml", "w").write(text.replace(block, new))
EOF2
refused 1 "primary.xml.gz: decompresses to more than" "$work/per-rpm.yaml" --kernel "$KVER" --dest "$work/t2b"
cp "$work/per-rpm-repomd.good" "$WWW/per-rpm/BaseOS/repodata/repomd.xml"

# primary.xml edited (kernel-headers pointed at other bytes), repomd.xml and its signature as they were.
primary=$(find "$base" -name '*-primary.xml.gz')
cp "$primary" "$work/primary.good"
# One byte of primary.xml.gz changed: its size still fits, its sha256 does not.
/usr/bin/python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) // 2] ^= 1; open(sys.argv[2], "wb").write(d)' "$work/primary.good" "$primary"
refused 1 "$URL/BaseOS/repodata/$(basename "$primary"): sha256 " "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t3"
grep -qF "differs from the signed $URL/BaseOS/repodata/repomd.xml" "$work/err" || fail "primary.xml.gz edited: $(cat "$work/err")"
# primary.xml edited to point every package at other bytes.
gzip -dc "$work/primary.good" | sed 's/<checksum type="sha256" pkgid="YES">[0-9a-f]*</<checksum type="sha256" pkgid="YES">0000000000000000000000000000000000000000000000000000000000000000</' | gzip -n >"$primary"
refused 1 "$URL/BaseOS/repodata/$(basename "$primary"): " "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t3"
grep -qF "but the signed $URL/BaseOS/repodata/repomd.xml says" "$work/err" || fail "primary.xml edited: $(cat "$work/err")"
# ... and repomd.xml rewritten to match it: now its signature no longer fits.
/usr/bin/python3 - "$base/repomd.xml" "$work/primary.good" "$primary" <<'EOF'
import hashlib, sys
repomd, old, new = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
text = open(repomd).read()
edited = text.replace(hashlib.sha256(old).hexdigest(), hashlib.sha256(new).hexdigest()).replace(f"<size>{len(old)}</size>", f"<size>{len(new)}</size>")
assert edited != text
open(repomd, "w").write(edited)
EOF
refused 1 "$URL/BaseOS/repodata/repomd.xml: " "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t4"
grep -qi "signature" "$work/err" || fail "the edited repomd.xml: $(cat "$work/err")"
cp "$work/primary.good" "$primary"
restore
"$tool" "$work/recipe.yaml" --kernel "$KVER" --closure same-source --dest "$work/t5" >/dev/null 2>"$work/err" || fail "the repository did not come back: $(cat "$work/err")"

# An rpm with other bytes (one changed) under its name.
headers=$WWW/BaseOS/Packages/kernel-headers-6.1.0-1.el9.x86_64.rpm
cp "$headers" "$work/headers.good"
/usr/bin/python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) // 2] ^= 1; open(sys.argv[1], "wb").write(d)' "$headers"
refused 1 "$URL/BaseOS/Packages/kernel-headers-6.1.0-1.el9.x86_64.rpm: " "$work/recipe.yaml" --kernel "$KVER" --dest "$work/t6"
grep -qF "but its signed index says" "$work/err" || fail "the replaced rpm: $(cat "$work/err")"
[[ ! -e $work/t6/kernel-headers-6.1.0-1.el9.x86_64.rpm ]] || fail "the replaced rpm was kept"
cp "$work/headers.good" "$headers"

# An unknown kernel: the kernel, the package and the repos.
refused 2 "kernel 9.9.9-1.el9.x86_64: no package 'kernel-headers-9.9.9-1.el9.x86_64' for x86_64 in rpm-md source 'el9' ($URL/BaseOS, $URL/AppStream)" \
  "$work/recipe.yaml" --kernel 9.9.9-1.el9.x86_64 --dest "$work/t7"

# A closed port.
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
write_recipe "$work/closed.yaml" "http://127.0.0.1:$port"
refused 1 "http://127.0.0.1:$port/BaseOS/repodata/repomd.xml" "$work/closed.yaml" --kernel "$KVER" --dest "$work/t8"

# --- each rpm's own signature (verify_package_signature) ----------------------
"$tool" "$work/recipe.yaml" --kernel "$KVER" --dest "$work/full" --check-rpm-signatures yes >/dev/null 2>"$work/err" ||
  fail "the stand-in's signed rpms: $(cat "$work/err")"
rpm_file=$work/full/kernel-headers-6.1.0-1.el9.x86_64.rpm
verify() { "$tool" --verify-rpm "$@" >/dev/null 2>"$work/err"; }
mkdir -m 700 "$work/gpgv-home"
gpg --homedir "$work/gpgv-home" --batch --dearmor <"$RPM_STANDIN_KEYRING" >"$work/standin-key.gpg" 2>/dev/null
verify "$work/standin-key.gpg" "$rpm_file" kernel-headers 6.1.0-1.el9 x86_64 || fail "a binary keyring: $(cat "$work/err")"
if verify "$work/standin/other-key.asc" "$rpm_file" kernel-headers 6.1.0-1.el9 x86_64; then fail "an rpm signed by a key not in the keyring passed"; fi
grep -qF "$rpm_file: Header V4 EdDSA/SHA256 Signature" "$work/err" || fail "another key: $(cat "$work/err")"
if verify "$RPM_STANDIN_KEYRING" "$rpm_file" kernel-headers 6.2.0-1.el9 x86_64; then fail "an rpm passed for another version"; fi
grep -qF "its signed header says 'kernel-headers 0:6.1.0-1.el9 x86_64', the index 'kernel-headers 0:6.2.0-1.el9 x86_64'" "$work/err" ||
  fail "another version: $(cat "$work/err")"
cp "$rpm_file" "$work/unsigned.rpm"
rpmsign --delsign "$work/unsigned.rpm" >/dev/null 2>&1
if verify "$RPM_STANDIN_KEYRING" "$work/unsigned.rpm" kernel-headers 6.1.0-1.el9 x86_64; then fail "an unsigned rpm passed"; fi
grep -qF "$work/unsigned.rpm: not signed by a key in $RPM_STANDIN_KEYRING" "$work/err" || fail "unsigned: $(cat "$work/err")"
# Signed, then its payload changed: named as such, not as unsigned.
cp "$rpm_file" "$work/tampered.rpm"
size=$(stat -c %s "$work/tampered.rpm")
printf 'X' | dd of="$work/tampered.rpm" bs=1 seek=$((size - 20)) conv=notrunc 2>/dev/null
if verify "$RPM_STANDIN_KEYRING" "$work/tampered.rpm" kernel-headers 6.1.0-1.el9 x86_64; then fail "a tampered rpm passed"; fi
grep -qF "$work/tampered.rpm: its contents do not match its signed digests (" "$work/err" || fail "tampered: $(cat "$work/err")"

# --- the site repository, read by dnf ----------------------------------------
"$tool" "$work/recipe.yaml" --kernel "$KVER" --dest "$work/full" --site-repo "$work/site" --site-key "$work/site.key" \
  --repo-file "$work/gpubundle.repo" >/dev/null 2>"$work/err" ||
  fail "site repository: $(cat "$work/err")"
for f in repodata/repomd.xml repodata/repomd.xml.asc repodata/primary.xml.gz RPM-GPG-KEY-gpubundle; do
  [[ -f $work/site/$f ]] || fail "the site repository has no $f"
done
gpg --homedir "$work/gpgv-home" --batch --dearmor <"$work/site/RPM-GPG-KEY-gpubundle" >"$work/site-key.gpg"
gpgv --homedir "$work/gpgv-home" --keyring "$work/site-key.gpg" "$work/site/repodata/repomd.xml.asc" "$work/site/repodata/repomd.xml" 2>"$work/err" ||
  fail "repomd.xml.asc does not verify with RPM-GPG-KEY-gpubundle: $(cat "$work/err")"
# Served over HTTP as the driver pods reach it, through the .repo file
# repo_file() writes, the key beside it in the repos folder, as a repoConfig
# ConfigMap mounted at /etc/yum.repos.d holds both.
site_url=$(bash "$src/tests/tools/rpm-standin.sh" serve "$work/standin" site "$work/site" /repodata/repomd.xml)
mkdir -p "$work/dnf-site/repos"
cp "$work/site/RPM-GPG-KEY-gpubundle" "$work/dnf-site/repos/"
mapfile -t site < <(sed -e "s|^gpgkey=.*|gpgkey=file://$work/dnf-site/repos/RPM-GPG-KEY-gpubundle|" -e "s|^baseurl=.*|baseurl=$site_url|" "$work/gpubundle.repo")
grep -qx "repo_gpgcheck=1" "$work/gpubundle.repo" || fail "the .repo file does not check the repository's signature"
# shellcheck disable=SC2086
dnf_fetch site "$work/site-dl" "${site[@]}" -- $names || fail "dnf refused the site repository: $(tail -5 "$work/dnf-site/out.log")"
diff <(ls "$work/full") <(ls "$work/site-dl") || fail "dnf fetched other packages from the site repository (left: the build side)"
for f in "$work"/full/*.rpm; do cmp -s "$f" "$work/site-dl/$(basename "$f")" || fail "$(basename "$f") changed on the way"; done
# The same repository under another key: dnf's repo_gpgcheck refuses it (so the check above was one).
mapfile -t other < <(sed -e "s|^gpgkey=.*|gpgkey=file://$work/standin/other-key.asc|" -e "s|^baseurl=.*|baseurl=$site_url|" "$work/gpubundle.repo")
# shellcheck disable=SC2086
if dnf_fetch other "$work/other-dl" "${other[@]}" -- $names; then fail "dnf took the site repository under another key"; fi
grep -qiE "gpg|signature" "$work/dnf-other/out.log" || fail "dnf failed for another reason: $(tail -5 "$work/dnf-other/out.log")"

# Written again over the same folder: the earlier packages go, the key stays.
cp "$work/site/RPM-GPG-KEY-gpubundle" "$work/site-key.before"
"$tool" "$work/recipe.yaml" --kernel "$KVER" --closure same-source --dest "$work/same" --site-repo "$work/site" --site-key "$work/site.key" >/dev/null 2>"$work/err" ||
  fail "site repository, second time: $(cat "$work/err")"
diff <(ls "$work/same") <(ls "$work/site/Packages") || fail "the second site repository kept earlier packages"
cmp -s "$work/site-key.before" "$work/site/RPM-GPG-KEY-gpubundle" || fail "the site key changed"
zcat "$work/site/repodata/primary.xml.gz" | grep -q 'packages="7"' || fail "the second site repository's primary.xml: $(zcat "$work/site/repodata/primary.xml.gz" | head -3)"

echo "packages-rpm: ok ($(find "$work/full" -name '*.rpm' | wc -l) packages; dnf agrees on the closure and reads the site repository)"
