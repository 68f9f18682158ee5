#!/usr/bin/env bash
# The real binary on long and odd input (issue 11): recipes, locks, registry
# configs and flags that once crashed std::regex (exit 139), slipped through
# unchecked, or printed unbounded lines. Each must exit 2 with ONE bounded
# error line free of control characters. Needs nothing but the binary.
set -euo pipefail
gpubundle=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect_bad_input WHAT GREP CMD...: exit 2, one "error:" line under 1 KiB on
# stderr, only printable characters, and the line contains GREP.
expect_bad_input() {
  local what=$1 want=$2; shift 2
  set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
  [[ $rc == 2 ]] || { head -c 2000 "$work/err"; fail "$what: exit $rc, wanted 2"; }
  local lines bytes
  lines=$(wc -l <"$work/err"); bytes=$(wc -c <"$work/err")
  [[ $lines == 1 ]] || { head -c 2000 "$work/err"; fail "$what: $lines lines on stderr, wanted 1"; }
  (( bytes < 1024 )) || fail "$what: error line is $bytes bytes"
  LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$work/err") && fail "$what: control characters in: $(cat -v "$work/err")"
  grep -q '^error: ' "$work/err" || fail "$what: no 'error: ' line: $(cat "$work/err")"
  grep -qF -- "$want" "$work/err" || fail "$what: '$want' not in: $(cat "$work/err")"
  echo "ok: $what"
}

long=$(head -c 100000 /dev/zero | tr '\0' a)
recipe() {  # recipe FILE NAME OS [EXTRA]
  printf 'apiVersion: gpubundle/v1\nkind: Recipe\nmetadata: {name: "%s"}\noperator: {version: v24.9.2}\ntarget: {gpus: [L4], os: "%s"}\n%b' \
    "$2" "$3" "${4:-}" >"$1"
}

# Recipes: resolve reads the recipe before it looks for a chart.
recipe "$work/r1.yaml" "$long" ubuntu22.04
expect_bad_input "100 KB metadata.name" "metadata.name: longer than 4096 bytes" "$gpubundle" resolve "$work/r1.yaml" --chart "$work/none"
recipe "$work/r2.yaml" "$(head -c 4000 /dev/zero | tr '\0' n)" ubuntu22.04
expect_bad_input "4000-byte metadata.name" "(4000 bytes) must be lower-case" "$gpubundle" resolve "$work/r2.yaml" --chart "$work/none"
recipe "$work/r3.yaml" site-a 'ubuntu\e[2J\x01'
expect_bad_input "control characters in target.os" "target.os: 'ubuntu\\x1b[2J\\x01'" "$gpubundle" resolve "$work/r3.yaml" --chart "$work/none"
recipe "$work/r4.yaml" site-a ubuntu22.04 'target: {gpus: [H100], os: rhel9.4}\n'
expect_bad_input "duplicate key in a recipe" "r4.yaml:6: duplicate key 'target' (first at line 5)" "$gpubundle" resolve "$work/r4.yaml" --chart "$work/none"
recipe "$work/r5.yaml" site-a ubuntu22.04
head -c 1100000 /dev/zero | tr '\0' '#' >>"$work/r5.yaml"
expect_bad_input "1 MiB recipe" "larger than" "$gpubundle" resolve "$work/r5.yaml" --chart "$work/none"

# Registry config: refused before any registry is contacted.
printf 'hosts:\n  nvcr.io:\n    plainHttp: true\n  nvcr.io:\n    plainHttp: false\n' >"$work/registries.yaml"
recipe "$work/ok.yaml" site-a ubuntu22.04
expect_bad_input "duplicate host in the registry config" "registries.yaml:4: duplicate key 'nvcr.io' (first at line 2)" \
  "$gpubundle" --store "$work/store" mirror "$work/ok.yaml" --registry-config "$work/registries.yaml"

