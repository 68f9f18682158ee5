#!/usr/bin/env bash
# Hostile bundles (issue 11): variants of a real bundle, re-signed with the
# trusted key by tests/tools/bundlecraft.py so that only the reader's own
# checks can refuse them. For each: `bundle verify`, `import` into a real
# docker-registry and `node-image export --bundle` exit 1 or 2 (never a crash),
# with a short message naming the problem, and the site registry stays empty.
# Plus: volumes of two writes mixed, peak memory of the zstd bomb and the huge
# volume count, a missing file (exit 2 everywhere), and `kill -9` of a split
# `bundle create`.
GB=$1
source "$(dirname "$0")/mirror_lib.sh"
command -v zstd >/dev/null || { echo "SKIP: zstd not installed"; exit 77; }
CRAFT=$TOOLS/bundlecraft.py
MAX_RSS_KB=$((200 * 1024))
asan=0
# Under ASan, shadow memory and the free quarantine add ~300 MiB; the bombs
# this guards against took gigabytes, so 1 GiB still tells them apart.
if grep -q __asan_init "$GB"; then MAX_RSS_KB=$((1024 * 1024)) asan=1; fi

small_bundle_store
site=$(start_registry site)
site_repos=$W/reg/site/storage/docker/registry/v2/repositories
create -o "$W/a.bundle" || fail "bundle create"
create -o "$W/s.bundle" --split 260K || fail "bundle create --split"
mapfile -t split_vols < <(ls "$W"/s.bundle.*)
"$GB" bundle verify "$W/a.bundle" --pubkey "$W/release.pub" >/dev/null 2>&1 || fail "the untouched bundle must verify"

# refused NAME WANT_TEXT CMD...: exit 1 or 2, at most 4 lines on stderr, none
# longer than 600 bytes, one of them containing WANT_TEXT. Keeps the peak
# resident set in rss[NAME], in KiB.
declare -A rss
refused() {
  local name=$1 want=$2 rc
  shift 2
  set +e
  /usr/bin/time -f '%M' -o "$W/rss" "$@" >"$W/out" 2>"$W/err"
  rc=$?
  set -e
  rss[$name]=$(tail -1 "$W/rss")
  [[ $rc == 1 || $rc == 2 ]] || { head -c 2000 "$W/err"; fail "$name: exit $rc, want 1 or 2"; }
  (($(wc -l <"$W/err") <= 4)) || { head -c 2000 "$W/err"; fail "$name: more than 4 lines on stderr"; }
  awk 'length > 600 { exit 1 }' "$W/err" || fail "$name: a message line runs past 600 bytes"
  grep -qF -- "$want" "$W/err" || { cat "$W/err"; fail "$name: no '$want' in the message"; }
}
site_untouched() {
  [[ ! -d $site_repos ]] || [[ -z $(ls -A "$site_repos") ]] || { ls -R "$site_repos" | head; fail "$1: import pushed to the site registry"; }
}

