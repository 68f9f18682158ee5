#!/usr/bin/env bash
# gpubundle diff as a user runs it:
#   - two locks resolved from the in-repo recipes against the stand-in v26.7.0
#     chart (tests/tools/chart.py): text, --json, --exit-code, bad input;
#   - with ../shared (GB_SHARED_DIR), two real GPU Operator releases (v24.9.2
#     and v26.7.0 chart values), checked against the locks themselves;
#   - bytes to ship from a store: the small seeded image set in a live
#     docker-registry, mirrored, and the sizes checked against a walk of the
#     store's OCI layout written here in Python (skipped, saying so, without
#     docker-registry).
# Usage: cli_diff.sh GPUBUNDLE   (env GB_SOURCE_DIR, GB_SHARED_DIR)
set -euo pipefail
gpubundle=$(realpath "$1")
src=${GB_SOURCE_DIR:?}
shared=${GB_SHARED_DIR:-$src/../shared}/upstream/gpu-operator
PY=/usr/bin/python3
work=$(mktemp -d)
cleanup() { "$PY" "$src/tests/tools/registry.py" stop --dir "$work/reg" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc CODE CMD...
  local want=$1; shift
  set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
  [[ $rc == "$want" ]] || { cat "$work/out" "$work/err"; fail "exit $rc, wanted $want: $*"; }
}

# --- In-repo recipes, stand-in chart -------------------------------------------
"$PY" "$src/tests/tools/chart.py" --release v26.7.0 --out "$work/standin" >/dev/null
sed -e 's/version: "580.105.08"/version: "580.95.05"/' -e 's/cuda:12.4.1-base/cuda:12.6.0-base/' \
  "$src/examples/conventional.yaml" >"$work/next.yaml"
cmp -s "$src/examples/conventional.yaml" "$work/next.yaml" && fail "the recipe edit changed nothing"
"$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$work/standin" -o "$work/old.lock.json"
"$gpubundle" -q resolve "$work/next.yaml" --chart "$work/standin" -o "$work/new.lock.json"
"$gpubundle" -q resolve "$src/examples/host.yaml" --chart "$work/standin" -o "$work/host.lock.json"

expect_rc 0 "$gpubundle" diff --help
grep -q '^Example' "$work/out" || fail "diff --help has no example"
expect_rc 0 "$gpubundle" diff "$work/old.lock.json" "$work/old.lock.json"
grep -qx "no differences" "$work/out" || fail "identical locks: $(cat "$work/out")"
expect_rc 0 "$gpubundle" diff --exit-code "$work/old.lock.json" "$work/old.lock.json"

expect_rc 0 "$gpubundle" diff "$work/old.lock.json" "$work/new.lock.json"
cp "$work/out" "$work/text1"
for line in "  driver.version            580.105.08 -> 580.95.05" \
            "  driver                    nvcr.io/nvidia/driver 580.105.08-ubuntu22.04 -> 580.95.05-ubuntu22.04" \
            "  extraImages               nvcr.io/nvidia/cuda 12.4.1-base-ubuntu22.04 -> 12.6.0-base-ubuntu22.04" \
            "images: 0 added, 0 removed, 2 changed"; do
  grep -qxF "$line" "$work/text1" || { cat "$work/text1"; fail "text lacks: $line"; }
done
grep -q "^bytes to ship: unknown for 2 images" "$work/text1" || fail "sizes not said unknown"
expect_rc 0 "$gpubundle" diff "$work/old.lock.json" "$work/new.lock.json"
cmp -s "$work/out" "$work/text1" || fail "text is not stable"
expect_rc 1 "$gpubundle" diff --exit-code "$work/old.lock.json" "$work/new.lock.json"

