"""Kill what a local Ray instance leaves behind when the gridemu driver that started it dies
without shutting it down (``kill -9``, the OOM killer), or when its shutdown leaves some.

Ray's own processes (GCS, raylet, workers) die with the driver (the kernel's parent-death
signal), but the agents the raylet starts (dashboard and runtime-env agents, about 200 MB)
did not, on Ray 2.60. The driver starts this file (``python reaper.py PID RAYDIR``: its own
pid and the folder of the ray package) with a pipe on its standard input, before it starts Ray
(a driver killed inside ``ray.init``, which takes seconds, leaves the same). While the pipe is
open it notes, every second, the driver's children that run Ray's programs (their command line
names RAYDIR) and all their descendants; once the pipe closes (the driver has exited, however)
it waits a moment for a normal shutdown to finish, then kills each noted process still alive
(the same pid with the same start time: never a reused pid). The driver's other children are
left alone.

Standard library only, run by path: it starts in milliseconds and imports neither gridemu nor Ray.
Linux only (it reads ``/proc``); elsewhere the driver does not start it.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

#: Seconds between two looks at the process tree, and for the kernel to end what dies with the
#: driver (a normal exit has shut Ray down before its pipe closes).
POLL, GRACE = 1.0, 0.2


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()  # the name in parentheses may hold spaces
    return int(fields[1]), int(fields[19])


def _names(pid: int, what: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return what.encode() in fh.read()
    except OSError:
        return False


def rays(driver: int, ray_dir: str) -> dict[int, int]:
    """pid -> start time of the driver's children that run Ray's programs, and all below them."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            children.setdefault(st[0], []).append(int(name))
            starts[int(name)] = st[1]
    todo = [pid for pid in children.get(driver, []) if pid != os.getpid() and _names(pid, ray_dir)]  # not itself
    found: dict[int, int] = {}
    while todo:
        pid = todo.pop()
        if pid not in found and pid in starts:
            found[pid] = starts[pid]
            todo.extend(children.get(pid, []))
    return found


def main(driver: int, ray_dir: str) -> None:
    seen: dict[int, int] = {}
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], POLL)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # the driver closed the pipe: it has exited
        seen.update(rays(driver, ray_dir))
    time.sleep(GRACE)
    for pid, start in seen.items():
        st = _stat(pid)
        if st is not None and st[1] == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone in between, or not ours to kill
                pass


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
