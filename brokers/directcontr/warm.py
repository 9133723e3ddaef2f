"""Warm-start windows of the Shapley papers' experiments: the system in the trace's state at t_start.

The papers ([S] section 5.1, [L] section 6.2) take "parts of the original workload" and measure
Δψ/p_tot at t_end; they do not say whether a window starts on an empty system (the cold
reading, the default everywhere) or with the jobs submitted before t_start that are still
queued or running then. These pure functions build the second, warm, instance of a window.

* The warm-up: the trace replayed up to t_start, either under global FCFS (:func:`fcfs_starts`,
  by (release, id) on the lowest free processor: it ignores organizations, so one replay of the
  whole trace serves every window, split and seed) or under the algorithm being measured
  (:func:`simulate` on the jobs released in [t_start − warmup, t_start), from an empty system:
  a bounded replay, since the algorithms' own replay of a whole trace prefix, REF's above all,
  is out of reach).
* How the warm jobs count (:func:`backlog`, :func:`warm_instance`): every job present at t_start
  enters the window as a job released at t_start with the work it has left (a running job:
  size − (t_start − s); a queued one: its size), ahead of its organization's window jobs (its id
  is smaller: ids follow submission). Why: the papers measure the window, and ψ_sp counts unit
  parts by the time they complete, so ψ_sp of the remainder counts exactly the parts processed
  in the window; and REF, the baseline, schedules every subcoalition from t_start, where a
  subcoalition has no state of its own to inherit (whose processor would a job of u running
  on v's processor hold in a coalition without v?). So every algorithm and REF schedule the same
  instance, and p_tot counts the warm jobs' parts processed in the window like any other. A
  running job is not pinned to its processor: it restarts at t_start when its organization is
  picked, which every policy does at once unless the backlog exceeds the machine.
"""

from __future__ import annotations

from typing import Sequence

from gridemu.brokers.directcontr.simulation import Result, SJob, _as_int
from gridemu.sites.fcfs_replay import fcfs_starts

WARMUPS = ("cold", "fcfs", "same")
__all__ = ["WARMUPS", "backlog", "fcfs_starts", "someone_waits", "warm_instance"]


def backlog(jobs: Sequence[SJob], start: dict[int, int], t_start: int) -> list[SJob]:
    """The jobs present at ``t_start``: released before it and queued (not in ``start``, or
    started at t_start or later) or running (s < t_start < s + p), each released at t_start
    with the work it has left, in id order."""
    t_start = _as_int(t_start, "t_start")
    out = []
    for j in sorted(jobs, key=lambda j: j.id):
        if j.release >= t_start:
            continue
        s = start.get(j.id)
        if s is None or s >= t_start:
            out.append(SJob(j.id, j.org, t_start, j.size))
        elif s + j.size > t_start:
            out.append(SJob(j.id, j.org, t_start, j.size - (t_start - s)))
    return out


def warm_instance(warm: Sequence[SJob], window: Sequence[SJob], t_start: int) -> list[SJob]:
    """The window's instance on its own clock (t_start becomes 0): the backlog first, then the
    window's jobs (released in [t_start, t_end)), their ids kept."""
    ids = {j.id for j in warm}
    clash = next((j.id for j in window if j.id in ids), None)
    if clash is not None:
        raise ValueError(f"job {clash}: both in the backlog and in the window")
    late = next((j.id for j in window if j.release < t_start), None)
    if late is not None:
        raise ValueError(f"job {late}: a window job released before t_start = {t_start}")
    return [SJob(j.id, j.org, j.release - t_start, j.size) for j in list(warm) + list(window)]


def someone_waits(result: Result, jobs: Sequence[SJob], t_end: int) -> bool:
    """Whether a job ever waits in the schedule ``result`` up to ``t_end``: it starts after its
    release, or is released before t_end and not started by then (the window's contention)."""
    for j in jobs:
        if j.release >= t_end:
            continue
        s = result.start.get(j.id)
        if s is None or s > j.release:
            return True
    return False
