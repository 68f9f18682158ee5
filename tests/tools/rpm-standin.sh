#!/usr/bin/env bash
# A stand-in rpm-md mirror (RHEL-like) on loopback, made with Debian's rpm,
# createrepo_c and gpg.
#
#   rpm-standin.sh OUTDIR         build, sign and serve; prints shell-sourceable lines
#   rpm-standin.sh stop OUTDIR    stop its servers (idempotent)
#   rpm-standin.sh serve OUTDIR NAME DIR PROBE
#                                 serve another folder (a site repository) on loopback
#                                 until `stop OUTDIR`; prints its URL once DIR/PROBE answers
#
# Two repos below the URL, as in a RHEL mirror:
#   BaseOS:    kernel, kernel-{devel,headers,core,modules} 6.1.0-1.el9 and
#              6.2.0-1.el9 (all of kernel-<v>.src.rpm; kernel requires
#              kernel-core and kernel-modules = <v>, as RHEL 9's does;
#              kernel-devel requires kernel-headers = <v>, /bin/sh and gcc, and
#              ships a .config whose CONFIG_CC_VERSION_TEXT names gcc 11.3.1
#              (6.1.0) or 11.4.1 (6.2.0); kernel-core requires "(dracut if
#              bash)" and /bin/sh), bash (ships the file /bin/sh; requires
#              glibc), glibc (requires tzdata), tzdata (noarch), dracut
#              (requires /bin/sh), elfutils-libelf and elfutils-libelf-devel
#              (requires elfutils-libelf = its version), hostname
#   AppStream: gcc and cpp 11.3.1-1.el9 and 11.4.1-3.el9 (gcc requires
#              cpp = its own version and glibc)
# repodata/repomd.xml of each is signed (armoured, detached) with a throw-away
# Ed25519 key, and so is every rpm (rpmsign); a second key signs nothing and
# is there for tampering tests.
#
# Output (also in OUTDIR/env):
#   RPM_STANDIN_URL=http://127.0.0.1:PORT       the repos are $URL/BaseOS and $URL/AppStream
#   RPM_STANDIN_WWW=OUTDIR/www                  what is served
#   RPM_STANDIN_KEYRING=OUTDIR/key.asc          the public key that signed repomd.xml
#   RPM_STANDIN_GNUPGHOME=OUTDIR/gnupg          its secret key, to sign edited metadata
#   RPM_STANDIN_OTHER_GNUPGHOME=OUTDIR/gnupg-other   another key (OUTDIR/other-key.asc)
# Sign as the stand-in does:
#   gpg --homedir "$RPM_STANDIN_GNUPGHOME" --batch --yes --armor --detach-sign -o F.asc F
set -euo pipefail

TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3

# serve NAME DIR PROBE: python3 -m http.server for DIR on a free port,
# recorded under $OUT as http-NAME; prints its URL once PROBE answers 200.
serve() {
  "$PY" - "$TOOLS" "$OUT" "$1" "$2" "$3" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import harness
out, name, directory, probe = sys.argv[2:]
harness.stop(out, {"http"}, name)
for attempt in range(5):
    port = harness.free_port()
    proc = harness.spawn(out, "http", name, [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                             "--directory", directory, str(port)], f"{out}/http-{name}.log")
    url = f"http://127.0.0.1:{port}"
    if harness.wait_http(url + probe, proc, ok=(200,)):
        print(url)
        sys.exit(0)
    harness.stop(out, {"http"}, name)
harness.die(f"python3 -m http.server did not start (see {out}/http-{name}.log)")
EOF
}

