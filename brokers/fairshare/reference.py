"""Grid-wide fairshare on the whole grid at once: one state, one event heap.

A centralized simulator of the grid the ``fairshare`` protocol emulates, written from the
paper (Elmroth and Gardfjäll, ``/work/shared/papers/grid-wide-fairshare.txt``) and not
through the agent, the fairshare scheduler or ``sites/fairshare.py``; it is the oracle
``tests/test_fairshare_reference.py`` compares the emulated protocol with.

* Policy (section 3): a tree of entries, each a share in percent of its parent; an entry's
  usage data source, local or global (``scope``, inherited from the parent where absent, the
  root's local by default), is the one its children's actual shares are measured with:
  "a runtime policy entry ... collects information about its usage relative to the parent,
  using the usage data source of the parent" (section 3.2). A job's group path is walked
  from the root, name by name, "until it reaches a leaf node or until it cannot be mapped
  to a child entry" (section 3.2).
* Priority (section 4): the target deviation of each entry on the job's path, target share
  minus actual share in percent, actual share = the entry's usage over the sum of its
  siblings' (0 when that sum is 0), padded with zeros to the tree's depth d;
  priority = Σ_{i=1..d} (deviation[i] + 100) · 200^(d−i). "Whenever a new job can be
  started, the scheduler selects the job with highest fairshare priority" (section 5.1);
  among equal priorities the job waiting longest (earliest release, then lowest job id).
* Usage (section 5.1), one infinite window ("only a single usage history window"),
  processor-seconds: historical = completed jobs; active = plus the elapsed time of running
  jobs; predictive = plus the requested wallclock time of each running job (its size where
  it has none: a request of exactly its runtime on these speed-1 processors).
* What a site knows (section 5.1): "Resource schedulers always have an up-to-date view on
  local usage data, whereas they maintain a locally cached view on global usage data that
  is refreshed once per minute." Local data: the site's own usage, now (``local_approach``,
  "for enforcing local policies, resources always consider local, active usage"). Global
  data: its own usage now plus every other site's usage as it was at the last refresh
  instant k·``refresh`` (k = 0, 1, ...), counted from ``delay`` after that instant (the
  time the refreshed figures take to arrive; 0: at once). ``refresh`` None: no global view
  beyond the site's own usage (local-only fairshare). The paper does not say whether a
  site's own share of the global figures is cached too; "an up-to-date view on local usage
  data" is read as: its own usage is always fresh, in the global figures as well.
* Sites: ``procs`` identical speed-1 processors each; single-processor jobs (the paper's
  "stream of single-CPU jobs"), run where they are submitted, ending at start + size.
  At one instant, events come in gridemu's declared order (docs/kernel.md,
  "Determinism"): completions (every processor freed at that instant before a choice),
  arrived figures, refresh instants, then arrivals in release and job-id order, each
  arrival followed by a choice. Events at or after ``horizon`` are not handled.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any, Mapping, Sequence

import numpy as np

COMPLETE, VIEW, REFRESH, ARRIVAL = 0, 1, 2, 3  # gridemu's kind ranks at one instant
APPROACHES = ("historical", "active", "predictive")


def read_policy(tree: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, list[str]], dict[str, str], int]:
    """(share of each entry path, children of each path ('' the root), scope of each path's
    usage source, depth) of a policy given as nested tables (name, share, scope, children)."""
    shares: dict[str, float] = {}
    children: dict[str, list[str]] = {}
    scope: dict[str, str] = {}

    def visit(node: Mapping[str, Any], path: str, inherited: str) -> int:
        scope[path] = node.get("scope", inherited)
        children[path] = []
        deepest = 0
        for child in node.get("children", ()):
            sub = child["name"] if not path else f"{path}/{child['name']}"
            children[path].append(sub)
            shares[sub] = float(child["share"])
            deepest = max(deepest, 1 + visit(child, sub, scope[path]))
        return deepest

    d = visit(tree, "", "local")
    return shares, children, scope, d


def entry_path(children: Mapping[str, list[str]], group: str) -> list[str]:
    """Section 3.2: the entries a job of ``group`` passes, root to leaf."""
    out, here = [], ""
    for name in group.split("/"):
        step = name if not here else f"{here}/{name}"
        if step not in children.get(here, ()):
            break
        out.append(step)
        here = step
    return out


def priority(path: Sequence[str], policy: tuple, local: Mapping[str, float], grid: Mapping[str, float]) -> float:
    """Section 4: Σ_{i=1..d} (deviation[i] + 100) · 200^(d−i), deviations (section 3.2) from
    the parent's usage source (``local`` or ``grid`` totals per entry path)."""
    shares, children, scope, d = policy
    deviation = [0.0] * d
    for i, entry in enumerate(path):
        parent = entry.rpartition("/")[0]
        usage = local if scope[parent] == "local" else grid
        total = sum(usage.get(c, 0.0) for c in children[parent])
        deviation[i] = shares[entry] - (100.0 * usage.get(entry, 0.0) / total if total > 0 else 0.0)
    return sum((deviation[i] + 100.0) * 200.0 ** (d - 1 - i) for i in range(d))


def _totals(leaf_usage: Mapping[str, float]) -> dict[str, float]:
    """Each entry's usage: its own jobs' and every descendant's."""
    out: dict[str, float] = {}
    for path, u in leaf_usage.items():
        parts = path.split("/")
        for k in range(1, len(parts) + 1):
            prefix = "/".join(parts[:k])
            out[prefix] = out.get(prefix, 0.0) + u
    return out