# Locks and --registry: overrides reads the lock, then the flag, before any chart.
lock() {  # lock FILE PYTHON-EXPRESSION-ON-l
  python3 - "$1" "$2" <<'PY'
import json, sys
l = {"schemaVersion": 1, "generator": "gpubundle 0.1.0",
     "recipe": {"name": "site-a", "file": "site-a.yaml", "sha256": "", "spec": {}},
     "operator": {"version": "v24.9.2"},
     "chart": {"name": "gpu-operator", "version": "v24.9.2", "appVersion": "v24.9.2", "source": "x.tgz", "sha256": ""},
     "target": {"gpus": ["L4"], "os": "ubuntu22.04", "osTag": "ubuntu22.04", "kernels": [], "platforms": ["linux/amd64"],
                "workloads": ["container"]},
     "driver": {"mode": "conventional", "version": "550.127.08", "branch": "550", "kernelModuleType": "auto", "usePrecompiled": False},
     "destination": None,
     "images": [{"components": ["driver"], "source": "nvcr.io/nvidia/driver:550.127.08-ubuntu22.04", "platforms": ["linux/amd64"],
                 "destination": "", "digest": "sha256:" + "c" * 64, "origin": "upstream"}],
     "warnings": []}
exec(sys.argv[2])
json.dump(l, open(sys.argv[1], "w"))
PY
}
lock "$work/good.lock.json" "pass"
expect_bad_input "100 KB --registry host" "--registry '" "$gpubundle" overrides "$work/good.lock.json" --registry "$long-:5000/gpu" -o "$work/kit"
expect_bad_input "100 KB --registry prefix" "prefix component '" "$gpubundle" overrides "$work/good.lock.json" --registry "reg.site/$long-" -o "$work/kit"
lock "$work/l1.lock.json" "l['chart']['version'] = '1' * 60000"
expect_bad_input "60 KB lock chart.version" "field version: longer than 4096 bytes" "$gpubundle" overrides "$work/l1.lock.json" --registry reg.site -o "$work/kit"
lock "$work/l2.lock.json" "l['images'][0]['digest'] = 'sha512:../../../etc/hostname'"
expect_bad_input "path in a lock digest" "images[0].digest: 'sha512:../../../etc/hostname' is not sha256:<64 hex>" \
  "$gpubundle" overrides "$work/l2.lock.json" --registry reg.site -o "$work/kit"
lock "$work/l3.lock.json" "l['schemaVersion'] = 2**40"
expect_bad_input "lock schema 2^40" "is newer than this gpubundle reads" "$gpubundle" overrides "$work/l3.lock.json" --registry reg.site -o "$work/kit"
lock "$work/l4.lock.json" "l['target']['kernels'] = ['5.15.0\n\x00' + 'k' * 3000]"
expect_bad_input "NUL and newline in a lock kernel" "target.kernels[0]: '5.15.0\\n\\x00kkk" \
  "$gpubundle" overrides "$work/l4.lock.json" --registry reg.site -o "$work/kit"
[[ ! -e $work/kit ]] || fail "a refused lock wrote a kit"

# A private key others can read is used, with one warning naming the fix.
"$gpubundle" keys generate --out "$work/site" >/dev/null 2>&1
chmod 644 "$work/site.key"
echo data >"$work/file"
"$gpubundle" keys sign "$work/file" --key "$work/site.key" 2>"$work/err" || fail "keys sign with a 0644 key failed"
grep -qF "warning: $work/site.key: private key is readable by others (mode 0644); restrict it: chmod 600 $work/site.key" "$work/err" ||
  fail "no permission warning: $(cat "$work/err")"
chmod 600 "$work/site.key"
"$gpubundle" keys sign "$work/file" --key "$work/site.key" 2>"$work/err" || fail "keys sign failed"
grep -q "readable by others" "$work/err" && fail "warning for a 0600 key"
echo "ok: private key permissions"
echo "all hostile input checks passed"