# Lines: CASE EXPECTED TEXT... VOLUMES (a: the one-volume bundle, s: the split one)
while read -r line; do
  [[ -n $line ]] || continue
  case=${line%% *} which=${line##* } want=${line#* }
  want=${want% *}
  src=("$W/a.bundle")
  [[ $which == s ]] && src=("${split_vols[@]}")
  out=$W/craft/$case
  "$PY" "$CRAFT" mutate --key "$W/release.key" --case "$case" --out "$out" "${src[@]}" >/dev/null || fail "$case: bundlecraft"
  vols=("$out"/*)
  refused "$case: verify" "$want" "$GB" bundle verify "${vols[@]}" --pubkey "$W/release.pub"
  refused "$case: import" "$want" "$GB" import "${vols[@]}" --registry "http://$site/gpu" --pubkey "$W/release.pub" -o "$W/kit-$case"
  refused "$case: import --insecure-skip-signature" "$want" \
    "$GB" import "${vols[@]}" --registry "http://$site/gpu" --insecure-skip-signature --no-kit
  refused "$case: node-image export" "$want" "$GB" node-image export --bundle "${vols[@]}" --pubkey "$W/release.pub" -o "$W/exp-$case"
  site_untouched "$case"
  [[ ! -e $W/kit-$case && ! -e $W/exp-$case ]] || fail "$case: a kit or export folder was written"
  pass "$case refused by verify, import and export; nothing pushed"
done <<'EOF'
part-zero part number 0 is out of range a
part-negative part number -1 is out of range a
part-past-count part number 5 is out of range a
huge-volume-count volume.count 2147483647 is out of range a
format-version-2^40 formatVersion 1099511627776 is out of range a
unknown-encoding unknown encoding 'gzip' a
lock-schema-99 lock schema 99 a
lock-not-object lock is not an object a
chart-name-dotdot is not a chart name a
path-dotdot has a '..' component a
deep-index nests deeper than 8 levels a
zstd-bomb more than the 16777216 a
zstd-bomb-undeclared does not declare its content size a
swap-parts does not match its digest s
duplicate-part is listed twice s
EOF

# Peak memory where a bundle claims much: bounded, whatever it claims. Read
# from the runs above (a run costs up to 15 s under ASan).
for case in zstd-bomb zstd-bomb-undeclared huge-volume-count deep-index; do
  v=${rss["$case: verify"]} i=${rss["$case: import"]}
  [[ $v =~ ^[0-9]+$ && $i =~ ^[0-9]+$ ]] || fail "$case: no peak RSS recorded ('$v', '$i')"
  ((v < MAX_RSS_KB && i < MAX_RSS_KB)) || fail "$case: peak RSS verify ${v} KiB, import ${i} KiB (limit $MAX_RSS_KB)"
  pass "$case: peak RSS verify $((v / 1024)) MiB, import $((i / 1024)) MiB"
done

# Volumes of two writes of the same content: every mix is refused. The second
# write gets the same volume count, so only the layout check can tell.
n=${#split_vols[@]}
other=
for k in 280 300 320 340 360 240 230; do
  rm -f "$W"/t.bundle*
  create -o "$W/t.bundle" --split ${k}K || continue
  if (($(ls "$W"/t.bundle.* | wc -l) == n)) && ! cmp -s "$W/t.bundle.001" "$W/s.bundle.001"; then other=$k; break; fi
done
[[ -n $other ]] || fail "no second split of $n volumes found"
mixes=0
for ((mask = 1; mask < (1 << n) - 1; mask++)); do
  # Under ASan (six times slower) the mixes with one volume swapped either
  # way: every position read both ways; the plain build runs them all.
  ones=0
  for ((v = 0; v < n; v++)); do ones=$((ones + ((mask >> v) & 1))); done
  ((asan == 0 || ones == 1 || ones == n - 1)) || continue
  mix=()
  for ((v = 1; v <= n; v++)); do
    if (((mask >> (v - 1)) & 1)); then mix+=("$(printf '%s/t.bundle.%03d' "$W" "$v")"); else mix+=("$(printf '%s/s.bundle.%03d' "$W" "$v")"); fi
  done
  refused "mix $mask" "are mixed" "$GB" bundle verify "${mix[@]}" --pubkey "$W/release.pub"
  mixes=$((mixes + 1))
done
refused "mix: import" "are mixed" "$GB" import "$W/s.bundle.001" "$W/t.bundle.002" "${split_vols[@]:2}" \
  --registry "http://$site/gpu" --pubkey "$W/release.pub" --no-kit
site_untouched "mixed volumes"
pass "$mixes mixes of --split 260K and --split ${other}K volumes refused ($n volumes each); nothing pushed"

# A missing volume file is bad input: exit 2 from every bundle command.
for cmd in "bundle verify" "bundle inspect" "import" "node-image export"; do
  case $cmd in
    "bundle verify") args=(bundle verify "$W/nope.bundle" --pubkey "$W/release.pub") ;;
    "bundle inspect") args=(bundle inspect "$W/nope.bundle") ;;
    import) args=(import "$W/nope.bundle" --registry "http://$site/gpu" --pubkey "$W/release.pub") ;;
    "node-image export") args=(node-image export --bundle "$W/nope.bundle" --pubkey "$W/release.pub" -o "$W/exp-nope") ;;
  esac
  set +e
  "$GB" "${args[@]}" 2>"$W/err"
  rc=$?
  set -e
  [[ $rc == 2 ]] && grep -q "nope.bundle: no such file" "$W/err" || { cat "$W/err"; fail "$cmd of a missing file: exit $rc, want 2"; }
done
pass "a missing bundle file: exit 2 from verify, inspect, import and export"

# kill -9 of a split bundle create at random moments: whenever volume 1 is
# there under its final name, the whole set is; a finished run leaves no temp.
for delay in 0.02 0.05 0.1 0.2 0.3 0.5; do
  rm -f "$W"/k.bundle*
  "$GB" --store "$store" -q bundle create "$W/site.lock.json" --key "$W/release.key" -o "$W/k.bundle" --split 260K 2>/dev/null &
  pid=$!  # gpubundle itself, not a subshell around it
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ -e $W/k.bundle.001 ]]; then
    "$GB" bundle verify "$W"/k.bundle.[0-9][0-9][0-9] --pubkey "$W/release.pub" >/dev/null 2>&1 ||
      fail "killed after ${delay}s: volume 1 published beside an incomplete set"
  fi
done
create -o "$W/k.bundle" --split 260K || fail "bundle create after the kills"
ls "$W" | grep -q '^k\.bundle.*\.tmp\.' && fail "a finished bundle create left temp volumes of killed runs"
"$GB" bundle verify "$W"/k.bundle.[0-9][0-9][0-9] --pubkey "$W/release.pub" >/dev/null || fail "verify after the kills"
pass "kill -9 of split bundle create: never a partial set under the final names; temps cleaned up"
# A registry index nested 30 deep: inventory stops at the OCI nesting limit
# (13,000 levels kept it walking for minutes).
"$PY" - "$up" "$(jget "$W/seed.json" 'd["images"][0]["ref"]')" <<'PYEOF'
import hashlib, json, sys, urllib.request
host, ref = sys.argv[1], sys.argv[2]
repo, tag = ref.split("/", 1)[1].rsplit(":", 1)
def req(method, path, body=None, ctype=None, accept=None):
    r = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{path}", data=body, method=method)
    if ctype: r.add_header("Content-Type", ctype)
    if accept: r.add_header("Accept", accept)
    return urllib.request.urlopen(r)
index = "application/vnd.oci.image.index.v1+json"
types = ",".join([index, "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json",
                  "application/vnd.docker.distribution.manifest.list.v2+json"])
resp = req("GET", tag, accept=types)
body, ctype = resp.read(), resp.headers["Content-Type"]
for level in range(30):
    child = {"mediaType": ctype, "digest": "sha256:" + hashlib.sha256(body).hexdigest(), "size": len(body),
             "platform": {"os": "linux", "architecture": "amd64"}}
    body, ctype = json.dumps({"schemaVersion": 2, "mediaType": index, "manifests": [child]}).encode(), index
    req("PUT", "sha256:" + hashlib.sha256(body).hexdigest() if level < 29 else "deep", body, index)
PYEOF
prefix=$(jget "$W/seed.json" 'd["images"][0]["ref"].split("/")[1]')
refused "inventory of a deep index" "index nesting deeper than 8 levels" timeout 120 "$GB" inventory --registry "http://$up/$prefix"
pass "inventory stops at the index nesting limit"
echo "hostile_bundle: ok"
