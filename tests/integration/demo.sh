#!/usr/bin/env bash
# The README's main command, scripts/demo.sh, as a user runs it (its build step
# finds this build tree up to date), with assertions on what it shows:
#   - it passes and ends with "demo: done", with nothing beside the repository
#     needed (the stand-in chart comes from tests/tools/releases.yaml);
#   - it says what it builds, and the build's own progress shows;
#   - gpubundle's progress lines show while it builds the bundle;
#   - the values.yaml it prints is the whole file: it parses, nested keys under
#     their parents, every repository at the site registry;
#   - it makes the handover report of the sample results, for the kit it
#     imported; they come from other kits, so the verdict is INCOMPLETE, naming them;
#   - it ends by pulling one image through gpubundle serve, with the bundle's digest.
# Usage: demo.sh BUILD_DIR CMAKE_GENERATOR   (GB_SOURCE_DIR: the repository)
set -euo pipefail
build=$(cd "$1" && pwd)
src=${GB_SOURCE_DIR:?}
[[ ${2:-} == Ninja ]] || { echo "SKIP: the demo configures $build with Ninja; it was configured with '${2:-}'"; exit 77; }
command -v docker-registry skopeo >/dev/null || { echo "SKIP: docker-registry or skopeo missing"; exit 77; }
W=$(mktemp -d -t gb-demo-test.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

GPUBUNDLE_BUILD_DIR=$build bash "$src/scripts/demo.sh" > "$W/out" 2>&1 || { tail -40 "$W/out"; fail "scripts/demo.sh failed"; }
sed 's/\x1b\[[0-9;]*m//g' "$W/out" > "$W/plain"
tail -n1 "$W/plain" | grep -qx 'demo: done' || fail "the demo does not end with 'demo: done'"

grep -q "^configuring and building gpubundle in $build/" "$W/plain" || fail "the demo does not say what it builds"
grep -Eq '^\[[0-9]+/[0-9]+\] |^ninja: no work to do\.$' "$W/plain" || fail "the build's own progress does not show"
grep -Eq '^built .*/builder/gpubundle in [0-9]+s$' "$W/plain" || fail "the demo does not say the build is done"
grep -Eq '^(resolve|mirror): ' "$W/plain" || fail "gpubundle build's progress lines do not show"
grep -qx "1 verify.sh result(s), 1 node check(s), 2 NCCL run(s), kit site-precompiled; written to $build/acceptance-report.html" \
  "$W/plain" || fail "the demo does not make the handover report"
# The samples come from other kits and clusters: the demo's report must say so, not PASS.
grep -qx "report INCOMPLETE: 4 results name another kit (verify.json, h200-node.json, nccl-1node.json, nccl-2nodes.json); no node check of gpu-node-1, gpu-node-2" \
  "$W/plain" || fail "the demo's report of the sample results does not say INCOMPLETE naming the other kit"
grep -q "^warning: verify.json: verify.sh of a kit made outside a bundle (recipe site-precompiled), the kit's bundle is " "$W/plain" ||
  fail "the demo's report does not say what differs"
! grep -q "^report PASS" "$W/plain" || fail "the demo's report says PASS on results from another kit"
grep -q '<div class="verdict incomplete">INCOMPLETE' "$build/acceptance-report.html" || fail "the demo's report does not show INCOMPLETE"
grep -q '<svg class="plot"' "$build/acceptance-report.html" || fail "the demo's report has no plot"

# Section 8: one image pulled through gpubundle serve, with the bundle's digest.
pulled=$(sed -n 's/^its digest: \(sha256:[0-9a-f]*\) (the bundle.s: \(sha256:[0-9a-f]*\))$/\1 \2/p' "$W/plain")
read -r got want <<<"$pulled"
[[ -n $got && $got == "$want" ]] || fail "the demo's pull through serve: '$pulled'"
grep -qx "gpubundle-serve.service" "$W/plain" || fail "the demo's serve kit lacks its systemd unit"
/usr/bin/python3 - "$W/plain" <<'PYEOF' || fail "the values.yaml the demo prints is not the whole, well-formed file"
import re, sys, yaml
lines = open(sys.argv[1]).read().split("\n")
site = next(m.group(1) for l in lines if (m := re.match(r"^site registry +-> http://(\S+)$", l)))
start = next(i for i, l in enumerate(lines) if l.startswith("values.yaml, the whole file")) + 1
end = lines.index("", start)
text = "\n".join(lines[start:end])
assert text.startswith("# Helm values for chart gpu-operator"), text[:200]
values = yaml.safe_load(text)
assert values["driver"]["manager"]["repository"].startswith(site + "/gpu/"), values["driver"]
assert values["node-feature-discovery"]["image"]["repository"].startswith(site + "/gpu/"), values["node-feature-discovery"]
def repos(n):
    if isinstance(n, dict):
        for k, v in n.items():
            if k == "repository":
                yield v
            else:
                yield from repos(v)
found = list(repos(values))
assert len(found) >= 8 and all(r.startswith(site + "/gpu") for r in found), found
print(f"ok: the printed values.yaml parses: {len(text.splitlines())} lines, {len(found)} repositories, all at {site}/gpu")
PYEOF
echo "demo: ok ($(wc -l < "$W/plain") lines of output)"
