#!/usr/bin/env bash
# Shared by the site package repository suites (package_repo.sh,
# package_repo_rpm.sh, package_repo_doca.sh). Expects W, PY, TOOLS and fail().

# apt_standin_up [ARGS...]: the stand-in apt repository of real Debian
# packages in $W/apt (apt_standin.py start ARGS); its variables sourced, K the
# kernel. Exits 77 where it cannot start offline.
apt_standin_up() {
  local rc=0
  "$PY" "$TOOLS/apt_standin.py" start --dir "$W/apt" "$@" > "$W/standin.env" || rc=$?
  [ "$rc" = 77 ] && exit 77
  [ "$rc" = 0 ] || fail "the stand-in apt repository did not start"
  # shellcheck source=/dev/null
  source "$W/standin.env"
  # shellcheck disable=SC2034 # K is the sourcing suite's
  K=$APT_KERNEL
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
