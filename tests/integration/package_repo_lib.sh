#!/usr/bin/env bash
# Shared by the suites that serve real Debian packages on loopback (the site
# package repository suites, precompiled_packages.sh, driver_matrix_lib.sh,
# tool_image.sh). Expects W, PY, TOOLS and fail().

# apt_standin_up [ARGS...]: the stand-in apt repository of real Debian
# packages in $W/apt (apt_standin.py start ARGS); its variables sourced, K the
# kernel. Exits 77 where it cannot start offline.
apt_standin_up() {
  local rc=0
  "$PY" "$TOOLS/apt_standin.py" start --dir "$W/apt" "$@" > "$W/standin.env" || rc=$?
  [ "$rc" = 77 ] && { echo "SKIP: the Debian packages are not at hand offline"; exit 77; }
  [ "$rc" = 0 ] || fail "the stand-in apt repository did not start"
  # shellcheck source=/dev/null
  source "$W/standin.env"
  # shellcheck disable=SC2034 # K is the sourcing suite's
  K=$APT_KERNEL
}

# apt_standin_sources: the recipe's packages.sources naming the stand-in
# (after apt_standin_up), to append to a recipe.
apt_standin_sources() {
  cat <<YAML
packages:
  sources:
    - name: standin-debian
      type: apt
      url: $APT_URL
      suites: [$APT_SUITE]
      components: [$APT_COMPONENT]
      keyring: $APT_KEYRING
YAML
}

# repo_image_layer REF OCI_DIR: the repository image pulled from the site
# registry into OCI_DIR (skopeo); prints the path of its last layer, the
# repository's.
repo_image_layer() {
  skopeo copy -q --src-tls-verify=false "docker://$1" "oci:$2:repo" || fail "skopeo copy $1"
  "$PY" - "$2" <<'PYEOF'
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))
m = json.load(open(d + "/blobs/sha256/" + idx["manifests"][0]["digest"].split(":")[1]))
print(d + "/blobs/sha256/" + m["layers"][-1]["digest"].split(":")[1])
PYEOF
}

# apt_private ARGS...: apt-get with a private configuration below $A (sources,
# lists, status, cache): only what the test puts there is trusted.
apt_private() {
  apt-get -q -o Dir::Etc::sourcelist="$A/sources.list" -o Dir::Etc::sourceparts="$A/sources.list.d" \
    -o Dir::State="$A/state" -o Dir::State::status="$A/status" -o Dir::Cache="$A/cache" \
    -o Dir::Etc::trusted=/dev/null -o Dir::Etc::trustedparts=/dev/null \
    -o Dir::Etc::preferences=/dev/null -o Dir::Etc::preferencesparts=/dev/null \
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}
