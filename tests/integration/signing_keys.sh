#!/usr/bin/env bash
# `gpubundle keys` against the openssl command line: generated keys load in
# openssl and vice versa, the key id equals sha256 of the DER public key, and
# signatures interoperate; bad keys give one-line errors and exit 2.
set -euo pipefail
gpubundle=$(realpath "$1")
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
der_id() { openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -d' ' -f1; }

# generate: both types; id printed = sha256(DER SPKI) = `keys id`; key mode 0600.
id=$("$gpubundle" -q keys generate --out ed)
[[ $id == "$(der_id ed.pub)" ]] || fail "printed id $id != openssl DER sha256"
[[ $("$gpubundle" keys id ed.pub) == "$id" ]] || fail "keys id differs"
[[ $(stat -c %a ed.key) == 600 ]] || fail "ed.key mode $(stat -c %a ed.key)"
openssl pkey -in ed.key -noout -text | grep ED25519 >/dev/null || fail "openssl cannot read ed.key"
export GB_TEST_PASS='hunter2 with spaces'
ec_id=$("$gpubundle" -q keys generate --out ec --type ecdsa-p256 --passphrase-env GB_TEST_PASS)
[[ $ec_id == "$(der_id ec.pub)" ]] || fail "ECDSA id mismatch"
head -1 ec.key | grep -q 'BEGIN ENCRYPTED PRIVATE KEY' || fail "ec.key is not encrypted"
openssl pkey -in ec.key -passin env:GB_TEST_PASS -noout -text | grep 'prime256v1' >/dev/null || fail "openssl cannot decrypt ec.key"
openssl asn1parse -in ec.key | grep aes-256-cbc >/dev/null || fail "ec.key is not AES-256 encrypted"
echo "ok: generate, key id and file formats"

# refuses to overwrite without --force
rc=0; "$gpubundle" keys generate --out ed 2>err.txt || rc=$?
[[ $rc == 2 ]] || fail "overwrote ed.key (exit $rc)"
grep -q 'ed.key exists; use --force to replace it' err.txt || fail "no clear refusal to overwrite"
"$gpubundle" -q keys generate --out ed --force >/dev/null
[[ $("$gpubundle" keys id ed.pub) != "$id" ]] || fail "--force did not replace the key"
id=$("$gpubundle" keys id ed.pub)

# sign/verify, and interop with openssl both ways
printf 'lock contents\n' > lock.json
"$gpubundle" -q keys sign lock.json --key ed.key
[[ $("$gpubundle" -q keys verify lock.json --pubkey ed.pub) == "$id" ]] || fail "verify did not name the signer"
python3 -c 'import json,base64,sys; sys.stdout.buffer.write(base64.b64decode(json.load(open("lock.json.sig"))["signature"]))' > raw.sig
openssl pkeyutl -verify -pubin -inkey ed.pub -rawin -in lock.json -sigfile raw.sig >/dev/null || fail "openssl rejects our Ed25519 signature"
echo 'pass file' > passfile
"$gpubundle" -q keys sign lock.json --key ec.key --passphrase-env GB_TEST_PASS -o lock.ec.sig
python3 -c 'import json,base64,sys; sys.stdout.buffer.write(base64.b64decode(json.load(open("lock.ec.sig"))["signature"]))' > raw.ec.sig
openssl dgst -sha256 -verify ec.pub -signature raw.ec.sig lock.json >/dev/null || fail "openssl rejects our ECDSA signature"
mkdir ring && cp ed.pub ec.pub ring/
[[ $("$gpubundle" -q keys verify lock.json --sig lock.ec.sig --keyring ring) == "$ec_id" ]] || fail "keyring verify"
echo "ok: signatures verify with openssl and with a keyring"

# failures: tampered data, untrusted key, wrong passphrase, malformed PEM, public key as private
expect() {  # expect EXIT MESSAGE -- command...
  local want=$1 msg=$2; shift 3
  local rc=0
  "$@" >/dev/null 2>err.txt || rc=$?
  [[ $rc == "$want" ]] || { cat err.txt; fail "exit $rc, expected $want: $*"; }
  grep -qF -- "$msg" err.txt || { cat err.txt; fail "missing '$msg'"; }
  [[ $(wc -l <err.txt) == 1 ]] || { cat err.txt; fail "not a one-line error"; }
}
printf 'lock contentz\n' > lock.json.bad; cp lock.json.sig lock.json.bad.sig
expect 1 "signature: does not match the signed data (key $id)" -- "$gpubundle" keys verify lock.json.bad --pubkey ed.pub
expect 1 "which is not among the 1 trusted key(s)" -- "$gpubundle" keys verify lock.json --pubkey ec.pub
echo wrong > wrongpass
expect 2 "ec.key: wrong passphrase" -- "$gpubundle" keys sign lock.json --key ec.key --passphrase-file wrongpass
expect 2 "ec.key is encrypted" -- "$gpubundle" keys sign lock.json --key ec.key
head -c 100 ed.key > broken.key
expect 2 "broken.key: malformed private key PEM" -- "$gpubundle" keys sign lock.json --key broken.key
expect 2 "ed.pub holds a public key, but a private key is needed here" -- "$gpubundle" keys sign lock.json --key ed.pub
expect 2 "ed.key holds a private key; give the public key" -- "$gpubundle" keys verify lock.json --pubkey ed.key
echo "ok: failures give one-line errors"

# keys made by openssl load too
openssl genpkey -algorithm ed25519 -out ossl.key 2>/dev/null
openssl pkey -in ossl.key -pubout -out ossl.pub
"$gpubundle" -q keys sign lock.json --key ossl.key -o ossl.sig
[[ $("$gpubundle" -q keys verify lock.json --sig ossl.sig --pubkey ossl.pub) == "$(der_id ossl.pub)" ]] || fail "openssl-made key"
echo "PASS signing-keys-cli"