class _Site:
    """One site's processors, waiting jobs, running jobs and completed usage per entry."""

    def __init__(self, procs: int) -> None:
        self.free = procs
        self.waiting: dict[tuple[str, ...], deque[int]] = {}  # entry path -> its jobs, longest waiting first
        self.running: dict[int, tuple[float, float, str]] = {}  # job -> (start, requested walltime, entry)
        self.done: dict[str, float] = {}  # entry -> processor-seconds of completed jobs

    def usage(self, now: float, approach: str) -> dict[str, float]:
        out = dict(self.done)
        if approach != "historical":
            for start, wall, entry in self.running.values():
                out[entry] = out.get(entry, 0.0) + (now - start if approach == "active" else wall)
        return out


class _Grid:
    """The whole grid: every site, the figures each last refreshed, one event heap."""

    def __init__(self, policy: tuple, jobs: np.ndarray, path_of: list[tuple[str, ...]], n_sites: int, procs: int):
        self.policy, self.jobs, self.path_of = policy, jobs, path_of
        self.sites = [_Site(procs) for _ in range(n_sites)]
        self.seen: list[dict[str, float]] = [{} for _ in range(n_sites)]  # each site's figures as last refreshed
        self.figures: dict[float, list[dict[str, float]]] = {}  # refresh instant -> the figures on their way
        self.row = {int(j): i for i, j in enumerate(jobs["job_id"])}
        n = int(jobs["job_id"].max()) + 1
        self.start, self.end = np.full(n, math.nan), np.full(n, math.nan)
        self.heap: list[tuple] = [(float(r["release"]), ARRIVAL, float(r["release"]), int(r["job_id"])) for r in jobs]
        heapq.heapify(self.heap)

    def views(self, k: int, now: float, approach: str, local_approach: str) -> tuple[dict, dict]:
        """Site k's usage per entry, local (its own, now) and grid-wide (its own now, the
        others' as last refreshed), each entry counting its descendants."""
        site = self.sites[k]
        grid = site.usage(now, approach)
        for other, figures in enumerate(self.seen):
            if other != k:
                for e, u in figures.items():
                    grid[e] = grid.get(e, 0.0) + u
        return _totals(site.usage(now, local_approach)), _totals(grid)

    def choose(self, k: int, now: float, approach: str, local_approach: str) -> None:
        """Start the highest-priority waiting jobs of site k while a processor is free."""
        site, jobs, row = self.sites[k], self.jobs, self.row
        while site.free and any(site.waiting.values()):
            local, grid = self.views(k, now, approach, local_approach)
            # Jobs of one entry share their priority: the longest waiting of each competes.
            heads = {path: queue[0] for path, queue in site.waiting.items() if queue}
            best_path = max(
                heads,
                key=lambda p: (priority(p, self.policy, local, grid), -jobs["release"][row[heads[p]]], -heads[p]),
            )
            best = site.waiting[best_path].popleft()
            r = jobs[row[best]]
            wall = float(r["walltime"]) if r["walltime"] == r["walltime"] else float(r["size"])
            site.running[best] = (now, wall, best_path[-1])
            site.free -= 1
            self.start[best], self.end[best] = now, now + float(r["size"])
            heapq.heappush(self.heap, (self.end[best], COMPLETE, float(k), best))

    def complete(self, j: int, k: int, now: float) -> bool:
        """Job j ends at site k; whether a choice follows (not while another of site k's
        jobs ends at this instant: every processor freed now is free for the choice)."""
        site = self.sites[k]
        began, _, entry = site.running.pop(j)
        site.done[entry] = site.done.get(entry, 0.0) + (now - began)
        site.free += 1
        heap = self.heap
        return not (heap and heap[0][0] == now and heap[0][1] == COMPLETE and heap[0][2] == k)


def reference_run(
    tree: Mapping[str, Any],
    jobs: np.ndarray,
    groups: Sequence[str],
    n_sites: int,
    procs: int,
    approach: str = "predictive",
    local_approach: str = "active",
    refresh: float | None = 60.0,
    delay: float = 0.0,
    horizon: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every job (indexed by ``job_id``; NaN: not started, or not ended,
    before ``horizon``), as the module docstring defines the run."""
    if approach not in APPROACHES or local_approach not in APPROACHES:
        raise ValueError(f"approaches: expected {APPROACHES}, got {approach!r}, {local_approach!r}")
    if np.any(jobs["procs"] != 1):
        raise ValueError("the reference runs single-processor jobs")
    policy = read_policy(tree)
    path_of = [tuple(entry_path(policy[1], g)) for g in groups]
    for g in sorted({int(x) for x in jobs["group"]}):
        if not path_of[g]:
            raise ValueError(f"group {groups[g]!r}: maps to no policy entry")
    state = _Grid(policy, jobs, path_of, n_sites, procs)
    heap = state.heap
    if refresh is not None and n_sites > 1:
        heapq.heappush(heap, (0.0, REFRESH, 0.0, -1))
    left = len(jobs)
    while heap and left:
        now, kind, key, j = heapq.heappop(heap)
        if now >= horizon:
            break
        if kind == REFRESH:  # every site's figures at this instant, seen by the others after delay
            state.figures[now] = [site.usage(now, approach) for site in state.sites]
            heapq.heappush(heap, (now + delay, VIEW, now, -1))
            heapq.heappush(heap, (now + refresh, REFRESH, now + refresh, -1))
        elif kind == VIEW:
            state.seen = state.figures.pop(key)
        elif kind == ARRIVAL:  # arrivals come in (release, job id) order
            r = jobs[state.row[j]]
            k = int(r["submit_site"])
            state.sites[k].waiting.setdefault(path_of[r["group"]], deque()).append(j)
            state.choose(k, now, approach, local_approach)
        else:
            k = int(key)
            left -= 1
            if state.complete(j, k, now):
                state.choose(k, now, approach, local_approach)
    start, end = state.start, state.end
    end[~(end < horizon)] = math.nan
    return start, end
