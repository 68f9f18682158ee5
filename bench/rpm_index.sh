#!/usr/bin/env bash
# rpm-md index memory and time (issue 28, item 5): a Fedora-sized primary.xml
# (N packages, ~2 KB each as Fedora's are: summary, description, 2-6
# provides, 5-16 requires, some files), served on loopback with an unsigned
# repomd.xml (`signatures: packages`, the mode whose sizes are the sender's
# word). gpubundle reads the index and solves one package's closure
# (tests' fetch_packages_rpm --resolve-only: no download); dnf does the same
# (install --assumeno, a private config and an empty root). Prints peak RSS
# and wall time of both, and the goal line: peak RSS < 256 MB at 100k.
# Usage: bench/rpm_index.sh [BUILD_DIR] [PACKAGES]   (default build, 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
n=${2:-100000}
tool=$build/tests/fetch_packages_rpm
[[ -x $tool ]] || { echo "bench/rpm_index.sh: build $tool first (ninja -C $build fetch_packages_rpm)" >&2; exit 2; }
w=$(mktemp -d /tmp/gb-bench-rpm.XXXXXX)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$w"' EXIT

/usr/bin/python3 - "$n" "$w/www/repo" <<'EOF'
import gzip, hashlib, os, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
random.seed(1)
words = "library runtime tools development files for the shared module plugin support data python perl ruby gnome kde server client".split()
def text(k): return " ".join(random.choice(words) for _ in range(k))
def entry(name, flags=None, ver=None):
    if not flags: return f'<rpm:entry name="{name}"/>'
    return f'<rpm:entry name="{name}" flags="{flags}" epoch="0" ver="{ver}" rel="1.fc41"/>'
names = [f"pkg{i}-{random.choice(words)}" for i in range(n)]
base = 300  # like glibc, bash, coreutils: required by many, requiring none
parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<metadata xmlns="http://linux.duke.edu/metadata/common" '
         'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="%d">\n' % n]
for i, name in enumerate(names):
    ver = f"{random.randint(0, 9)}.{random.randint(0, 30)}.{random.randint(0, 9)}"
    arch = "x86_64" if i % 5 else "noarch"
    prov = [entry(name, "EQ", ver), entry(f"{name}(x86-64)", "EQ", ver)] + [entry(f"lib{name}.so.{k}()(64bit)") for k in range(random.randint(0, 4))]
    req = []
    if i >= base:
        req = [entry(names[random.randrange(base)]) for _ in range(random.randint(3, 12))]
        req += [entry(names[random.randrange(base, i)]) for _ in range(random.randint(0, 2))] if i > base else []
    files = f"<file>/usr/bin/{name}</file>" if i % 3 == 0 else ""
    parts.append(f'''<package type="rpm">
  <name>{name}</name>
  <arch>{arch}</arch>
  <version epoch="0" ver="{ver}" rel="1.fc41"/>
  <checksum type="sha256" pkgid="YES">{hashlib.sha256(name.encode()).hexdigest()}</checksum>
  <summary>{text(8)}</summary>
  <description>{text(random.randint(20, 70))}</description>
  <packager>Fedora Project</packager>
  <url>https://example.org/{name}</url>
  <time file="1700000000" build="1700000000"/>
  <size package="{random.randint(10000, 9000000)}" installed="{random.randint(10000, 90000000)}" archive="{random.randint(10000, 90000000)}"/>
  <location href="Packages/{name[0]}/{name}-{ver}-1.fc41.{arch}.rpm"/>
  <format>
    <rpm:license>MIT AND GPL-2.0-or-later</rpm:license>
    <rpm:vendor>Fedora Project</rpm:vendor>
    <rpm:group>Unspecified</rpm:group>
    <rpm:buildhost>buildhw-x86-01.iad2.fedoraproject.org</rpm:buildhost>
    <rpm:sourcerpm>{name}-{ver}-1.fc41.src.rpm</rpm:sourcerpm>
    <rpm:header-range start="4504" end="{random.randint(9000, 90000)}"/>
    <rpm:provides>
      {"".join(prov)}
    </rpm:provides>
    <rpm:requires>
      {"".join(req)}
    </rpm:requires>
    {files}
  </format>
</package>
''')
parts.append("</metadata>\n")
raw = "".join(parts).encode()
packed = gzip.compress(raw, 6)
os.makedirs(f"{out}/repodata", exist_ok=True)
open(f"{out}/repodata/primary.xml.gz", "wb").write(packed)
open(f"{out}/repodata/repomd.xml", "w").write(f'''<?xml version="1.0" encoding="UTF-8"?>
<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">
  <revision>1</revision>
  <data type="primary">
    <checksum type="sha256">{hashlib.sha256(packed).hexdigest()}</checksum>
    <open-checksum type="sha256">{hashlib.sha256(raw).hexdigest()}</open-checksum>
    <location href="repodata/primary.xml.gz"/>
    <timestamp>1700000000</timestamp>
    <size>{len(packed)}</size>
    <open-size>{len(raw)}</open-size>
  </data>
</repomd>
''')
print(f"primary.xml: {n} packages, {len(raw) / 2**20:.0f} MiB open, {len(packed) / 2**20:.0f} MiB packed")
EOF
export GNUPGHOME=$w/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key "bench <bench@example.invalid>" ed25519 sign never 2>/dev/null
gpg --batch --armor --export >"$w/key.asc"
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$w/www" && exec /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/repo/repodata/repomd.xml" >/dev/null && break; sleep 0.1; done
cat >"$w/recipe.yaml" <<EOF
apiVersion: gpubundle/v1
kind: Recipe
metadata: {name: bench}
operator: {version: v26.7.0}
target: {gpus: [H100-SXM5-80GB], os: rhel9.4, kernels: [6.1.0-1.el9.x86_64]}
driver: {mode: conventional, version: "580.105.08"}
packages:
  sources:
    - {name: big, type: rpm-md, url: "http://127.0.0.1:$port", suites: [repo], keyring: $w/key.asc, signatures: packages}
