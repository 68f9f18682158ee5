#!/usr/bin/env bash
# The kit's monitoring files, checked by Prometheus's own promtool:
#   - monitoring/gpu-alerts.rules.yaml and the rules inside alerts.yaml (the
#     PrometheusRule) pass `promtool check rules` and are the same rules;
#   - `promtool test rules` fires each alert when it should and not before
#     (fixtures/monitoring/alerts_test.yaml), and fails on a rule file whose
#     threshold was changed, so the test can fail;
#   - every query of the Grafana dashboard parses as PromQL (as recording
#     rules) and its per-node panels evaluate to the expected values;
#   - the dashboard is importable as-is (uid, title, one data source variable
#     that every panel uses, unique ids, panels inside the 24-column grid) and
#     its ConfigMap carries the sidecar label and the same JSON.
# Usage: monitoring.sh GPUBUNDLE SOURCE_DIR
set -euo pipefail

gpubundle="$1"
src="$2"
if ! command -v promtool >/dev/null; then
  [ -n "${CI:-}" ] && { echo "FAIL: promtool is not installed (scripts/install-deps.sh installs prometheus)" >&2; exit 1; }
  echo "SKIP: promtool is not installed (scripts/install-deps.sh installs prometheus)"; exit 77
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "$src/tests/tools/helmrepo.py" pack --release v26.7.0 --out "$work" >/dev/null
"$gpubundle" -q resolve "$src/examples/conventional.yaml" --chart "$work/gpu-operator-v26.7.0.tgz" -o "$work/lock.json"
kit="$work/kit"
"$gpubundle" -q overrides "$work/lock.json" --registry registry.site:5000/gpu --chart "$work/gpu-operator-v26.7.0.tgz" -o "$kit"
rules="$kit/monitoring/gpu-alerts.rules.yaml"

promtool check rules "$rules" >/dev/null || fail "promtool check rules refused $rules"
python3 - "$kit/alerts.yaml" "$rules" "$work/from-cr.rules.yaml" <<'PY'
import sys, yaml
cr = yaml.safe_load(open(sys.argv[1]))
plain = yaml.safe_load(open(sys.argv[2]))
assert cr["kind"] == "PrometheusRule", cr["kind"]
assert cr["spec"]["groups"] == plain["groups"], "alerts.yaml and gpu-alerts.rules.yaml hold different rules"
assert len(plain["groups"][0]["rules"]) == 4, plain
yaml.safe_dump({"groups": cr["spec"]["groups"]}, open(sys.argv[3], "w"))
PY
promtool check rules "$work/from-cr.rules.yaml" >/dev/null || fail "the rules inside alerts.yaml do not pass promtool check rules"

tests="$work/rules-test"
mkdir "$tests"
cp "$rules" "$tests/gpu-alerts.rules.yaml"
cp "$src/tests/integration/fixtures/monitoring/alerts_test.yaml" "$tests/"
promtool test rules "$tests/alerts_test.yaml" || fail "promtool test rules failed on the kit's alerts"
# A threshold moved from 85 to 95 C must be caught.
sed -i 's/DCGM_FI_DEV_GPU_TEMP > 85/DCGM_FI_DEV_GPU_TEMP > 95/' "$tests/gpu-alerts.rules.yaml"
grep -q "DCGM_FI_DEV_GPU_TEMP > 95" "$tests/gpu-alerts.rules.yaml" || fail "test setup: the temperature rule was not found"
if promtool test rules "$tests/alerts_test.yaml" >/dev/null 2>&1; then fail "promtool test rules passed a changed threshold"; fi

