#!/usr/bin/env bash
# Runs node-images/nvidia-driver (the entrypoint of our driver images) against
# stub modprobe/rmmod/mount/umount/findmnt/ldconfig/chroot/nvidia-smi/
# nvidia-persistenced in a temporary root (GB_TEST_ROOT), and checks the
# calls, their order and the files it writes: init, TERM, the digest fast
# path, a failing modprobe, reload_nvidia_peermem and probe_nvidia_peermem.
# Usage: driver_entrypoint.sh PATH/TO/nvidia-driver
set -euo pipefail
script=$(readlink -f "${1:?usage: driver_entrypoint.sh nvidia-driver}")
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -f "$work/sleep.pids" ]; then xargs kill < "$work/sleep.pids" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

shellcheck "$script" || fail "shellcheck"
ok "shellcheck clean"

VER=580.95.05
stubs=$work/stubs
mkdir -p "$stubs"
calls=$work/calls
# Each stub appends its argv to $calls; modprobe/rmmod keep /sys/module and /proc/modules in step.
for c in modprobe rmmod mount umount findmnt ldconfig chroot nvidia-smi nvidia-persistenced nv-fabricmanager; do
  cat > "$stubs/$c" <<STUB
#!/bin/sh
if [ \$# -eq 0 ]; then echo "$c" >> "$calls"; else echo "$c \$*" >> "$calls"; fi
R=\$GB_TEST_ROOT
case "$c" in
  modprobe)
    [ "\$1" = "-a" ] && exit 0
    if [ -n "\${FAIL_MODPROBE:-}" ] && [ "\$1" = "\$FAIL_MODPROBE" ]; then exit 1; fi
    m=\$(echo "\$1" | tr - _)
    mkdir -p "\$R/sys/module/\$m"; echo 0 > "\$R/sys/module/\$m/refcnt"
    echo "\$m 1000 0 - Live 0x0" >> "\$R/proc/modules" ;;
  rmmod)
    m=\$(echo "\$1" | tr - _)
    rm -rf "\$R/sys/module/\$m"
    grep -v "^\$m " "\$R/proc/modules" > "\$R/proc/modules.new" || true
    mv "\$R/proc/modules.new" "\$R/proc/modules" ;;
  mount)
    [ "\$1" = "--rbind" ] && echo "\$3" >> "\$R/.mounts" ;;
  umount)
    : > "\$R/.mounts" ;;
  findmnt)
    cat "\$R/.mounts" 2>/dev/null ;;
esac
exit 0
STUB
  chmod 755 "$stubs/$c"
done

# sleep: records the pid of every `sleep infinity` so the test can tell that none outlives its script.
realsleep=$(command -v sleep)
cat > "$stubs/sleep" <<STUB
#!/bin/sh
[ "\$1" = infinity ] && echo \$\$ >> "$work/sleep.pids"
exec $realsleep "\$@"
STUB
chmod 755 "$stubs/sleep"
no_leaked_sleep() {
  sleep 0.2
  while read -r p; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p"
      fail "$1 left its 'sleep infinity' ($p) running"
    fi
  done < "$work/sleep.pids"
}

new_root() {
  root=$work/root-$1
  rm -rf "$root"
  mkdir -p "$root/drivers" "$root/opt/lib/firmware/nvidia/$VER" "$root/sys/module/firmware_class/parameters" \
    "$root/sys/bus/pci/devices/0000:01:00.0" "$root/proc" "$root/run/nvidia/validations"
  printf 'NVreg_EnableStreamMemOPs=1\nNVreg_RegistryDwords=Foo=1\n' > "$root/drivers/nvidia.conf"
  printf 'peer_mem_mode=1\n' > "$root/drivers/nvidia-peermem.conf"
  echo "gsp" > "$root/opt/lib/firmware/nvidia/$VER/gsp_ga10x.bin"
  : > "$root/sys/module/firmware_class/parameters/path"
  echo 0x15b3 > "$root/sys/bus/pci/devices/0000:01:00.0/vendor"
  : > "$root/proc/modules"
  : > "$calls"
}

