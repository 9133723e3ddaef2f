"""Online greedy migration (GM, Algorithm 1 of the migration-fairness paper) across sites: the ``gm`` protocol.

Every site runs the same steps and reads no other site's state:

  * A job submitted here is announced to every site (``released``: its record, of which
    the others read its id, release and priority v0; never its size, which GM does not
    use). A job that finishes here is announced too (``completion``).
  * On every arrival or completion it learns of, a site updates the global assignment
    (:class:`brokers.gm.algorithm.GmRanking`: always :func:`~brokers.gm.algorithm.gm_assign`
    over every processor of the grid, fastest first, ties by site and processor, kept up to
    date by bisection instead of a sort per event): the k-th ranked unfinished job gets the
    k-th machine. Sites that have heard of the same events compute the same assignment.
  * It then acts on its own processors only: a running job whose machine changed is
    preempted (the site view's ``preempt``: the work not done becomes a new piece); then each job
    held here starts on its assigned processor here, or is
    sent (``job`` message) to the site of its assigned processor, or waits when unassigned.
    A job held elsewhere but assigned here is started when it arrives.
  * A job that resumes on a machine other than the one it last ran on pays
    ``migration_cost`` (plus ``remote_cost`` when it comes from another site) before it
    progresses; a job that never ran moves for free (placing a new job is not a migration);
    a job stopped during its setup that resumes on the same processor owes the setup left
    (the reference's rules, :func:`brokers.gm.algorithm.simulate`).

With latency, sites see events up to one latency late, so a decision lags the reference by
that much (and a job may briefly travel on a stale assignment; the next event corrects it).
With negligible latency and zero cost the run equals the centralized reference
(:func:`brokers.gm.algorithm.simulate`), which ``tests/test_gm_agent.py`` asserts.

``migrations`` in the result files counts moves between sites (each transfer of the job,
also before its first start) plus moves between processors of one site after it started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.gm.algorithm import GmJob, GmRanking
from gridemu.model.messages import message

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.gm.protocol import GmParams

#: A job released at the sender (its whole record: the others read job_id, release and
#: priority). Not "arrival": ``on_arrival`` is the hook of a local arrival.
RELEASED = message("released", job=True)
#: A job completed at the sender (its record) at ``time``.
COMPLETION = message("completion", job=True, time=float)
MESSAGES = (RELEASED, COMPLETION)


class GmAgent(Agent):
    """One site's part of decentralized GM (module doc).

    For subclasses (``brokers/gm/sampled.py``), the protected interface: override
    :meth:`processors` (which machines GM ranks); read ``ranking`` (the ranked jobs, a
    :class:`~brokers.gm.algorithm.GmRanking`), ``assignment`` (job id -> machine index),
    ``held`` (job id -> its queued slot here) and ``speeds``; change them through
    :meth:`hold`, :meth:`forget`, :meth:`completed`, :meth:`let_go` and :meth:`decide`.
    The rest (what runs where, setups owed) is this class's own.
    """

    name = "gm"
    intercepts_arrivals = True

    def __init__(self, site, grid: GridInfo, params: GmParams):
        super().__init__(site, grid, params)
        self.machines, self.speeds, self.first = self.processors()
        self.cost = params.migration_cost
        self.remote = params.remote_cost
        # Released, unfinished jobs this site has heard of, ranked; their assignment is kept
        # up to date event by event (the same as gm_assign over them, without a sort each time).
        self.ranking = GmRanking(self.speeds)
        self.assignment = self.ranking.assignment
        self.held: dict[int, int] = {}  # job id -> queued piece held here
        self.running: dict[int, tuple[int, int]] = {}  # job id -> (slot, processor here)
        self.ran_here: dict[int, int] = {}  # job id -> the processor here it last ran on
        self.setup_left: dict[int, float] = {}  # job id -> setup still owed on that processor
        self.decide_at: float | None = None

    def processors(self) -> tuple[list[tuple[int, int]], list[float], int]:
        """The machines GM ranks, as (site, processor), their speeds, and the index of this
        site's processor 0 among them: every processor of the grid."""
        speeds = self.grid.info["site_speeds"]
        machines = [(k, p) for k, sp in enumerate(speeds) for p in range(len(sp))]
        return machines, [float(v) for sp in speeds for v in sp], sum(len(sp) for sp in speeds[: self.site.site_id])

    # events ------------------------------------------------------------------------
    def on_arrival(self, now: float, slot: int) -> bool:
        rec = self.site.job(slot)
        self.hold(GmJob(int(rec.job_id), float(rec.release), float(rec.size), float(rec.priority)), slot)
        self.broadcast(now, "released", rec)
        self.decide(now)
        return False  # queued here (the planned scheduler never starts it by itself)

    def on_complete(self, now: float, slot: int) -> None:
        site = self.site
        self.completed(int(site.job_id(slot)))
        self.broadcast(now, "completion", site.job_record(slot), time=now)
        self.decide(now)

    def on_released(self, now: float, msg) -> None:
        job_id = int(msg.job_id)
        self.ranking.add(GmJob(job_id, msg.release, 1.0, msg.priority))  # GM never reads the size
        self.decide(now)

    def on_completion(self, now: float, msg) -> None:
        self.forget(int(msg.job_id))
        self.decide(now)

    def on_job(self, now: float, msg) -> None:
        """A job sent here because its assigned processor is here: hold it for the decision."""
        self.held[int(msg.job_id)] = self.site.receive_job(now, msg)
        self.decide(now)

    # the protected interface (class doc) ---------------------------------------------------
    def hold(self, job: GmJob, slot: int) -> None:
        """Rank ``job`` and hold it here, queued in ``slot``, until a decision places it."""
        self.ranking.add(job)
        self.held[job.id] = slot

    def forget(self, job_id: int) -> None:
        """Take the job out of the ranking (if it is in)."""
        if job_id in self.ranking:
            self.ranking.remove(job_id)

    def completed(self, job_id: int) -> None:
        """The job finished here: out of the ranking and off its processor."""
        self.forget(job_id)
        self.running.pop(job_id, None)

    def let_go(self, job_id: int) -> int:
        """The held job leaves this site: no longer held, nor remembered as having run here
        (still ranked); returns its slot, for the transfer."""
        self.ran_here.pop(job_id, None)
        self.setup_left.pop(job_id, None)
        return self.held.pop(job_id)

    def decide(self, now: float) -> None:
        """Act on the assignment once this instant's events are in."""
        # Once per instant, after every event of the instant (timers come after completions
        # and messages at equal times).
        if self.decide_at != now:
            self.decide_at = now
            self.site.set_timer(now, "decide")

    def on_timer(self, now: float, tag: Any) -> None:
        self.decide_at = None
        self._stop_moved(now)
        self._start_or_send(now)

    # acting on this site's processors ---------------------------------------------------
    def _stop_moved(self, now: float) -> None:
        site = self.site
        for job_id, (slot, proc) in list(self.running.items()):
            if self.assignment.get(job_id) == self.first + proc:
                continue
            # Setup not yet paid is owed again if the job resumes on this processor.
            left = site.start_time(slot) + site.setup_time(slot) - now
            rest = site.preempt(slot, now)
            del self.running[job_id]
            if rest >= 0:
                self.held[job_id] = rest
                self.setup_left[job_id] = max(0.0, left)

    def _start_or_send(self, now: float) -> None:
        site, me = self.site, self.site.site_id
        for job_id, slot in sorted(self.held.items()):
            g = self.assignment.get(job_id)
            if g is None:
                continue  # waits here, unassigned
            k, proc = self.machines[g]
            if k != me:
                site.transfer(now, self.let_go(job_id), k)
                continue
            if not site.is_free(proc):
                continue  # its processor is still busy in this site's view; a later event frees it
            del self.held[job_id]
            site.dequeue(slot)
            setup = 0.0
            if site.fragment(slot) != 0:  # a rest piece: the job ran before
                last = self.ran_here.get(job_id)
                if last is None:  # it ran at another site
                    setup = self.cost + self.remote
                elif last != proc:
                    setup = self.cost
                    site.count_migration(slot)
                else:
                    setup = self.setup_left.get(job_id, 0.0)
            site.start(slot, now, procs=[proc], setup=setup)
            self.running[job_id] = (slot, proc)
            self.ran_here[job_id] = proc
