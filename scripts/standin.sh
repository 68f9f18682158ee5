# Sourced by scripts/demo.sh and tests/integration/e2e.sh: a stand-in
# "upstream" on loopback, shaped like a real GPU Operator release, and a site.
#   standin_chart DIR TAG          writes DIR/helm/gpu-operator-TAG.tgz, a chart
#       shaped like release TAG, generated from tests/tools/releases.yaml
#       (tests/tools/chart.py): nothing outside the repository is read.
#   standin_start DIR TAG RECIPE   starts registries playing nvcr.io and
#       registry.k8s.io, seeds them with synthetic images named exactly as the
#       recipe's lock, serves a Helm repo with that chart, starts an empty
#       site registry, and writes
#       DIR/recipe.yaml (the recipe, chart pointed at the Helm repo) and
#       DIR/registries.yaml (nvcr.io and registry.k8s.io mapped to the stand-ins).
#       Sets NVCR, K8S, SITE (host:port) and HELM (URL).
#   standin_stop DIR               stops everything started under DIR.
# Needs GB (the gpubundle binary) and TOOLS (tests/tools).
PY=/usr/bin/python3

standin_json() { "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

standin_chart() {
  local dir=$1 tag=$2
  "$PY" "$TOOLS/helmrepo.py" pack --release "$tag" --out "$dir/helm"
}

standin_start() {
  local dir=$1 tag=$2 recipe=$3
  standin_chart "$dir" "$tag" >/dev/null
  NVCR=$("$PY" "$TOOLS/registry.py" start --dir "$dir/reg" --name nvcr | standin_json host)
  K8S=$("$PY" "$TOOLS/registry.py" start --dir "$dir/reg" --name k8s | standin_json host)
  SITE=$("$PY" "$TOOLS/registry.py" start --dir "$dir/reg" --name site | standin_json host)
  HELM=$("$PY" "$TOOLS/helmrepo.py" serve --dir "$dir/helm" | standin_json url)
  # The recipe as written, but fetching its chart from the stand-in Helm repo.
  "$PY" - "$recipe" "$dir/recipe.yaml" "$HELM" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
# Only the GPU Operator's chart line goes (a network section keeps its own).
lines, top = [], None
for line in text.splitlines(keepends=True):
    if re.match(r"[A-Za-z]", line): top = line.split(":")[0]
    if not (top == "operator" and re.match(r"\s+chart:", line)): lines.append(line)
text = "".join(lines)
text = re.sub(r"(?m)^(operator:\n(\s+)version:.*\n)", lambda m: m.group(1) + m.group(2) + "chart: " + sys.argv[3] + "\n", text)
open(sys.argv[2], "w").write(text)
PYEOF
  printf 'hosts:\n  nvcr.io:\n    mirrors: ["http://%s"]\n    fallback: false\n  registry.k8s.io:\n    mirrors: ["http://%s"]\n    fallback: false\n' \
    "$NVCR" "$K8S" > "$dir/registries.yaml"
  # Seed exactly the images this recipe resolves to, each on its registry.
  "$GB" -q resolve "$dir/recipe.yaml" --chart "$dir/helm/gpu-operator-$tag.tgz" -o "$dir/seed.lock.json"
  "$PY" "$TOOLS/seed.py" --registry "$NVCR" --plain-http --lock "$dir/seed.lock.json" --source-host nvcr.io > "$dir/seed-nvcr.json"
  "$PY" "$TOOLS/seed.py" --registry "$K8S" --plain-http --lock "$dir/seed.lock.json" --source-host registry.k8s.io > "$dir/seed-k8s.json"
}

standin_stop() {
  "$PY" "$TOOLS/helmrepo.py" stop --dir "$1/helm" >/dev/null 2>&1 || true
  "$PY" "$TOOLS/registry.py" stop --dir "$1/reg" >/dev/null 2>&1 || true
}
