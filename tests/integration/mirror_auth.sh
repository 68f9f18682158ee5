#!/bin/bash
# gpubundle mirror against a real docker-registry with TLS and htpasswd: the
# right credentials mirror; a wrong password, no credentials, and an unknown
# CA each fail with one clear line naming the host, exit 1, the store left as
# it was, and the password never printed or written anywhere.
# Usage: mirror_auth.sh PATH/TO/gpubundle
GB=$(realpath "$1")
source "$(dirname "$0")/mirror_lib.sh"
PASSWORD=s3cret-$RANDOM-pw

"$PY" "$TOOLS/registry.py" start --dir "$W/reg" --name auth --htpasswd "robot:$PASSWORD" > "$W/auth.json"
HOST=$(jget "$W/auth.json" 'd["host"]')
CA=$(jget "$W/auth.json" 'd["ca"]')
"$PY" "$TOOLS/seed.py" --registry "$HOST" --ca "$CA" --user robot --password "$PASSWORD" --set small > "$W/seed.json"
make_lock "$W/site.lock.json" "$W/seed.json" linux/amd64
printf '%s\n' "$PASSWORD" > "$W/robot.pw"
printf 'wrong-%s\n' "$PASSWORD" > "$W/wrong.pw"
config() {  # config FILE [passwordFile] [caFile]
  { printf 'hosts:\n  "%s":\n' "$HOST"
    [[ -n ${3:-} ]] && printf '    caFile: %s\n' "$3"
    [[ -n ${2:-} ]] && printf '    username: robot\n    passwordFile: %s\n' "$2"
    true; } > "$1"
}
config "$W/good.yaml" "$W/robot.pw" "$CA"
config "$W/wrong.yaml" "$W/wrong.pw" "$CA"
config "$W/anon.yaml" "" "$CA"
config "$W/noca.yaml" "$W/robot.pw" ""
STORE=$W/store
snapshot() { (cd "$STORE" && find . -type f ! -name 'catalog.db*' ! -name .lock -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }

expect_fail() {  # expect_fail NAME CONFIG PATTERN
  local rc=0
  "$GB" --store "$STORE" mirror "$W/site.lock.json" --registry-config "$2" -o "$W/out.lock.json" > "$W/out" 2> "$W/err" || rc=$?
  [[ $rc == 1 ]] || { cat "$W/err"; fail "$1: exit $rc, want 1"; }
  grep -q -- "$3" "$W/err" || { cat "$W/err"; fail "$1: error lacks '$3'"; }
  grep -q "$HOST" "$W/err" || { cat "$W/err"; fail "$1: error does not name $HOST"; }
  [[ ! -e $W/out.lock.json ]] || fail "$1: a lock was written"
  [[ $(snapshot) == "$before" ]] || fail "$1: the store changed"
  pass "$1: exit 1, $(grep -m1 -- "$3" "$W/err" | cut -c1-200)"
}

log_from=$(stat -c %s "$W/reg/auth/registry.log")
"$GB" --store "$STORE" -q mirror "$W/site.lock.json" --registry-config "$W/good.yaml" -o "$W/good.lock.json" -j 4 ||
  fail "mirror with the right credentials"
[[ $(jget "$W/good.lock.json" 'sum(1 for i in d["images"] if i["digest"])') == 6 ]] || fail "not every image mirrored"
pass "right credentials over TLS with the site CA: 6 images"
# TLS connections are kept open and reused: at most one per transfer at once (-j 4).
served() { "$PY" "$TOOLS/registry_log.py" run good "$W/reg/auth/registry.log" "$log_from"; }
until [[ $(served) == "${seen:-}" ]]; do seen=$(served); sleep 0.2; done
echo "$seen" > "$W/served.json"
requests=$(jget "$W/served.json" 'd["requests"]')
conns=$(jget "$W/served.json" 'd["connections"]')
(( requests >= 12 && conns <= 4 )) || { cat "$W/served.json"; fail "$conns TLS connections for $requests requests (want at most 4)"; }
# The first request goes alone and meets the challenge; the others wait and come with credentials.
challenges=$(jget "$W/served.json" 'd["kinds"].get("401", 0)')
[[ $challenges == 1 ]] || { cat "$W/served.json"; fail "$challenges requests met the 401 challenge (want 1)"; }
pass "$requests requests over $conns TLS connections, one 401 challenge"

# The failures below run against this filled store: it must stay as it is.
before=$(snapshot)
expect_fail "wrong password" "$W/wrong.yaml" "401\|unauthorized\|credentials"
expect_fail "no credentials" "$W/anon.yaml" "401\|unauthorized\|credentials"
expect_fail "unknown CA (TLS verification is on by default)" "$W/noca.yaml" "certificate"

grep -rqs -- "$PASSWORD" "$W/out" "$W/err" "$STORE" "$W/good.lock.json" && fail "the password was printed or stored"
pass "the password appears in no output, lock or store"
echo "PASS mirror-auth"
