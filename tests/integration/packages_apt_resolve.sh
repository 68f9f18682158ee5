#!/bin/bash
# The apt client's closure (apt::Index::resolve, libsolv) against apt itself,
# on this machine's real Debian lists (/var/lib/apt/lists, ~66,000 packages):
# for packages whose closures hold alternatives apt takes in order
# (usrmerge | usr-is-merged, lsb-base | sysvinit-utils, default-mta |
# mail-transport-agent), virtual packages with several providers
# (java-runtime-headless, dbus-session-bus, c-compiler), Conflicts among
# them (postfix, exim4 and the other MTAs), Pre-Depends and Multi-Arch, the
# packages and versions must be exactly what `apt-get -s install
# --no-install-recommends` installs on an empty root.
# Usage: packages_apt_resolve.sh PATH/TO/fetch_packages_main
set -euo pipefail
export LC_ALL=C
FETCH=$(realpath "$1")
fail() { echo "FAIL: $*" >&2; exit 1; }
arch=$(dpkg --print-architecture)
shopt -s nullglob
lists=(/var/lib/apt/lists/*_binary-"$arch"_Packages*)
[ ${#lists[@]} -gt 0 ] || { echo "SKIP: no apt lists for $arch in /var/lib/apt/lists (apt-get update first)"; exit 77; }
W=$(mktemp -d -t gb-packages-apt-resolve.XXXXXX)
trap 'rm -rf "$W"' EXIT

files=()
for f in "${lists[@]}"; do  # apt keeps them compressed (lz4 ...): its own helper reads any of them
  /usr/lib/apt/apt-helper cat-file "$f" > "$W/${#files[@]}.Packages" || fail "apt-helper cat-file $f"
  files+=("$W/${#files[@]}.Packages")
done
K=$(apt-cache depends linux-headers-amd64 2>/dev/null | sed -n 's/.*Depends: linux-headers-\(.*\)$/\1/p' | head -n1)

names=(${K:+"linux-headers-$K"} build-essential python3 apt systemd git curl openssh-server python3-venv dkms
       mailutils bsd-mailx postfix default-jdk-headless dbus-user-session)
"$FETCH" resolve --arch "$arch" "${files[@]}" -- "${names[@]}" > "$W/closures" 2> "$W/err" || { cat "$W/err"; fail "resolve"; }

# apt-get takes ~2 s a name, most of it building its cache: built once (this
# machine's apt config may turn the cache off), against an empty status, and
# the names simulated side by side.
mkdir -p "$W/apt/archives/partial"
: > "$W/status"
export APT_OPTS="-o Dir::State::status=$W/status -o Dir::Cache=$W/apt -o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin"
apt-cache $APT_OPTS gencaches > /dev/null || fail "apt-cache gencaches"
printf '%s\n' "${names[@]}" | xargs -P "$(nproc)" -I{} sh -c 'apt-get -s $APT_OPTS install --no-install-recommends "$1" 2>/dev/null |
  sed -n "s/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p" | sort > "$2/want.$1"' _ {} "$W"
for name in "${names[@]}"; do
  [ -s "$W/want.$name" ] || fail "apt-get -s install $name installs nothing"
  awk -v n="# $name" '/^# / {on = ($0 == n); next} on' "$W/closures" | sort > "$W/got"
  diff "$W/want.$name" "$W/got" || fail "$name: the closure differs from apt's (< apt, > ours)"
  echo "ok: $name: $(wc -l < "$W/got") packages, the same names and versions as apt-get -s install"
done
echo "packages-apt-resolve: all checks passed"
