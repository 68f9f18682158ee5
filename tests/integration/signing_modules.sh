#!/usr/bin/env bash
# Kernel module signing with `gpubundle keys sign-module`, checked three ways
# against real tools: modinfo reads the signer, the output is byte-identical to
# the kernel's scripts/sign-file (RSA), and `openssl cms -verify` accepts the
# CMS blob over the unsigned module bytes (the CMS carries no certificate, as
# in the kernel, so openssl is handed the signer certificate with -certfile).
set -euo pipefail
gpubundle=$(realpath "$1")

skip() { echo "SKIP: $*"; exit 77; }
for tool in make gcc modinfo strip openssl cmp; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh installs it)"
done
kdir=
for d in /lib/modules/*/build; do [[ -f $d/Makefile ]] && kdir=$d; done
[[ -n $kdir ]] || skip "no kernel headers under /lib/modules/*/build (install linux-headers-amd64)"
sign_file=$kdir/scripts/sign-file
[[ -x $sign_file ]] || skip "$sign_file is missing"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
same() { cmp -s "$1" "$2" || fail "$1 and $2 differ"; }

# --- a tiny real module, built by kbuild -----------------------------------
mkdir mod
cat > mod/gbsigntest.c <<'C'
#include <linux/init.h>
#include <linux/module.h>
static int __init gbsigntest_init(void) { return 0; }
static void __exit gbsigntest_exit(void) {}
module_init(gbsigntest_init);
module_exit(gbsigntest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpubundle module signing test");
C
echo 'obj-m := gbsigntest.o' > mod/Kbuild
make -s -C "$kdir" M="$work/mod" modules >build.log 2>&1 || { tail -n 20 build.log; fail "kbuild failed"; }
built=mod/gbsigntest.ko
[[ -f $built ]] || fail "kbuild made no .ko"
modinfo -F vermagic "$built" | grep . >/dev/null || fail "modinfo cannot read the built module"

# --- keys and certificates, as certs/x509.genkey makes them --------------------
genkey_conf() {
  cat <<CONF
[ req ]
distinguished_name = dn
prompt = no
string_mask = utf8only
x509_extensions = exts
[ dn ]
O = gpubundle tests
CN = $1
[ exts ]
basicConstraints = critical,CA:FALSE
keyUsage = digitalSignature
extendedKeyUsage = codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CONF
}
genkey_conf "gpubundle test RSA signer" > rsa.genkey
openssl req -new -x509 -nodes -utf8 -sha256 -days 3650 -batch -config rsa.genkey \
  -newkey rsa:2048 -keyout rsa.key -out rsa.crt 2>/dev/null
openssl x509 -in rsa.crt -outform DER -out rsa.der
genkey_conf "gpubundle test ECDSA signer" > ec.genkey
openssl req -new -x509 -nodes -utf8 -sha256 -days 3650 -batch -config ec.genkey \
  -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout ec.key -out ec.crt 2>/dev/null

# Extracts the CMS blob of a signed module ($1) into $2 and the signed
# (unsigned-module) bytes into $3, using sig_len from the 12-byte trailer.
split_signed() {
  python3 - "$@" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
magic = b'~Module signature appended~\n'
assert data.endswith(magic), 'no signature magic'
algo, hsh, id_type, signer_len, key_id_len, sig_len = struct.unpack('>BBBBB3xI', data[-len(magic) - 12:-len(magic)])
assert (algo, hsh, id_type, signer_len, key_id_len) == (0, 0, 2, 0, 0), 'unexpected trailer fields'
end = len(data) - len(magic) - 12
open(sys.argv[2], 'wb').write(data[end - sig_len:end])
open(sys.argv[3], 'wb').write(data[:end - sig_len])
PY
}
count_signatures() { grep -c --binary-files=text -F '~Module signature appended~' "$1" || true; }

# --- 1. RSA: modinfo, sign-file identity, openssl cms -verify -----------------------
cp "$built" plain.ko
strip --strip-debug plain.ko   # what sign-module does by default, on a copy
cp plain.ko for-sign-file.ko
"$sign_file" sha256 rsa.key rsa.der for-sign-file.ko for-sign-file.signed.ko

"$gpubundle" keys sign-module "$built" --sign-key rsa.key --sign-cert rsa.crt -o ours.ko
same ours.ko for-sign-file.signed.ko
echo "ok: RSA signature is byte-identical to $sign_file"
[[ $(modinfo -F signer ours.ko) == "gpubundle test RSA signer" ]] || fail "modinfo signer: $(modinfo -F signer ours.ko)"
[[ $(modinfo -F sig_hashalgo ours.ko) == sha256 ]] || fail "modinfo sig_hashalgo: $(modinfo -F sig_hashalgo ours.ko)"
echo "ok: modinfo -F signer names the certificate's CN"
split_signed ours.ko ours.p7s ours.content
same ours.content plain.ko
openssl cms -verify -binary -inform DER -noverify -certfile rsa.crt -content ours.content -in ours.p7s -out /dev/null 2>cms.log ||
  { cat cms.log; fail "openssl cms -verify rejected our signature"; }
# ...and the same check must fail over other content.
printf 'x' >> ours.content
if openssl cms -verify -binary -inform DER -noverify -certfile rsa.crt -content ours.content -in ours.p7s -out /dev/null 2>/dev/null; then
  fail "openssl cms -verify accepted changed content"
fi
echo "ok: openssl cms -verify accepts the CMS blob"

# DER certificate and --no-strip: identical to sign-file on the unstripped module.
cp "$built" unstripped.ko
"$sign_file" sha256 rsa.key rsa.der unstripped.ko unstripped.sf.ko
"$gpubundle" keys sign-module "$built" --sign-key rsa.key --sign-cert rsa.der --no-strip -o unstripped.ours.ko
same unstripped.ours.ko unstripped.sf.ko
"$sign_file" sha512 rsa.key rsa.der unstripped.ko unstripped.sf512.ko
"$gpubundle" -q keys sign-module "$built" --sign-key rsa.key --sign-cert rsa.der --no-strip --hash sha512 -o unstripped.512.ko
same unstripped.512.ko unstripped.sf512.ko
[[ $(modinfo -F sig_hashalgo unstripped.512.ko) == sha512 ]] || fail "sha512 not recorded"
echo "ok: --no-strip with a DER certificate matches sign-file (sha256 and sha512)"

# Our own in-process check agrees: sign-file's output verifies; another
# certificate or a changed byte does not.
"$gpubundle" -q keys verify-module for-sign-file.signed.ko --cert rsa.der
if "$gpubundle" -q keys verify-module ours.ko --cert ec.crt 2>/dev/null; then fail "verify-module accepted another certificate"; fi
cp ours.ko tampered.ko
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[4096] ^= 1; open(sys.argv[1], "wb").write(b)' tampered.ko
if "$gpubundle" -q keys verify-module tampered.ko --cert rsa.crt 2>err.txt; then fail "verify-module accepted a changed module"; fi
grep -q 'signature does not verify with certificate rsa.crt' err.txt || { cat err.txt; fail "verify-module message"; }
echo "ok: keys verify-module agrees"

# --- 2. re-signing gives one signature, and for RSA the same bytes ----------
cp ours.ko resign.ko
"$gpubundle" keys sign-module resign.ko --sign-key rsa.key --sign-cert rsa.crt
same resign.ko ours.ko
# sign-file on a signed module stacks a second signature; we peel both.
"$sign_file" sha256 rsa.key rsa.der for-sign-file.signed.ko stacked.ko
[[ $(count_signatures stacked.ko) == 2 ]] || fail "expected sign-file to stack signatures"
"$gpubundle" keys sign-module stacked.ko --sign-key rsa.key --sign-cert rsa.crt -o restacked.ko
[[ $(count_signatures restacked.ko) == 1 ]] || fail "re-signed module holds $(count_signatures restacked.ko) signatures"
same restacked.ko ours.ko
echo "ok: re-signing yields exactly one signature, same bytes"

# --- 3. ECDSA P-256 ------------------------------------------------------------------
"$gpubundle" --json keys sign-module "$built" --sign-key ec.key --sign-cert ec.crt -o ec.ko > ec.json
[[ $(modinfo -F signer ec.ko) == "gpubundle test ECDSA signer" ]] || fail "ECDSA modinfo signer: $(modinfo -F signer ec.ko)"
split_signed ec.ko ec.p7s ec.content
same ec.content plain.ko
openssl cms -verify -binary -inform DER -noverify -certfile ec.crt -content ec.content -in ec.p7s -out /dev/null 2>cms.log ||
  { cat cms.log; fail "openssl cms -verify rejected the ECDSA signature"; }
fp=$(openssl x509 -in ec.crt -outform DER | sha256sum | cut -d' ' -f1)
grep -q "\"fingerprint\": \"sha256:$fp\"" ec.json || { cat ec.json; fail "fingerprint in --json output"; }
"$gpubundle" keys sign-module ec.ko --sign-key ec.key --sign-cert ec.crt
[[ $(count_signatures ec.ko) == 1 ]] || fail "ECDSA re-signing left $(count_signatures ec.ko) signatures"
"$gpubundle" -q keys verify-module ec.ko --cert ec.crt
echo "ok: ECDSA P-256 signature read by modinfo and openssl cms; fingerprint reported"

# --- 4. bad inputs: clear errors, nothing written ----------------------------------
expect_error() {  # expect_error EXIT_CODE MESSAGE_FRAGMENT -- command...
  local want=$1 msg=$2
  shift 3
  local rc=0
  "$@" >out.txt 2>err.txt || rc=$?
  [[ $rc == "$want" ]] || { cat err.txt; fail "exit $rc, expected $want: $*"; }
  grep -qF -- "$msg" err.txt || { cat err.txt; fail "missing message '$msg'"; }
  [[ $(wc -l <err.txt) == 1 ]] || { cat err.txt; fail "expected a one-line error"; }
}
expect_error 2 "key rsa.key does not match certificate ec.crt" -- \
  "$gpubundle" keys sign-module "$built" --sign-key rsa.key --sign-cert ec.crt -o bad.ko
expect_error 2 "was given without its certificate" -- \
  "$gpubundle" keys sign-module "$built" --sign-key rsa.key -o bad.ko
expect_error 2 "rsa.crt holds a certificate, but a private key is needed here" -- \
  "$gpubundle" keys sign-module "$built" --sign-key rsa.crt --sign-cert rsa.crt -o bad.ko
"$gpubundle" keys generate --out ed >/dev/null
expect_error 2 "an Ed25519 key cannot sign kernel modules" -- \
  "$gpubundle" keys sign-module "$built" --sign-key ed.key --sign-cert rsa.crt -o bad.ko
xz -k -c plain.ko > plain.ko.xz 2>/dev/null || printf '\xfd7zXZ\0junk' > plain.ko.xz
expect_error 2 "not an ELF kernel module (it is xz-compressed: sign before compressing)" -- \
  "$gpubundle" keys sign-module plain.ko.xz --sign-key rsa.key --sign-cert rsa.crt -o bad.ko
expect_error 1 "nonexistent-strip: cannot run it: No such file or directory (install binutils, or sign without stripping)" -- \
  "$gpubundle" keys sign-module "$built" --sign-key rsa.key --sign-cert rsa.crt --strip-program nonexistent-strip -o bad.ko
[[ ! -e bad.ko ]] || fail "a failed signing left bad.ko behind"
ls ./*.tmp.* 2>/dev/null && fail "temp files left behind"
echo "ok: wrong pair, missing cert, Ed25519, compressed input and missing strip are refused"
echo "PASS signing-modules"