run_driver() {  # run_driver ROOT ARGS... (in the background; sets $driver_pid)
  local r=$1
  shift
  env PATH="$stubs:$PATH" GB_TEST_ROOT="$r" DRIVER_VERSION=$VER KERNEL_VERSION=6.1.0-57-amd64 \
    DRIVER_CONFIG_DIGEST=${DIGEST:-abc123} GPU_DIRECT_RDMA_ENABLED=${RDMA:-true} "$script" "$@" 2> "$work/stderr" &
  driver_pid=$!
  pids+=("$driver_pid")
}

wait_for() {  # wait_for FILE CONTENT
  for _ in $(seq 1 100); do
    [ "$(cat "$1" 2>/dev/null)" = "$2" ] && return 0
    kill -0 "$driver_pid" 2>/dev/null || { cat "$work/stderr" >&2; fail "nvidia-driver exited early waiting for $1=$2"; }
    sleep 0.1
  done
  cat "$work/stderr" >&2
  fail "timed out waiting for $1 = $2"
}

# --- init: full path ---------------------------------------------------------
new_root init
R=$root
run_driver "$R" init
wait_for "$R/run/nvidia/validations/.driver-daemons-status" Ready
expected="modprobe -a i2c_core ipmi_msghandler ipmi_devintf
modprobe nvidia
modprobe nvidia-uvm
modprobe nvidia-modeset
modprobe nvidia-peermem
nvidia-persistenced --persistence-mode
ldconfig
mount --make-runbindable $R/sys
mount --make-private $R/sys
mount --rbind $R/ $R/run/nvidia/driver"
diff <(printf '%s\n' "$expected") <(grep -v '^findmnt' "$calls") || fail "init calls differ (above)"
ok "init: modprobe order, peermem with RDMA + Mellanox, persistenced, ldconfig, rbind"
[ "$(cat "$R/run/nvidia/nvidia-driver.pid")" = "$driver_pid" ] || fail "pid file does not hold the pid"
[ "$(cat "$R/run/nvidia/nvidia-driver.state")" = abc123 ] || fail "state file lacks the digest"
[ "$(cat "$R/etc/modprobe.d/nvidia.conf")" = "options nvidia NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords=Foo=1" ] ||
  fail "modprobe.d/nvidia.conf: $(cat "$R/etc/modprobe.d/nvidia.conf")"
[ "$(cat "$R/etc/modprobe.d/nvidia-peermem.conf")" = "options nvidia_peermem peer_mem_mode=1" ] || fail "peermem options"
[ -f "$R/lib/firmware/nvidia/$VER/gsp_ga10x.bin" ] || fail "firmware not copied to /lib/firmware/nvidia/$VER"
[ "$(cat "$R/sys/module/firmware_class/parameters/path")" = /run/nvidia/driver/lib/firmware ] || fail "firmware_class path"
[ -f "$R/run/nvidia/validations/.driver-ctr-ready" ] && fail "wrote .driver-ctr-ready (the probe's job)"
ok "init: pid, state digest, modprobe.d options, firmware copy and firmware_class path"

: > "$calls"
kill -TERM "$driver_pid"
rc=0
wait "$driver_pid" || rc=$?
[ "$rc" = 0 ] || { cat "$work/stderr" >&2; fail "TERM: exit $rc"; }
expected="rmmod nvidia-modeset
rmmod nvidia-uvm
rmmod nvidia-peermem
rmmod nvidia
umount -l -R $R/run/nvidia/driver"
diff <(printf '%s\n' "$expected") <(grep -v '^findmnt' "$calls") || fail "TERM calls differ (above)"
[ ! -e "$R/run/nvidia/nvidia-driver.pid" ] || fail "pid file left after TERM"
[ ! -e "$R/run/nvidia/validations/.driver-daemons-status" ] || fail "daemons status left after TERM"
no_leaked_sleep "init after TERM"
ok "TERM: modules unloaded in order, rootfs unmounted, pid file removed, exit 0"

