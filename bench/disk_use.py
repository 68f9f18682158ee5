#!/usr/bin/env python3
"""Disk use of a work folder, for bench/scale.sh.

  disk_use.py DIR --skip PATH [--flight PATH]            prints allocated bytes
  disk_use.py DIR --skip PATH [--flight PATH] --watch F  every 0.2 s until killed;
      whenever the total is higher than before, writes "TOTAL FLIGHT" to F

Allocated bytes (st_blocks) of everything under DIR except PATH and *.log
files, each inode counted once. du counts a file with one link again when it is
renamed during its walk (a registry committing an upload, an atomic write), which
shows up as a peak that never happened. FLIGHT: the part under registry
_uploads folders and the --flight folders.
"""

import argparse
import os
import signal
import sys
import time


def usage(root, skip, flight):
    seen, total, in_flight = set(), 0, 0
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.join(d, x) not in skip]
        moving = "/_uploads" in d or any(d == f or d.startswith(f + "/") for f in flight)
        for name in files + dirs + ([] if d != root else ["."]):
            if name.endswith(".log"):
                continue
            try:
                st = os.lstat(os.path.join(d, name))
            except OSError:  # gone since the listing
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
            if moving:
                in_flight += st.st_blocks * 512
    return total, in_flight


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--skip", action="append", default=[])
    p.add_argument("--flight", action="append", default=[])
    p.add_argument("--watch", metavar="FILE")
    a = p.parse_args()
    skip = {os.path.abspath(s) for s in a.skip}
    flight = [os.path.abspath(f) for f in a.flight]
    root = os.path.abspath(a.dir)
    if not a.watch:
        print(usage(root, skip, flight)[0])
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    peak = -1
    while True:
        total, in_flight = usage(root, skip, flight)
        if total > peak:
            peak = total
            with open(a.watch + ".new", "w") as f:
                f.write(f"{total} {in_flight}\n")
            os.replace(a.watch + ".new", a.watch)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
