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
``is_free(proc)``, ``free_count()``, ``backlog(now)``, ``load(now)``; ``scheduler_state()`` gives what the
local scheduler exposes to protocols (the fairshare policy, the planned start times).

Acting: ``send``, ``send_all`` (one message to many sites), ``set_timer``, ``transfer``, ``receive_job``, ``enqueue``, ``dequeue``,
``dispatch``, ``start``, ``preempt``, ``split``, ``offer``, ``withdraw``, ``keep``,
``announce``, ``plan``, ``count_migration``. Time: ``next_event_time()``,
``next_agent_event_time()``, ``next_message_time()``.

Random numbers: ``rng(purpose)``, the site's own stream for a purpose the protocol names
(a string), the same generator at every call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from gridemu.model.jobs import Job
from gridemu.model.rng import named_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.site import Site


class SiteView:
    """One site as its agent sees it (see the module doc for the whole surface)."""

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
        # Actions and queries: the site's bound methods.
        self.send = site.send
        self.send_all = site.send_all
        self.set_timer = site.set_timer
        self.transfer = site.transfer
        self.receive_job = site.receive_job
        self.enqueue = site.enqueue
        self.start = site.start
        self.preempt = site.preempt
        self.split = site.split
        self.offer = site.offer
        self.withdraw = site.withdraw
        self.keep = site.keep
        self.announce = site.announce
        self.queued = site.queued
        self.running_slots = site.running_slots
        self.backlog = site.backlog
        self.load = site.load
        self.next_event_time = site.next_event_time
        self.next_agent_event_time = site.next_agent_event_time
        self.next_message_time = site.next_message_time
        self.next_release = site.next_release
        self.job_record = site.job_record

    def rng(self, purpose: str) -> np.random.Generator:
        """This site's random stream for ``purpose``, drawn from (run seed, site id, protocol
        name, purpose) alone (``model.rng.named_rng``): the same draws with any backend and
        shard count, and apart from every other site's, purpose's and protocol's. Each call
        gives the same generator, which goes on where the last draw left it."""
        stream = self._streams.get(purpose)
        if stream is None:
            if self._seed is None or self._protocol is None:
                raise RuntimeError(f"site {self.name}: this view was made without a seed and protocol name: no rng({purpose!r})")
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

    def scheduler_state(self) -> Any:
        """The local scheduler, for protocols that serve it (fairshare reads its policy)."""
        return self._site.scheduler

    def count_migration(self, slot: int) -> None:
        """Record that the job in ``slot`` moved once more (a migration the result file counts)."""
        self._site.c_migrations[slot] += 1

    def is_free(self, proc: int) -> bool:
        """Whether processor ``proc`` is free now (a membership test: no copy, unlike ``free_processors``)."""
        return proc in self._site.free_procs
