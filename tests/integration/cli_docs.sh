#!/usr/bin/env bash
# docs/cli.md and completions/gpubundle.bash cannot drift from the binary:
# regenerate both and diff; every command and nested command has an example
# in its --help that runs that command (the cli-examples test, cli_examples.sh,
# runs them all); the bash completion script passes shellcheck and completes
# commands, nested commands, options (the ones --help lists) and file paths.
set -euo pipefail
gpubundle=$1
src=${GB_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. The committed docs and completion script are what the binary prints now.
bash "$src/scripts/gen-cli-docs.sh" "$gpubundle" "$work/gen" >/dev/null
for f in docs/cli.md completions/gpubundle.bash; do
  diff -u "$src/$f" "$work/gen/$f" || fail "$f is stale: run scripts/gen-cli-docs.sh"
done

# 2. Every command and nested command shows an example.
mapfile -t paths < <("$gpubundle" completion --list)
(( ${#paths[@]} >= 10 )) || fail "completion --list printed only ${#paths[@]} commands"
for p in bundle "bundle create" "bundle verify" "bundle inspect" keys "store" node-image driver completion; do
  printf '%s\n' "${paths[@]}" | grep -x "$p" >/dev/null || fail "completion --list lacks '$p'"
done
for n in "${!paths[@]}"; do
  p=${paths[n]}
  # shellcheck disable=SC2086  # a path is several words
  "$gpubundle" $p --help >"$work/help.$n" || fail "gpubundle $p --help failed"
  grep -q '^Example:' "$work/help.$n" || fail "gpubundle $p --help has no Example"
  # Its own example, not one a nested command inherits from its parent
  # (cli_examples.sh, the cli-examples test, runs each one).
  awk '/^Example:/ { getline; print; exit }' "$work/help.$n" | grep -q "gpubundle \(--store [^ ]* \)\?$p\b" ||
    fail "gpubundle $p --help: the example does not run 'gpubundle $p'"
done

# 3. The completion script: shellcheck, then complete as bash would.
"$gpubundle" completion bash >"$work/gpubundle.bash"
shellcheck -s bash "$work/gpubundle.bash" || fail "completion script fails shellcheck"
# shellcheck source=/dev/null
source "$work/gpubundle.bash"
complete -p gpubundle | grep -- '-F _gpubundle' >/dev/null || fail "completion not registered for gpubundle"
# comp WORD...: complete the last word; prints the sorted candidates on one line.
comp() {
  COMP_WORDS=(gpubundle "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _gpubundle 2>/dev/null
  if (( ${#COMPREPLY[@]} )); then printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' ' -; else echo; fi
}
expect() {  # expect WANT WORD...
  local want=$1; shift
  local got; got=$(comp "$@")
  [[ $got == "$want" ]] || fail "gpubundle $* <TAB>: got '$got', wanted '$want'"
}
contains() {  # contains WANT WORD...: WANT is among the candidates
  local want=$1; shift
  local got; got=$(comp "$@")
  [[ " $got " == *" $want "* ]] || fail "gpubundle $* <TAB>: '$want' not in '$got'"
}
expect "bundle" bun
expect "create inspect verify" bundle ""
expect "--split" bundle create --sp
expect "create inspect verify" --store /tmp/s bundle ""        # option values are skipped
expect "create inspect verify" -v --store = /tmp/s bundle ""    # bash splits --store=x at "="
expect "" bundle create --split ""                            # a size, not a file
contains --verbose bundle create --ve                         # global options after the command
contains --json keys generate --
mkdir -p "$work/files/sub"
touch "$work/files/site-a.lock.json" "$work/files/release.key"
expect "$work/files/site-a.lock.json" bundle create "$work/files/site"        # positional: files
expect "$work/files/release.key" bundle create --key "$work/files/rel"         # path option
expect "$work/files/release.key" bundle create -o "$work/files/rel"
expect "$work/files/sub" --store "$work/files/su"
expect "$work/files/release.key" --store = "$work/files/rel"                  # --store=<TAB>
# Every command is offered under its parent, and every option its --help
# lists is offered after "-".
for n in "${!paths[@]}"; do
  p=${paths[n]}
  read -ra words <<<"$p"
  parent=("${words[@]:0:${#words[@]}-1}")
  contains "${words[-1]}" "${parent[@]}" ""
  got=" $(comp "${words[@]}" -) "
  while read -r spelling; do
    [[ $got == *" $spelling "* ]] || fail "gpubundle $p -<TAB> lacks $spelling (in its --help)"
  done < <(grep -E '^  -' "$work/help.$n" | awk '{print $1}' | tr ',' '\n')
done

# 4. A list of commands gives one line per command (its summary), as git and
#    kubectl do; the paragraph is only in that command's own --help.
for parent in "" bundle keys store node-image node driver; do
  want=$(printf '%s\n' "${paths[@]}" | awk -v p="$parent" '(p == "" && NF == 1) || (NF == 2 && $1 == p) { n++ } END { print n + 0 }')
  # shellcheck disable=SC2086  # no parent: the top-level help
  "$gpubundle" $parent --help >"$work/list"
  got=$(awk '/^Subcommands:$/ { on = 1; next } on && /^$/ { exit } on { n++ } END { print n + 0 }' "$work/list")
  (( want >= 1 )) || fail "completion --list has $want commands under '$parent'"
  [[ $got == "$want" ]] || fail "gpubundle $parent --help: $got lines under Subcommands for $want commands (want one line each)"
done
echo "ok: ${#paths[@]} commands documented and completed; command lists one line per command"
