# shellcheck shell=bash
# Sourced by the bench scripts: timing and memory helpers.
# best of 3 wall-clock seconds of "$@"
best() {
  local best=999999 t0 t1 d
  for _ in 1 2 3; do
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    d=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
    best=$(awk -v a="$d" -v b="$best" 'BEGIN{print (a<b)?a:b}')
  done
  echo "$best"
}
once() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'; }
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
mbps() { awk -v b="$1" -v t="$2" 'BEGIN{printf "%.0f", b/t/1048576}'; }
ratio() { awk "BEGIN{printf \"%.2f\", $1}"; }
# goal NAME VALUE OP TARGET UNIT: one line "goal: NAME VALUE UNIT (target OP TARGET): holds|misses",
# the line bench/all.sh collects.
goal() {
  local verdict
  verdict=$(awk -v v="$2" -v t="$4" -v op="$3" 'BEGIN{ok = (op == "<=") ? v <= t : (op == "<") ? v < t : (op == ">=") ? v >= t : v > t; print ok ? "holds" : "misses"}')
  printf 'goal: %-34s %8s%s (target %s %s%s): %s\n' "$1" "$2" "$5" "$3" "$4" "$5" "$verdict"
}