# Conventional -> host driver: the driver images leave.
expect_rc 0 "$gpubundle" --json diff "$work/old.lock.json" "$work/host.lock.json"
"$PY" - "$work/out" "$work/old.lock.json" "$work/host.lock.json" <<'PY' || fail "--json conventional -> host"
import json, sys
d, old, new = (json.load(open(p)) for p in sys.argv[1:])
assert json.dumps(d, indent=2, sort_keys=True) + "\n" == open(sys.argv[1]).read(), "keys not sorted / not 2-space"
assert d["schemaVersion"] == 1 and d["differs"] is True
assert d["fields"]["driver.mode"] == {"old": "conventional", "new": "host"}
olds = {i["source"] for i in old["images"]}; news = {i["source"] for i in new["images"]}
gone = {i["source"] for i in d["images"]["removed"]} | {c["old"]["source"] for c in d["images"]["changed"]}
came = {i["source"] for i in d["images"]["added"]} | {c["new"]["source"] for c in d["images"]["changed"]}
assert gone == olds - news and came == news - olds, (gone, came)
assert any("driver" in i["components"] for i in d["images"]["removed"])
assert d["ship"]["bytes"] is None and d["ship"]["sizedBy"] == ""
PY

# Bad input: one line naming the file, exit 2.
echo '{"schemaVersion": 1, "images": "no"}' >"$work/bad.lock.json"
expect_rc 2 "$gpubundle" diff "$work/old.lock.json" "$work/bad.lock.json"
[[ $(wc -l <"$work/err") == 1 ]] && grep -q "bad.lock.json" "$work/err" || fail "bad lock: $(cat "$work/err")"
expect_rc 2 "$gpubundle" diff "$work/missing.lock.json" "$work/old.lock.json"
[[ $(wc -l <"$work/err") == 1 ]] && grep -q "missing.lock.json" "$work/err" || fail "missing lock: $(cat "$work/err")"
expect_rc 2 "$gpubundle" diff "$work/old.lock.json" "$work/new.lock.json" --store "$work/nostore"
[[ $(wc -l <"$work/err") == 1 ]] && grep -q "nostore" "$work/err" || fail "missing store: $(cat "$work/err")"
expect_rc 2 "$gpubundle" diff "$work/old.lock.json"
echo "ok: diff of in-repo locks"

# --- Two real releases ------------------------------------------------------------
if [[ -d $shared/v24.9.2 && -d $shared/v26.7.0 ]]; then
  "$gpubundle" -q resolve "$src/examples/v24.9.2/conventional.yaml" --chart "$shared/v24.9.2" -o "$work/r1.lock.json"
  "$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$shared/v26.7.0" -o "$work/r2.lock.json"
  expect_rc 0 "$gpubundle" --json diff "$work/r1.lock.json" "$work/r2.lock.json"
  "$PY" - "$work/out" "$work/r1.lock.json" "$work/r2.lock.json" <<'PY' || fail "real releases: --json disagrees with the locks"
import json, sys
d, old, new = (json.load(open(p)) for p in sys.argv[1:])
assert d["fields"]["operator.version"] == {"old": old["operator"]["version"], "new": new["operator"]["version"]}
assert d["fields"]["chart.version"]["new"] == "v26.7.0"
if old["driver"]["version"] != new["driver"]["version"]:
    assert d["fields"]["driver.version"] == {"old": old["driver"]["version"], "new": new["driver"]["version"]}
def by_comp(lock):
    out = {}
    for i in lock["images"]:
        for c in i["components"]:
            out.setdefault(c, []).append(i["source"])
    return {c: sorted(v) for c, v in out.items()}
oc, nc = by_comp(old), by_comp(new)
want = {c for c in set(oc) | set(nc) if oc.get(c, []) != nc.get(c, [])}
assert set(d["components"]) == want, set(d["components"]) ^ want
assert "devicePlugin" in want and "driver" in want
olds = {i["source"] for i in old["images"]}; news = {i["source"] for i in new["images"]}
came = {i["source"] for i in d["images"]["added"]} | {c["new"]["source"] for c in d["images"]["changed"]}
gone = {i["source"] for i in d["images"]["removed"]} | {c["old"]["source"] for c in d["images"]["changed"]}
assert came == news - olds and gone == olds - news
for c in d["images"]["changed"]:  # paired by repository
    assert c["old"]["source"].rsplit(":", 1)[0] == c["new"]["source"].rsplit(":", 1)[0] == c["repository"]
