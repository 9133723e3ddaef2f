"""What a protocol agent sees of its site: a small, documented facade.

An agent (``brokers/<protocol>/agent.py``) reads and acts on its own site only through a
:class:`SiteView`; it never touches the site's job columns (``c_*``), run columns
(``r_*``) or its scheduler's internals (``tests/test_layout.py`` fails if one does).
The actions are the site's own bound methods, so the facade costs nothing on hot paths.

Shape: ``site_id``, ``name``, ``owner`` (organization index), ``m`` (processors),
``speeds``, ``speed`` (of processor 0), ``uniform``, ``kinds`` (the run's message kinds).

Reading jobs (a *slot* is a job's place at this site: local jobs first, in release order,
then jobs received or split off): ``job(slot)`` (a :class:`~gridemu.model.jobs.Job`
record), ``size``, ``release``, ``job_id``, ``procs``, ``submit_site``, ``fragment``,
``deadline``, ``state`` (a code of ``model.jobs``), ``start_time``, ``end_time``,
``setup_time``, ``is_local``; ``local_jobs`` (the submitted local jobs, a read-only
array), ``n_local``, ``next_release()``.

The queue and the processors: ``queued()``, ``running_slots()``, ``free_processors()``,
``is_free(proc)``, ``free_count()``, ``backlog(now)``, ``load(now)``, ``queue_order()``.

A ``fairshare`` local scheduler's share policy and cached global usage data (the grid-wide
fairshare paper; what the ``fairshare`` protocol keeps up to date; any other scheduler: a
``ScenarioError`` naming ``scheduler.name``): ``policy_entries()``, ``mount_points()``,
``subpolicy(point)``, ``await_subpolicies(points)``, ``mount_subpolicy(point)``,
``usage_report(now)``, ``cache_usage(source, usage)``, ``replace_usage(source, usage)``,
``cached_usage(source)``.

Acting: ``send``, ``send_all`` (one message to many sites), ``set_timer``, ``transfer``,
``receive_job``, ``enqueue``, ``dequeue``, ``dispatch``, ``start``, ``preempt``, ``split``,
``offer``, ``withdraw``, ``keep``, ``announce``, ``plan``, ``count_migration``. Time: ``next_event_time()``,
``next_agent_event_time()``, ``next_message_time()``, ``next_arrival_or_timer()``.

Random numbers: ``rng(purpose)``, the site's own stream for a purpose the protocol names
(a string), the same generator at every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import Job
from gridemu.model.rng import named_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.schedulers import FairshareScheduler
    from gridemu.sites.site import Site


#: The site's methods a view hands out as they are (``site.send``, ``site.queued``...).
FORWARDED = frozenset(
    "send send_all set_timer transfer receive_job enqueue start preempt split offer withdraw keep announce "
    "queued running_slots backlog load next_event_time next_agent_event_time next_message_time next_release "
    "next_arrival_or_timer job_record".split()
)


class SiteView:
    """One site as its agent sees it (see the module doc for the whole surface)."""

    # Fixed fields (a view is made for every site); the site's methods get a slot each when
    # first used (__getattr__); a __dict__ for what a method keeps of its own (cache_usage).
    __slots__ = (
        "_site _seed _protocol _streams site_id name owner m speeds speed uniform kinds local_jobs n_local".split()
        + sorted(FORWARDED)
        + ["__dict__"]
    )

    def __init__(self, site: "Site", seed: int | None = None, protocol: str | None = None):
        self._site = site
        self._seed, self._protocol = seed, protocol
        self._streams: dict[str, np.random.Generator] = {}
        self.site_id: int = site.site_id
        self.name: str = site.name
        self.owner: int = site.owner
        self.m: int = site.m
        self.speeds: tuple[float, ...] = tuple(site.speeds)
        self.speed: float = site.speed
        self.uniform: bool = site.uniform
        self.kinds = site.kinds
        self.local_jobs: np.ndarray = site.local_jobs
        self.n_local: int = site.n_local

    def __getattr__(self, name: str) -> Any:
        """The site's actions and queries (``FORWARDED``) as its bound methods, each bound on
        first use and kept: a view holds only those its agent calls (22 bound methods and
        a dict for them were 3 KB a site, 3 GB at a million sites)."""
        if name in FORWARDED:
            method = getattr(self._site, name)
            setattr(self, name, method)
            return method
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def rng(self, purpose: str) -> np.random.Generator:
        """This site's random stream for ``purpose``, drawn from (run seed, site id, protocol
        name, purpose) alone (``model.rng.named_rng``): the same draws with any backend and
        shard count, and apart from every other site's, purpose's and protocol's. Each call
        gives the same generator, which goes on where the last draw left it."""
        stream = self._streams.get(purpose)
        if stream is None:
            if self._seed is None or self._protocol is None:
                raise RuntimeError(
                    f"site {self.name}: this view was made without a seed and protocol name: no rng({purpose!r})"
                )
            if not isinstance(purpose, str):
                raise TypeError(f"rng(purpose): a string naming what the draws are for, got {purpose!r}")
            stream = self._streams[purpose] = named_rng(self._seed, self.site_id, self._protocol, purpose)
        return stream

    # jobs -------------------------------------------------------------------------
    def job(self, slot: int) -> Job:
        return Job._make(self._site.job_record(slot))

    def size(self, slot: int) -> float:
        return self._site.c_size[slot]

    def release(self, slot: int) -> float:
        return self._site.c_release[slot]

    def job_id(self, slot: int) -> int:
        return self._site.c_id[slot]

    def procs(self, slot: int) -> int:
        return self._site.c_procs[slot]

    def submit_site(self, slot: int) -> int:
        return self._site.c_submit[slot]

    def fragment(self, slot: int) -> int:
        return self._site.c_fragment[slot]

    def deadline(self, slot: int) -> float:
        return self._site.c_deadline[slot]

    def state(self, slot: int) -> int:
        return self._site.r_state[slot]

    def start_time(self, slot: int) -> float:
        return self._site.r_start[slot]

    def end_time(self, slot: int) -> float:
        return self._site.r_end[slot]

    def setup_time(self, slot: int) -> float:
        """Time a running job spends before it progresses (a migration's cost), 0 if none."""
        return self._site.setup.get(slot, 0.0)

    def is_local(self, slot: int) -> bool:
        """Whether the slot holds one of the jobs submitted here (not received, not split off)."""
        return slot < self._site.n_local

    def local_releases(self) -> "Sequence[float]":
        """Release times of the local jobs, in slot order (ascending; a typed array)."""
        return self._site.c_release[: self._site.n_local]

    # queue and processors -----------------------------------------------------------
    def free_count(self) -> int:
        return self._site.free_count

    def free_processors(self) -> list[int]:
        """Free processors, fastest first (meaningful where speeds differ or a protocol names them)."""
        return list(self._site.free_procs)

    def dequeue(self, slot: int) -> None:
        """Take a queued job out of the local scheduler's queue (the agent then owns its fate)."""
        self._site.scheduler.remove(slot)

    def dispatch(self, now: float) -> None:
        """Let the local scheduler start what it can now."""
        self._site.scheduler.dispatch(self._site, now)

    def queue_order(self) -> list[int]:
        """The local queue in the scheduler's order (FCFS: arrival order)."""
        return list(self._site.scheduler.queue)

    def plan(self, job_id: int, due: float) -> None:
        """``planned`` scheduler: the job may start at ``due`` and not before."""
        self._site.scheduler.plan(job_id, due)

    # the fairshare scheduler's policy and global usage view ---------------------------------
    def _fairshare(self, what: str) -> "FairshareScheduler":
        sched = self._site.scheduler
        if sched.name != "fairshare":
            raise ScenarioError(
                "scheduler.name",
                f'site {self.name}: {what} needs the fairshare scheduler '
                f'(set scheduler.name = "fairshare"), not {sched.name!r}',
            )
        return sched

    def policy_entries(self) -> tuple[str, ...]:
        """The runtime share policy's entry paths, parents before children (messages name an entry
        by its index here)."""
        return self._fairshare("policy_entries").policy_entries()

    def mount_points(self) -> dict[str, int]:
        """Each policy entry that mounts a remote subpolicy -> the site whose policy serves it."""
        return self._fairshare("mount_points").mount_points()

    def subpolicy(self, point: str) -> dict[str, float]:
        """The subpolicy below mount point ``point`` as the run's policy has it: entry -> target share, percent."""
        return self._fairshare("subpolicy").subpolicy(point)

    def await_subpolicies(self, points: Iterable[str]) -> None:
        """These mount points' subpolicies must come by message: until :meth:`mount_subpolicy`,
        the jobs below each count at the mount point itself (its share is enforced, not yet its
        children's)."""
        self._fairshare("await_subpolicies").await_subpolicies(points)

    def mount_subpolicy(self, point: str) -> None:
        """The subpolicy below ``point`` arrived: its jobs count at their own entries from now on
        (a no-op once mounted)."""
        self._fairshare("mount_subpolicy").mount_subpolicy(point)

    def usage_report(self, now: float) -> dict[str, float]:
        """This site's usage per policy entry at ``now``, as the policy's global approach
        (historical, active, predictive) counts it: what it reports to the others."""
        return self._fairshare("usage_report").usage_report(now)

    def cache_usage(self, source: int, usage: Mapping[str, float]) -> None:
        """Update the locally cached view on global usage data: ``usage``'s figures replace the
        cached ones of the same entries under ``source``, a key the protocol chooses (a site,
        a usage service, the grid's total). The scheduler adds every source's figures to this
        site's own fresh usage at its next pass."""
        # Checked once: from then on the scheduler's own method answers (one call a message).
        self.cache_usage = self._fairshare("cache_usage").cache_usage
        self.cache_usage(source, usage)

    def replace_usage(self, source: int, usage: Mapping[str, float]) -> None:
        """Replace everything cached under ``source`` by ``usage`` (entries it lacks count 0)."""
        self._fairshare("replace_usage").replace_usage(source, usage)

    def cached_usage(self, source: int) -> dict[str, float]:
        """A copy of the usage cached under ``source`` (empty if none)."""
        return self._fairshare("cached_usage").cached_usage(source)

    def count_migration(self, slot: int) -> None:
        """Record that the job in ``slot`` moved once more (a migration the result file counts)."""
        self._site.c_migrations[slot] += 1

    def is_free(self, proc: int) -> bool:
        """Whether processor ``proc`` is free now (a membership test: no copy, unlike ``free_processors``)."""
        return proc in self._site.free_procs
