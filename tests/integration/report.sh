#!/usr/bin/env bash
# gpubundle report end to end, looked at in a real browser:
#   - a kit from `gpubundle overrides` (the stand-in chart) and the sample
#     results in examples/acceptance-results make a report;
#   - the HTML loads nothing from anywhere: no script, link, img, iframe,
#     object or embed element, no src/href/... attribute but a #fragment, no
#     url() or @import in its styles (Python's html.parser reads it);
#   - Debian's headless Chromium takes a screenshot, and the PNG (decoded by
#     tests/tools/pngscan.py, zlib only) shows both runs' line colours across
#     the plot area; the same report with its <svg> broken shows neither, so
#     the check fails when the plot does not render;
#   - the sample's node check comes from another cluster: INCOMPLETE, naming it;
#   - --json: the verdict as JSON on stdout and nothing on stderr;
#   - bad input: exit 2 and one line naming the file.
# Chromium missing: skip (77) outside CI, fail in CI (install-deps.sh installs it).
# Usage: report.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! command -v chromium >/dev/null; then
  [ -z "${CI:-}" ] || fail "chromium is not installed (scripts/install-deps.sh installs it)"
  echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The kit: the stand-in chart, a resolved lock, overrides.
/usr/bin/python3 "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
"$gpubundle" -q resolve "$src/examples/precompiled.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site.example:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/kit"

SOURCE_DATE_EPOCH=1796126400 "$gpubundle" report --kit "$work/kit" "$src/examples/acceptance-results" -o "$work/report.html" \
  2>"$work/report.err" || fail "gpubundle report failed: $(cat "$work/report.err")"
# The sample's node check is a real H200 of another cluster: the verdict names it, never PASS.
grep -qx "report INCOMPLETE: 1 result names another kit (h200-node.json); no node check of gpu-node-1, gpu-node-2" "$work/report.err" ||
  fail "the report of results from another kit does not say INCOMPLETE naming it: $(cat "$work/report.err")"
grep -q "^warning: h200-node.json: OS ubuntu24.04, the kit's is ubuntu22.04; kernel 6.18.44-fc-v973-gpu, " "$work/report.err" ||
  fail "the report does not say what differs: $(cat "$work/report.err")"

# --json: the verdict as JSON on stdout, nothing on stderr.
"$gpubundle" --json report --kit "$work/kit" "$src/examples/acceptance-results" -o "$work/report-json.html" >"$work/report.json" 2>"$work/report-json.err" ||
  fail "gpubundle --json report failed: $(cat "$work/report-json.err")"
[ ! -s "$work/report-json.err" ] || fail "gpubundle --json report wrote to stderr: $(cat "$work/report-json.err")"
python3 - "$work/report.json" <<'EOF' || fail "gpubundle --json report: not the verdict as JSON: $(cat "$work/report.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "INCOMPLETE", j
assert j["missing"] == ["no node check of gpu-node-1, gpu-node-2"], j
assert len(j["mismatches"]) == 1 and j["mismatches"][0].startswith("h200-node.json: OS ubuntu24.04"), j
assert j["results"] == {"verify": 1, "nodes": 1, "nccl": 2}, j
EOF
if compgen -G "$work/*.tmp.*" >/dev/null; then fail "gpubundle report left a temporary file"; fi

python3 - "$work/report.html" <<'EOF' || fail "the report refers to something outside itself, or lacks what it should show"
import html.parser, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
class Scan(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.styles, self.in_style = [], [], False
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        assert tag not in ("script", "link", "img", "iframe", "object", "embed", "image", "use", "base", "frame", "audio", "video", "source"), tag
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "action", "data", "poster", "background") and not (value or "").startswith("#"):
                raise AssertionError(f"<{tag} {name}={value!r}>")
            if name == "style":
                self.styles.append(value or "")
        self.in_style = tag == "style"
    def handle_endtag(self, tag):
        self.in_style = False
    def handle_data(self, data):
        if self.in_style:
            self.styles.append(data)
scan = Scan()
scan.feed(text)
for style in scan.styles:
    assert not re.search(r"url\s*\(|@import|@font-face", style, re.I), style