if [[ ${1:-} == serve ]]; then
  [[ $# -eq 5 ]] || { echo "usage: rpm-standin.sh serve OUTDIR NAME DIR PROBE" >&2; exit 2; }
  mkdir -p "$2"
  OUT=$(cd "$2" && pwd)
  serve "$3" "$4" "$5"
  exit 0
fi
if [[ ${1:-} == stop ]]; then
  [[ -n ${2:-} ]] || { echo "usage: rpm-standin.sh stop OUTDIR" >&2; exit 2; }
  "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import harness; harness.stop(sys.argv[2])' "$TOOLS" "$2"
  exit 0
fi
[[ $# -eq 1 ]] || { echo "usage: rpm-standin.sh OUTDIR | stop OUTDIR | serve OUTDIR NAME DIR PROBE" >&2; exit 2; }
for tool in rpmbuild createrepo_c gpg; do
  command -v "$tool" >/dev/null || { echo "rpm-standin: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 77; }
done

mkdir -p "$1"
OUT=$(cd "$1" && pwd)
mkdir -p "$OUT/specs" "$OUT/top" "$OUT/www/BaseOS/Packages" "$OUT/www/AppStream/Packages"

# --- packages -------------------------------------------------------------
common='License: GPLv2
URL: https://example.invalid/
AutoReqProv: no
%description
A stand-in package for gpubundle tests.'

cat >"$OUT/specs/kernel.spec" <<EOF
Name: kernel
Version: %{kver}
Release: %{krel}
Summary: stand-in kernel
Requires: kernel-core = %{version}-%{release}
Requires: kernel-modules = %{version}-%{release}
$common
%package devel
Summary: stand-in kernel-devel
Requires: kernel-headers = %{version}-%{release}
Requires: /bin/sh
Requires: gcc
%description devel
x
%package headers
Summary: stand-in kernel-headers
%description headers
x
%package core
Summary: stand-in kernel-core
Requires: (dracut if bash)
Requires: /bin/sh
%description core
x
%package modules
Summary: stand-in kernel-modules
Requires: kernel-core = %{version}-%{release}
%description modules
x
%install
k=%{version}-%{release}.%{_arch}
mkdir -p %{buildroot}/usr/src/kernels/\$k %{buildroot}/usr/include/linux %{buildroot}/lib/modules/\$k/kernel/drivers/acpi
echo "obj-m := stand-in.o" > %{buildroot}/usr/src/kernels/\$k/Makefile
echo 'CONFIG_CC_VERSION_TEXT="gcc (GCC) %{gcc} 20231218 (Red Hat %{gcc}-3)"' > %{buildroot}/usr/src/kernels/\$k/.config
echo "#define STAND_IN %{version}" > %{buildroot}/usr/include/linux/stand-in.h
echo "%{version}" > %{buildroot}/lib/modules/\$k/vmlinuz
echo video > %{buildroot}/lib/modules/\$k/kernel/drivers/acpi/video.ko
%files
%files devel
/usr/src/kernels/%{version}-%{release}.%{_arch}
%files headers
/usr/include/linux/stand-in.h
%files core
/lib/modules/%{version}-%{release}.%{_arch}/vmlinuz
%files modules
/lib/modules/%{version}-%{release}.%{_arch}/kernel
EOF

# simple NAME VERSION RELEASE ARCH "Requires: ..." FILE...: one package of its own source.
simple() {
  local name=$1 version=$2 release=$3 arch=$4 requires=$5
  shift 5
  {
    printf 'Name: %s\nVersion: %s\nRelease: %s\nSummary: stand-in %s\n' "$name" "$version" "$release" "$name"
    [[ $arch == noarch ]] && echo "BuildArch: noarch"
    [[ -n $requires ]] && printf '%s\n' "$requires"
    printf '%s\n%%install\n' "$common"
    for f in "$@"; do printf 'mkdir -p %%{buildroot}%s && echo %s > %%{buildroot}%s\n' "$(dirname "$f")" "$name" "$f"; done
    printf '%%files\n'
    printf '%s\n' "$@"
  } >"$OUT/specs/$name-$version.spec"
}
simple bash 5.1.8 6.el9 x86_64 "Requires: glibc" /usr/bin/bash /bin/sh
simple glibc 2.34 100.el9 x86_64 "Requires: tzdata" /usr/lib64/libc.so.6
simple tzdata 2024a 1.el9 noarch "" /usr/share/zoneinfo/UTC
simple dracut 057 53.el9 x86_64 "Requires: /bin/sh" /usr/bin/dracut
simple elfutils-libelf 0.190 2.el9 x86_64 "Requires: glibc" /usr/lib64/libelf.so.1
simple elfutils-libelf-devel 0.190 2.el9 x86_64 "Requires: elfutils-libelf = 0.190-2.el9" /usr/include/libelf.h
simple hostname 3.23 6.el9 x86_64 "" /usr/bin/hostname
# A file requirement outside bin/ and /etc: only filelists.xml says who has
# it (createrepo_c's primary.xml lists no other files), across repos.
simple helper-tools 1.0 1.el9 x86_64 "" /usr/libexec/gpubundle/helper
simple helper-user 1.0 1.el9 x86_64 "Requires: /usr/libexec/gpubundle/helper" /usr/share/helper-user/README

cat >"$OUT/specs/gcc.spec" <<EOF
Name: gcc
Version: %{gver}
Release: %{grel}
Summary: stand-in gcc
Requires: cpp = %{version}-%{release}
Requires: glibc
$common
%package -n cpp
Summary: stand-in cpp
%description -n cpp
x
%install
mkdir -p %{buildroot}/usr/bin
echo gcc > %{buildroot}/usr/bin/gcc
echo cpp > %{buildroot}/usr/bin/cpp
%files
/usr/bin/gcc
%files -n cpp
/usr/bin/cpp
EOF

build() {  # SPEC REPO [--define ...]
  local spec=$1 repo=$2
  shift 2
  rpmbuild -bb --quiet --target x86_64 --nodeps --define "_topdir $OUT/top" --define "_build_id_links none" \
    --define "__os_install_post %{nil}" --define "debug_package %{nil}" "$@" "$OUT/specs/$spec" >"$OUT/rpmbuild.log" 2>&1 ||
    { cat "$OUT/rpmbuild.log" >&2; exit 1; }
  find "$OUT/top/RPMS" -name '*.rpm' -exec mv {} "$OUT/www/$repo/Packages/" \;
}
build kernel.spec BaseOS --define "kver 6.1.0" --define "krel 1.el9" --define "gcc 11.3.1"
build kernel.spec BaseOS --define "kver 6.2.0" --define "krel 1.el9" --define "gcc 11.4.1"
for spec in bash-5.1.8 glibc-2.34 tzdata-2024a dracut-057 elfutils-libelf-0.190 elfutils-libelf-devel-0.190 hostname-3.23 helper-tools-1.0; do
  build "$spec.spec" BaseOS
done
build helper-user-1.0.spec AppStream
build gcc.spec AppStream --define "gver 11.3.1" --define "grel 1.el9"
build gcc.spec AppStream --define "gver 11.4.1" --define "grel 3.el9"

# --- keys and signed metadata ---------------------------------------------
unset GNUPGHOME  # every gpg call names its --homedir
for home in gnupg gnupg-other; do
  rm -rf "${OUT:?}/$home" && mkdir -m 700 "$OUT/$home"
  gpg --homedir "$OUT/$home" --batch --quiet --passphrase '' --quick-gen-key "rpm stand-in ($home) <standin@example.invalid>" ed25519 sign never
done
gpg --homedir "$OUT/gnupg" --batch --armor --export >"$OUT/key.asc"
gpg --homedir "$OUT/gnupg-other" --batch --armor --export >"$OUT/other-key.asc"
# The rpms are signed too, as a distribution's are (rpmsign; rpm's own check is rpmkeys --checksig).
fpr=$(gpg --homedir "$OUT/gnupg" --batch --with-colons --list-keys 2>/dev/null | awk -F: '/^fpr/ { print $10; exit }')
rpmsign --define "__gpg /usr/bin/gpg" --define "_gpg_path $OUT/gnupg" --define "_gpg_name $fpr" \
  --addsign "$OUT"/www/*/Packages/*.rpm >"$OUT/rpmsign.log" 2>&1 || { cat "$OUT/rpmsign.log" >&2; exit 1; }
for repo in BaseOS AppStream; do
  createrepo_c --quiet "$OUT/www/$repo" >/dev/null
  gpg --homedir "$OUT/gnupg" --batch --yes --armor --detach-sign -o "$OUT/www/$repo/repodata/repomd.xml.asc" "$OUT/www/$repo/repodata/repomd.xml"
done
for home in gnupg gnupg-other; do gpgconf --homedir "$OUT/$home" --kill gpg-agent 2>/dev/null || true; done

# --- serve ----------------------------------------------------------------
url=$(serve rpm "$OUT/www" /BaseOS/repodata/repomd.xml)

cat >"$OUT/env" <<EOF
RPM_STANDIN_URL=$url
RPM_STANDIN_WWW=$OUT/www
RPM_STANDIN_KEYRING=$OUT/key.asc
RPM_STANDIN_GNUPGHOME=$OUT/gnupg
RPM_STANDIN_OTHER_GNUPGHOME=$OUT/gnupg-other
EOF
cat "$OUT/env"