dash="$work/dash"
mkdir "$dash"
python3 - "$kit/monitoring/grafana-dashboard.json" "$kit/monitoring/grafana-dashboard-configmap.yaml" "$dash" <<'PY'
import json, sys, yaml
board_text = open(sys.argv[1]).read()
board = json.loads(board_text)
out = sys.argv[3]
assert board["uid"] and board["title"], "dashboard without uid or title"
assert "__inputs" not in board and "id" not in board, "import needs no inputs and no instance id"
variables = {v["name"]: v for v in board["templating"]["list"]}
assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
for name in ("node", "gpu"):
    assert variables[name]["datasource"]["uid"] == "${datasource}", name
ids, cells, exprs, per_node = set(), set(), [], {}
for p in board["panels"]:
    assert p["id"] not in ids, "duplicate panel id %s" % p["id"]
    ids.add(p["id"])
    g = p["gridPos"]
    assert g["x"] >= 0 and g["x"] + g["w"] <= 24, "panel %s outside the grid" % p["title"]
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            assert (x, y) not in cells, "panel %s overlaps another" % p["title"]
            cells.add((x, y))
    if p["type"] == "row":
        continue
    assert p["datasource"]["uid"] == "${datasource}", p["title"]
    for t in p["targets"]:
        assert t["datasource"]["uid"] == "${datasource}", p["title"]
        e = t["expr"].replace("$node", ".*").replace("$gpu", ".*")
        assert "$" not in e, "unknown variable in " + t["expr"]
        exprs.append(e)
        if "per node" in p["title"]:
            per_node[p["title"]] = e
for metric in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
    assert any(metric in e for e in exprs), metric + " has no panel"
cm = yaml.safe_load(open(sys.argv[2]))
assert cm["kind"] == "ConfigMap" and cm["metadata"]["labels"]["grafana_dashboard"] == "1", cm["metadata"]
assert list(cm["data"].values()) == [board_text], "the ConfigMap's dashboard differs from grafana-dashboard.json"
rules = [{"record": "gpubundle:panel_%d" % i, "expr": e} for i, e in enumerate(exprs)]
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(out + "/panels.rules.yaml", "w"))
# Per-node panels on two nodes with two GPUs each.
expected = {"XID errors": {"a": 79, "b": 0}, "Temperature": {"a": 90, "b": 70},
            "Utilisation": {"a": 75, "b": 0}, "Framebuffer memory used": {"a": 0.5, "b": 0.75}}
tests = []
for title, e in per_node.items():
    signal = title.split(" per node")[0]
    want = expected.pop(signal)
    tests.append({"expr": e, "eval_time": "1m", "exp_samples": [
        {"labels": '{Hostname="node-%s"}' % n, "value": v} for n, v in sorted(want.items())]})
assert not expected, "no per-node panel for " + ", ".join(expected)
series = []
def add(metric, node, values):
    for gpu, v in enumerate(values):
        series.append({"series": '%s{Hostname="node-%s", gpu="%d"}' % (metric, node, gpu), "values": "%sx2" % v})
add("DCGM_FI_DEV_XID_ERRORS", "a", [0, 79]); add("DCGM_FI_DEV_XID_ERRORS", "b", [0, 0])
add("DCGM_FI_DEV_GPU_TEMP", "a", [90, 60]); add("DCGM_FI_DEV_GPU_TEMP", "b", [70, 65])
add("DCGM_FI_DEV_GPU_UTIL", "a", [100, 50]); add("DCGM_FI_DEV_GPU_UTIL", "b", [0, 0])
add("DCGM_FI_DEV_FB_USED", "a", [40, 10]); add("DCGM_FI_DEV_FB_FREE", "a", [40, 90])
add("DCGM_FI_DEV_FB_USED", "b", [75, 0]); add("DCGM_FI_DEV_FB_FREE", "b", [25, 100])
yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]},
               open(out + "/panels_test.yaml", "w"), sort_keys=False)
PY
promtool check rules "$dash/panels.rules.yaml" >/dev/null || fail "a dashboard query is not valid PromQL"
promtool test rules "$dash/panels_test.yaml" || fail "a per-node dashboard panel gives the wrong values"
echo "monitoring: ok"