# --- fast path: modules loaded with the same digest ---------------------------
new_root fast
R=$root
mkdir -p "$R/sys/module/nvidia" && echo 0 > "$R/sys/module/nvidia/refcnt"
echo abc123 > "$R/run/nvidia/nvidia-driver.state"
RDMA=false run_driver "$R" init
wait_for "$R/run/nvidia/validations/.driver-daemons-status" Ready
grep -q '^modprobe' "$calls" && fail "fast path reloaded modules"
grep -q '^rmmod' "$calls" && fail "fast path unloaded modules"
grep -q "^mount --rbind $R/ $R/run/nvidia/driver" "$calls" || fail "fast path did not mount the rootfs"
kill -TERM "$driver_pid"; wait "$driver_pid" || true
ok "fast path: same DRIVER_CONFIG_DIGEST keeps the loaded modules"

# --- no RDMA: no peermem ------------------------------------------------------
new_root nordma
R=$root
RDMA=false run_driver "$R" init
wait_for "$R/run/nvidia/validations/.driver-daemons-status" Ready
grep -q 'modprobe nvidia-peermem' "$calls" && fail "peermem loaded without RDMA"
kill -TERM "$driver_pid"; wait "$driver_pid" || true
ok "no RDMA: nvidia-peermem not loaded"

# --- a failing modprobe fails init and never reports Ready --------------------
new_root fail
R=$root
FAIL_MODPROBE=nvidia-uvm run_driver "$R" init
rc=0
wait "$driver_pid" || rc=$?
[ "$rc" != 0 ] || fail "init succeeded although modprobe nvidia-uvm failed"
grep -q 'modprobe nvidia-uvm failed' "$work/stderr" || fail "no error naming nvidia-uvm: $(cat "$work/stderr")"
[ "$(cat "$R/run/nvidia/validations/.driver-daemons-status" 2>/dev/null)" != Ready ] || fail "Ready after a failure"
grep -q 'nvidia-persistenced' "$calls" && fail "daemons started after a failure"
ok "failing modprobe: init exits $rc with the module named, never Ready"

# --- probe_nvidia_peermem -----------------------------------------------------
new_root probe
R=$root
echo "mlx5_core 1 0 - Live 0x0" > "$R/proc/modules"
if env PATH="$stubs:$PATH" GB_TEST_ROOT="$R" DRIVER_VERSION=$VER "$script" probe_nvidia_peermem 2>/dev/null; then
  fail "probe passed with mlx5_core loaded and nvidia_peermem missing"
fi
echo "nvidia_peermem 1 0 - Live 0x0" >> "$R/proc/modules"
env PATH="$stubs:$PATH" GB_TEST_ROOT="$R" DRIVER_VERSION=$VER "$script" probe_nvidia_peermem || fail "probe failed with both loaded"
ok "probe_nvidia_peermem: fails only when mlx5_core is loaded without nvidia_peermem"

# --- reload_nvidia_peermem ----------------------------------------------------
new_root reload
R=$root
mkdir -p "$R/run/mellanox/drivers" && : > "$R/run/mellanox/drivers/.driver-ready"
: > "$R/run/nvidia/validations/.driver-ctr-ready"
run_driver "$R" reload_nvidia_peermem
for _ in $(seq 1 50); do grep -q chroot "$calls" && break; sleep 0.1; done
[ "$(cat "$calls")" = "chroot $R/run/nvidia/driver modprobe nvidia-peermem peer_mem_mode=1" ] || fail "reload calls: $(cat "$calls")"
: > "$work/sleep.pids"
for _ in $(seq 1 50); do [ -s "$work/sleep.pids" ] && break; sleep 0.1; done
kill -TERM "$driver_pid"; wait "$driver_pid" || true
no_leaked_sleep "reload_nvidia_peermem after TERM"
ok "reload_nvidia_peermem: waits for MOFED and the driver, loads peermem in the driver root with its params"
echo "PASS driver-entrypoint"