EOF
want=$(zcat "$w/www/repo/repodata/primary.xml.gz" | grep -o "<name>pkg$((n - 1))-[a-z]*</name>" | sed 's/<[^>]*>//g')

measure() {  # LABEL CMD...: peak RSS (MiB) and wall seconds of CMD, from /usr/bin/time
  local label=$1
  shift
  /usr/bin/time -f '%M %e' -o "$w/time" "$@" >"$w/$label.out" 2>"$w/$label.err" || true
  read -r kb secs < <(tail -n 1 "$w/time")  # after "Command exited with non-zero status" when it failed
  echo "$label $((kb / 1024)) $secs"
}
read -r _ ours_mb ours_s < <(measure gpubundle "$tool" "$w/recipe.yaml" --dest "$w/d" --name "$want" --resolve-only yes)
grep -q "^$want " "$w/gpubundle.out" || { echo "gpubundle did not resolve $want: $(cat "$w/gpubundle.err")" >&2; exit 1; }
echo "gpubundle: $(wc -l <"$w/gpubundle.out") packages in the closure of $want; peak RSS $ours_mb MiB, $ours_s s"

if command -v dnf >/dev/null; then
  mkdir -p "$w/dnf/repos"
  printf '[big]\nname=big\nbaseurl=http://127.0.0.1:%s/repo\ngpgcheck=0\nrepo_gpgcheck=0\n' "$port" >"$w/dnf/repos/big.repo"
  printf '[main]\ncachedir=%s/cache\nlogdir=%s/log\npersistdir=%s/persist\nreposdir=%s/repos\ninstall_weak_deps=0\n' \
    "$w/dnf" "$w/dnf" "$w/dnf" "$w/dnf" >"$w/dnf/dnf.conf"
  read -r _ dnf_mb dnf_s < <(measure dnf dnf --config "$w/dnf/dnf.conf" --setopt=reposdir="$w/dnf/repos" \
    --installroot "$w/dnf/root" --releasever 9 install --assumeno "$want")
  grep -q "$want" "$w/dnf.out" || { echo "dnf did not resolve $want: $(tail -3 "$w/dnf.err")" >&2; exit 1; }
  echo "dnf (libsolv + librepo): peak RSS $dnf_mb MiB, $dnf_s s"
  awk -v a="$ours_mb" -v b="$dnf_mb" -v c="$ours_s" -v d="$dnf_s" \
    'BEGIN { printf "ratio: %.2fx dnf'"'"'s peak RSS, %.2fx its time\n", a / b, c / d }'
fi
verdict=misses
((ours_mb < 256)) && verdict=holds
echo "goal: rpm-md index of $n packages, peak RSS $ours_mb MiB (target < 256 MB at 100k): $verdict"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