assert len(d["images"]["changed"]) >= 5
PY
  expect_rc 0 "$gpubundle" diff "$work/r1.lock.json" "$work/r2.lock.json"
  grep -q "^  operator.version          v24.9.2 -> v26.7.0$" "$work/out" || { cat "$work/out"; fail "real releases: text"; }
  echo "ok: diff of v24.9.2 and v26.7.0 locks from the real chart values"
else
  echo "note: $shared is absent: the diff of two real GPU Operator releases is skipped"
fi

# --- Bytes to ship from a store ---------------------------------------------------
if ! command -v docker-registry >/dev/null; then
  echo "note: docker-registry is not installed: bytes to ship from a store are not tested here"
  exit 0
fi
"$PY" "$src/tests/tools/registry.py" start --dir "$work/reg" --name up >"$work/up.json"
up=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"])' "$work/up.json")
"$PY" "$src/tests/tools/seed.py" --registry "$up" --plain-http --set small >"$work/seed.json"
printf 'hosts:\n  "%s":\n    mirrors: ["http://%s"]\n    fallback: false\n' "$up" "$up" >"$work/reg.yaml"
# Old: the first four seeded images; new: the last four (test/oci-shared shares
# all layers but one with test/oci-multi, which only the old lock has).
"$PY" - "$work/seed.json" "$work/old.lock.json" "$work/s1.lock.json" "$work/s2.lock.json" "$work/standin" <<'PY'
import json, sys
seed, base, out1, out2, chart = sys.argv[1:]
refs = sorted(i["ref"] for i in json.load(open(seed))["images"])
lock = json.load(open(base))
lock["chart"]["source"] = chart
for out, part in ((out1, refs[:4]), (out2, refs[-4:])):
    lock["images"] = [{"components": ["extraImages"], "source": r, "platforms": ["linux/amd64"], "destination": "",
                       "digest": "", "origin": "upstream"} for r in part]
    json.dump(lock, open(out, "w"), indent=2, sort_keys=True)
PY
for l in s1 s2; do
  "$gpubundle" --store "$work/store" -q mirror "$work/$l.lock.json" --registry-config "$work/reg.yaml" || fail "mirror $l"
done
expect_rc 0 "$gpubundle" --json diff "$work/s1.lock.json" "$work/s2.lock.json" --store "$work/store"
"$PY" - "$work/out" "$work/store" "$work/s1.lock.json" "$work/s2.lock.json" <<'PY' || fail "bytes to ship disagree with the store"
import json, os, sys
d, store = json.load(open(sys.argv[1])), sys.argv[2]
old, new = (json.load(open(p)) for p in sys.argv[3:])
def blob(dg): return os.path.join(store, "blobs", "sha256", dg.split(":")[1])
def walk(dg, out):
    out[dg] = os.path.getsize(blob(dg))
    m = json.load(open(blob(dg)))
    for child in m.get("manifests", []):
        if os.path.exists(blob(child["digest"])):  # sparse index: only the kept platforms
            walk(child["digest"], out)
    for b in [m["config"]] + m["layers"] if "config" in m else []:
        out[b["digest"]] = b["size"]
    return out
have = {}
for i in old["images"]: walk(i["digest"], have)
olds = {i["source"] for i in old["images"]}
ship, per = {}, {}
for i in new["images"]:
    if i["source"] in olds: continue
    mine = {k: v for k, v in walk(i["digest"], {}).items() if k not in have}
    per[i["source"]] = sum(mine.values()); ship.update(mine)
assert d["ship"]["complete"] is True and d["ship"]["oldUnsized"] == 0
assert d["ship"]["bytes"] == sum(ship.values()), (d["ship"]["bytes"], sum(ship.values()))
assert {i["source"]: i["bytes"] for i in d["ship"]["images"]} == per, (d["ship"], per)
assert len(per) == 2 and sum(ship.values()) > 0, per
print("bytes to ship:", d["ship"]["bytes"])
PY
expect_rc 0 "$gpubundle" diff "$work/s1.lock.json" "$work/s2.lock.json" --store "$work/store"
grep -q "^bytes to ship: [0-9.]* [KMG]*i*B ([0-9]* bytes) for [0-9]* images, sized by store " "$work/out" || { cat "$work/out"; fail "text: bytes to ship"; }
echo "ok: bytes to ship from a mirrored store"