assert scan.tags.count("svg") == 1 and scan.tags.count("polyline") == 2, scan.tags.count("polyline")
for want in ("<div class=\"verdict incomplete\">INCOMPLETE: 1 result names another kit (h200-node.json); no node check of gpu-node-1, gpu-node-2</div>",
             "<span class=\"badge warning\">WARNING</span></td><td>h200-node.json: OS ubuntu24.04", "site-precompiled", "v26.7.0", "h200-node", "nccl-1node", "nccl-2nodes",
             "8 B", "8 GiB", "bus bandwidth (GB/s)", "2026-12-01T12:00:00Z", "all pods in gpu-operator are ready"):
    assert want in text, want
EOF

# What Chromium draws. Its own user-data folder; --no-sandbox for root.
shot() {
  timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium" \
    --window-size=1200,1400 --screenshot="$2" "file://$1" >"$work/chromium.log" 2>&1 ||
    fail "chromium failed on $1: $(tail -n 5 "$work/chromium.log")"
  [ -s "$2" ] || fail "chromium wrote no screenshot of $1: $(tail -n 5 "$work/chromium.log")"
}
# plot_drawn PNG: both run colours across most of the plot area's width.
plot_drawn() {
  python3 "$src/tests/tools/pngscan.py" "$1" f4f6f9 1c7ed6 e8590c >"$work/scan.json"
  python3 - "$work/scan.json" <<'EOF'
import json, sys
scan = json.load(open(sys.argv[1]))
area = scan["area"]
assert area and area[2] - area[0] > 500 and area[3] - area[1] > 250, f"no plot area in the screenshot: {scan}"
for colour, seen in scan["colours"].items():
    assert seen["pixels"] > 400, f"line {colour}: {seen['pixels']} pixels in the plot area: {scan}"
    assert seen["x1"] - seen["x0"] > 0.8 * (area[2] - area[0]), f"line {colour} does not cross the plot: {scan}"
EOF
}
shot "$work/report.html" "$work/report.png"
plot_drawn "$work/report.png" || fail "the screenshot does not show the plot: $(cat "$work/scan.json")"
cp "$work/report.png" "${REPORT_SHOT_DIR:-$work}/report.png" 2>/dev/null || true
# The same check on a report whose SVG does not render must fail.
sed 's/<svg class="plot"/<svg-broken class="plot"/; s/<\/svg>/<\/svg-broken>/' "$work/report.html" >"$work/broken.html"
shot "$work/broken.html" "$work/broken.png"
if plot_drawn "$work/broken.png" 2>/dev/null; then fail "the pixel check passed on a report without its plot: $(cat "$work/scan.json")"; fi

# Bad input: exit 2, one line naming the file (and field).
bad() {
  local want="$1"; shift
  local rc=0
  "$gpubundle" report "$@" -o "$work/bad.html" >"$work/bad.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "report $*: exit $rc, expected 2: $(cat "$work/bad.out")"
  [ "$(wc -l <"$work/bad.out")" -eq 1 ] || fail "report $*: not one line: $(cat "$work/bad.out")"
  grep -qF -- "$want" "$work/bad.out" || fail "report $*: '$want' not in: $(cat "$work/bad.out")"
  [ ! -e "$work/bad.html" ] || fail "report $*: wrote a report from bad input"
}
echo '{"kind": "gpubundle.verify", "schemaVersion": 1' >"$work/truncated.json"
bad "$work/truncated.json: not valid JSON" "$work/truncated.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["schemaVersion"]=2; json.dump(d, open(sys.argv[2], "w"))' \
  "$src/examples/acceptance-results/nccl-1node.json" "$work/newer.json"
bad "$work/newer.json: field schemaVersion: 2 is newer than this gpubundle reads (1)" "$work/newer.json"
echo '{"kind": "gpubundle.mystery", "schemaVersion": 1}' >"$work/mystery.json"
bad "$work/mystery.json: field kind: 'gpubundle.mystery' is not a result" "$work/mystery.json"
bad "$work/missing.json: cannot read" "$work/missing.json"
bad "$work/manifest.json: cannot read" --kit "$work" "$src/examples/acceptance-results"
echo "report: all checks passed"
