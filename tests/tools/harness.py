"""Shared plumbing for the test servers in tests/tools (stdlib only).

Every server a tool starts is detached into its own session and recorded in
DIR/.pids/<kind>-<name>.pid as "PID STARTTIME" (STARTTIME = field 22 of
/proc/PID/stat), so that `stop` never signals a recycled pid.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

PID_DIR = ".pids"


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    """A port that was free on 127.0.0.1 a moment ago (callers retry on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_time(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rindex(b")") + 2:].split()
    if fields[0] == b"Z":
        return None  # a zombie is as good as gone
    return fields[19].decode()


def alive(pid, start_time=None):
    now = _start_time(pid)
    return now is not None and (start_time is None or now == start_time)


def spawn(directory, kind, name, argv, log_path, cwd=None):
    """Start argv detached (own session, stdin closed, output to log_path)
    and record it under directory. Returns the Popen."""
    pid_dir = os.path.join(directory, PID_DIR)
    os.makedirs(pid_dir, exist_ok=True)
    log = open(log_path, "ab")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True, cwd=cwd, close_fds=True)
    log.close()
    st = _start_time(proc.pid) or "0"
    with open(os.path.join(pid_dir, f"{kind}-{name}.pid"), "w") as f:
        f.write(f"{proc.pid} {st}\n")
    return proc


def recorded(directory, kinds=None, name=None):
    """[(path, kind, name, pid, start_time)] for pid files under directory."""
    pid_dir = os.path.join(directory, PID_DIR)
    out = []
    try:
        entries = sorted(os.listdir(pid_dir))
    except FileNotFoundError:
        return out
    for entry in entries:
        if not entry.endswith(".pid"):
            continue
        kind = entry[:-4].partition("-")[0]
        if (kinds is not None and kind not in kinds) or (name is not None and name != _name(entry)):
            continue
        path = os.path.join(pid_dir, entry)
        try:
            pid_s, st = open(path).read().split()
            out.append((path, kind, _name(entry), int(pid_s), st))
        except (OSError, ValueError):
            out.append((path, kind, _name(entry), None, None))
    return out


def _name(entry):
    return entry[:-4].partition("-")[2]


def running(directory, kind, name):
    for _, k, n, pid, st in recorded(directory, {kind}):
        if n == name and pid and alive(pid, st):
            return pid
    return None


def stop(directory, kinds=None, name=None, timeout=10.0):
    """Stop recorded processes (SIGTERM to their process group, SIGKILL after
    timeout), wait until they are gone, remove their pid files. Idempotent."""
    procs = recorded(directory, kinds, name)
    live = []
    for path, _, _, pid, st in procs:
        if pid and alive(pid, st):
            try:
                os.killpg(pid, signal.SIGTERM)  # spawn() made pid a group leader
            except ProcessLookupError:
                pass
            except PermissionError:
                os.kill(pid, signal.SIGTERM)
            live.append((pid, st))
    deadline = time.monotonic() + timeout
    while live and time.monotonic() < deadline:
        live = [(p, s) for p, s in live if alive(p, s)]
        if live:
            time.sleep(0.05)
    for pid, st in live:
        if alive(pid, st):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    while any(alive(p, s) for p, s in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    for path, *_ in procs:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return len(procs)


def wait_http(url, proc, timeout=15.0, ok=(200, 401), ssl_context=None):
    """Poll url until it answers with a status in ok. Returns False when proc
    exited first or the timeout passed."""
    import urllib.error
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2, context=ssl_context) as r:
                if r.status in ok:
                    return True
        except urllib.error.HTTPError as e:
            if e.code in ok:
                return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    return False


def log_tail(path, n=15):
    try:
        with open(path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
    except OSError:
        return "(no log)"


def print_json(obj, path=None):
    line = json.dumps(obj, sort_keys=True)
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.replace(tmp, path)
    print(line, flush=True)
