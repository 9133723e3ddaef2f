"""The vectorized FCFS recurrence of a silent site (one that no agent hook can act on).

Strict FCFS on m identical processors: job i starts at
max(r_i, start_{i-1}, the q_i-th earliest processor free time). It gives the job table the
event loop gives (tests/test_kernel.py checks it) at a fraction of the cost. It keeps
processor free times, not processors: its jobs' placement is not recorded (``proc`` -1 in
jobs.parquet); by construction it is the event loop's, each job on the lowest-numbered
processors free at its start, which ``gridemu report --gantt`` rebuilds.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

from gridemu.model.jobs import STATE_CODE
from gridemu.sites.schedulers import FCFS

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.site import Site

INF = math.inf
RUNNING = STATE_CODE["running"]


def enable(site: "Site") -> None:
    """Run ``site`` by the recurrence from now on: an FCFS site of identical processors with
    no pending event, whose agent can never act."""
    if not (type(site.scheduler) is FCFS and site.uniform and not site.heap and not site.pending_messages()):
        raise ValueError("the FCFS recurrence needs an FCFS site with identical processors and no pending events")
    site.fast = True
    site._fp_free = [-INF] * site.m


def advance(site: "Site", until: float) -> float:
    """Extend the site's FCFS schedule over its local jobs released before ``until``; return
    the site's next event time."""
    rel, size, procs = site.c_release, site.c_size, site.c_procs
    start, end, state = site.r_start, site.r_end, site.r_state
    free, prev, speed = site._fp_free, site._fp_prev, site.speed
    i, n = site.cursor, site.n_local
    while i < n:
        r = rel[i]
        if r >= until:
            break
        q = procs[i]
        s = free[q - 1]
        if s < r:
            s = r
        if s < prev:
            s = prev
        e = s + size[i] / speed
        if q == 1:
            del free[0]
            bisect.insort(free, e)
        else:
            del free[:q]
            pos = bisect.bisect_right(free, e)
            free[pos:pos] = [e] * q
        start[i] = s
        end[i] = e
        state[i] = RUNNING
        prev = s
        i += 1
    site.events += i - site.cursor
    site.tally.events += i - site.cursor
    site.tally.done += i - site.cursor  # scheduled to the end: done for the shard's count (finish() counts them)
    site.cursor = i
    site._fp_prev = prev
    return site.next_event_time()
