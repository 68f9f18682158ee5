#!/bin/bash
# The apt client's closure (apt::resolve) against apt itself, on this
# machine's real Debian lists (/var/lib/apt/lists, ~66,000 packages): for a
# few packages with alternatives, virtual packages, Pre-Depends and
# Multi-Arch in their closure, the packages and versions must be exactly what
# `apt-get -s install --no-install-recommends` installs on an empty root.
# Usage: packages_apt_resolve.sh PATH/TO/fetch_packages_main
set -euo pipefail
export LC_ALL=C
FETCH=$(realpath "$1")
fail() { echo "FAIL: $*" >&2; exit 1; }
arch=$(dpkg --print-architecture)
shopt -s nullglob
lists=(/var/lib/apt/lists/*_binary-"$arch"_Packages*)
[ ${#lists[@]} -gt 0 ] || { echo "SKIP: no apt lists for $arch in /var/lib/apt/lists (apt-get update first)"; exit 77; }
W=$(mktemp -d /tmp/gb-packages-apt-resolve.XXXXXX)
trap 'rm -rf "$W"' EXIT

files=()
for f in "${lists[@]}"; do  # apt keeps them compressed (lz4 ...): its own helper reads any of them
  /usr/lib/apt/apt-helper cat-file "$f" > "$W/${#files[@]}.Packages" || fail "apt-helper cat-file $f"
  files+=("$W/${#files[@]}.Packages")
done
K=$(apt-cache depends linux-headers-amd64 2>/dev/null | sed -n 's/.*Depends: linux-headers-\(.*\)$/\1/p' | head -n1)

names=(${K:+"linux-headers-$K"} build-essential python3 apt systemd)
"$FETCH" resolve --arch "$arch" "${files[@]}" -- "${names[@]}" > "$W/closures" 2> "$W/err" || { cat "$W/err"; fail "resolve"; }
for name in "${names[@]}"; do
  apt-get -s -o Dir::State::status=/dev/null install --no-install-recommends "$name" 2>/dev/null |
    sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' | sort > "$W/want"
  [ -s "$W/want" ] || fail "apt-get -s install $name installs nothing"
  awk -v n="# $name" '/^# / {on = ($0 == n); next} on' "$W/closures" | sort > "$W/got"
  diff "$W/want" "$W/got" || fail "$name: the closure differs from apt's (< apt, > ours)"
  echo "ok: $name: $(wc -l < "$W/got") packages, the same names and versions as apt-get -s install"
done
echo "packages-apt-resolve: all checks passed"
