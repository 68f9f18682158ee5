#!/usr/bin/env python3
"""Write a stand-in GPU Operator chart folder from the facts in releases.yaml.

  chart.py --release v26.7.0 --out DIR     -> DIR/{Chart.yaml,values.yaml,charts/node-feature-discovery/...}

The chart has the layout of the published one as far as gpubundle reads it:
every image-bearing values key with repository/image/version (and enabled,
imagePullPolicy, imagePullSecrets where the release has them), the settings the
resolver and the install kit read, Chart.yaml with the release as version and
appVersion and the node-feature-discovery dependency, and that subchart with
its image.repository and an empty tag (its appVersion applies).
`helmrepo.py pack --release V` makes and packs it in one step. Same facts,
same bytes.
Needs python3-yaml.
"""

import argparse
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FACTS = os.path.join(HERE, "releases.yaml")
COMPONENTS = os.path.join(HERE, "..", "..", "recipes", "catalog", "components.yaml")
NFD = "node-feature-discovery"
HEADER = "# A stand-in GPU Operator chart made by tests/tools/chart.py from tests/tools/releases.yaml; not NVIDIA's file.\n"


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        harness.die(f"{path}: {e}")


def image_node(fact, pull_secrets):
    """The values map of one image key, in the order a release writes it."""
    node = {}
    if "enabled" in fact:
        node["enabled"] = fact["enabled"]
    ref = fact.get("ref")
    if ref is not None:
        repo, _, last = ref.rpartition("/")
        image, _, tag = last.partition(":")
        node["repository"] = repo
        node["image"] = image
        if tag or not repo:  # no tag: the operator's appVersion applies, the key is left out
            node["version"] = tag
        node["imagePullPolicy"] = "IfNotPresent"
        if pull_secrets:
            node["imagePullSecrets"] = []
    return node


def merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v


def values_of(release, facts):
    known = set((load(COMPONENTS) or {}).get("components", {}))
    images = facts.get("images") or {}
    no_secrets = set(facts.get("noPullSecrets") or [])
    settings = facts.get("settings") or {}
    tops = {k.split(".")[0] for k in images}
    values = {k: {} for k in settings if k not in tops}
    for key, fact in images.items():
        if key not in known:
            harness.die(f"{FACTS}: {release}.images.{key}: not a component in {os.path.normpath(COMPONENTS)}")
        parts = key.split(".")
        parent = values
        for p in parts[:-1]:
            parent = parent.setdefault(p, {})
        node = parent.setdefault(parts[-1], {})
        merge(node, image_node(fact or {}, len(parts) == 1 and key not in no_secrets))
    merge(values, settings)
    return values


def dump(data):
    return HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def make(release, out):
    """Writes the chart folder for `release` into `out`."""
    all_facts = load(FACTS) or {}
    facts = all_facts.get(release)
    if not facts:
        harness.die(f"{FACTS}: no release {release} (it has {', '.join(all_facts) or 'none'})")
    nfd = facts.get("nfd") or {}
    chart = {
        "apiVersion": "v2",
        "name": "gpu-operator",
        "version": release,
        "appVersion": facts.get("appVersion", release),
        "description": "Stand-in for the NVIDIA GPU Operator chart (test fixture)",
    }
    if nfd:
        chart["dependencies"] = [{"name": NFD, "version": nfd["version"], "repository": "oci://registry.k8s.io/nfd/charts",
                                  "condition": "nfd.enabled"}]
    write(os.path.join(out, "Chart.yaml"), dump(chart))
    write(os.path.join(out, "values.yaml"), dump(values_of(release, facts)))
    if nfd:
        sub = os.path.join(out, "charts", NFD)
        write(os.path.join(sub, "Chart.yaml"), dump({"apiVersion": "v2", "name": NFD, "version": nfd["version"],
                                                     "appVersion": nfd["appVersion"], "type": "application"}))
        write(os.path.join(sub, "values.yaml"), dump({"image": {"repository": nfd["image"], "pullPolicy": "IfNotPresent", "tag": None},
                                                      "imagePullSecrets": []}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--release", required=True, help="a release in releases.yaml, e.g. v26.7.0")
    p.add_argument("--out", required=True, help="the chart folder to write")
    args = p.parse_args()
    out = os.path.abspath(args.out)
    make(args.release, out)
    print(out)


if __name__ == "__main__":
    main()
