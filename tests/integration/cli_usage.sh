#!/usr/bin/env bash
# What a newcomer meets in the first hour (issue 27 item 8):
#   - a mistyped command or option: exit 2, one line naming it and the nearest
#     real one ("unknown command 'buidl'; did you mean build?");
#   - `gpubundle` alone: the command list on stderr, exit 2, as its help says;
#   - diff and inventory take the global store (--store before the command,
#     $GPUBUNDLE_STORE), not only their own --store;
#   - --json on report and node detect: JSON on stdout, nothing on stderr.
# Usage: cli_usage.sh GPUBUNDLE   (env GB_SOURCE_DIR)
set -euo pipefail
gpubundle=$(realpath "$1")
src=${GB_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"  # no ./gpubundle-store here unless a check makes one
unset GPUBUNDLE_STORE
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc CODE CMD...
  local want=$1; shift
  set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
  [[ $rc == "$want" ]] || { cat "$work/out" "$work/err"; fail "exit $rc, wanted $want: $*"; }
}
expect_err() {  # expect_err LINE: stderr is exactly this one line
  [[ $(cat "$work/err") == "$1" ]] || fail "stderr: '$(cat "$work/err")', wanted '$1'"
}

# --- Typos -------------------------------------------------------------------
expect_rc 2 "$gpubundle" buidl recipe.yaml
expect_err "error: unknown command 'buidl'; did you mean build?"
expect_rc 2 "$gpubundle" invnetory
expect_err "error: unknown command 'invnetory'; did you mean inventory?"
expect_rc 2 "$gpubundle" bundle verfy x.bundle
expect_err "error: unknown command 'bundle verfy'; did you mean bundle verify?"
expect_rc 2 "$gpubundle" frobnicate
expect_err "error: unknown command 'frobnicate'; run gpubundle --help for the commands"
expect_rc 2 "$gpubundle" diff a.lock.json b.lock.json --stroe s
expect_err "error: unknown option '--stroe' for diff; did you mean --store?"
expect_rc 2 "$gpubundle" diff a.lock.json b.lock.json extra.lock.json --stroe s
expect_err "error: unknown option '--stroe' for diff; did you mean --store?"
expect_rc 2 "$gpubundle" report --kti kit -o r.html
expect_err "error: unknown option '--kti' for report; did you mean --kit?"
expect_rc 2 "$gpubundle" --jsno resolve r.yaml
expect_err "error: unknown option '--jsno' for resolve; did you mean --json?"
expect_rc 2 "$gpubundle" resolve r.yaml --zzzzzz
expect_err "error: unknown option '--zzzzzz' for resolve; run gpubundle resolve --help for the options"
echo "ok: typos named with a suggestion"

# --- No command ----------------------------------------------------------------
expect_rc 2 "$gpubundle"
[[ ! -s $work/out ]] || fail "gpubundle alone wrote to stdout"
grep -q "^Usage: gpubundle \[OPTIONS\] SUBCOMMAND" "$work/err" || fail "gpubundle alone: no usage line: $(head -3 "$work/err")"
for cmd in build resolve mirror bundle import inventory diff report node; do
  grep -Eq "^  $cmd +" "$work/err" || fail "gpubundle alone does not list $cmd: $(cat "$work/err")"
done
expect_rc 0 "$gpubundle" --help
grep -q "gpubundle. alone prints this list and exits 2" "$work/out" || fail "--help does not say what gpubundle alone does"
echo "ok: gpubundle alone lists the commands, exit 2"

# --- The global store ------------------------------------------------------------
/usr/bin/python3 "$src/tests/tools/chart.py" --release v26.7.0 --out "$work/standin" >/dev/null
"$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$work/standin" -o "$work/old.lock.json"
"$gpubundle" -q resolve "$src/examples/host.yaml" --chart "$work/standin" -o "$work/new.lock.json"
"$gpubundle" -q --store "$work/store" store gc >/dev/null  # an empty store
expect_rc 0 "$gpubundle" --json diff old.lock.json new.lock.json
grep -q '"sizedBy": ""' "$work/out" || fail "diff without a store: $(grep sizedBy "$work/out")"
for how in "--store $work/store --json diff old.lock.json new.lock.json" "--json diff old.lock.json new.lock.json --store $work/store"; do
  # shellcheck disable=SC2086 # words on purpose
  expect_rc 0 "$gpubundle" $how
  grep -q "\"sizedBy\": \"store $work/store\"" "$work/out" || fail "diff ($how) did not use the store: $(grep sizedBy "$work/out")"
done
GPUBUNDLE_STORE=$work/store expect_rc 0 "$gpubundle" --json diff old.lock.json new.lock.json
grep -q "\"sizedBy\": \"store $work/store\"" "$work/out" || fail "diff did not use \$GPUBUNDLE_STORE: $(grep sizedBy "$work/out")"
GPUBUNDLE_STORE=$work/nostore expect_rc 2 "$gpubundle" diff old.lock.json new.lock.json
expect_err "error: \$GPUBUNDLE_STORE $work/nostore: not a gpubundle store (no index.json)"
expect_rc 2 "$gpubundle" --store "$work/nostore" diff old.lock.json new.lock.json
expect_err "error: --store $work/nostore: not a gpubundle store (no index.json)"

expect_rc 2 "$gpubundle" inventory
expect_err "error: inventory needs --registry, or --store (no store at gpubundle-store)"
for how in "--store $work/store inventory" "inventory --store $work/store"; do
  # shellcheck disable=SC2086
  expect_rc 0 "$gpubundle" -q $how
  grep -q "\"source\": \"store $work/store\"" "$work/out" || grep -q "$work/store" "$work/out" || fail "inventory ($how): $(head -c 300 "$work/out")"
done
GPUBUNDLE_STORE=$work/store expect_rc 0 "$gpubundle" -q inventory
grep -q "$work/store" "$work/out" || fail "inventory did not use \$GPUBUNDLE_STORE: $(head -c 300 "$work/out")"
echo "ok: diff and inventory take --store before the command and \$GPUBUNDLE_STORE"

# --- --json: nothing human ---------------------------------------------------------
"$gpubundle" -q overrides old.lock.json --registry registry.site.example:5000/gpu --chart "$work/standin" -o "$work/kit"
expect_rc 0 "$gpubundle" --json report --kit "$work/kit" "$src/examples/acceptance-results/verify.json" -o "$work/r.html"
[[ ! -s $work/err ]] || fail "report --json wrote to stderr: $(cat "$work/err")"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["verdict"] in ("PASS","FAIL","INCOMPLETE"), j' "$work/out" ||
  fail "report --json: $(cat "$work/out")"
mkdir -p root/sys/bus/pci/devices root/etc root/proc
printf 'ID=ubuntu\nVERSION_ID="22.04"\n' >root/etc/os-release
expect_rc 0 "$gpubundle" --json node detect --root "$work/root"
[[ ! -s $work/err ]] || fail "node detect --json wrote to stderr: $(cat "$work/err")"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["target"] == {"gpus": [], "os": "ubuntu22.04", "kernels": [], "platforms": []}, j' "$work/out" ||
  fail "node detect --json: $(cat "$work/out")"
echo "ok: --json on report and node detect: JSON on stdout, nothing on stderr"
