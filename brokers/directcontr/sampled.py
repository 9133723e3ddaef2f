"""Decentralized DIRECTCONTR: ``directcontr`` with ``mode = "sampled"``.

Replicated DIRECTCONTR (``brokers/directcontr/agent.py``) takes the centralized step for
every instant at every site, from all-to-all broadcasts: 2(N − 1) messages a job, and a
real clock stretched by 4L per time unit so that every site has heard everything. Here each
organization's site decides for its own processors from its own state and what d sites
(``choices``) tell it, on the real clock:

  * **The key.** DIRECTCONTR gives a free processor to the organization with the largest
    φ − ψ among those with a waiting job ([S] Algorithm 1 line 19). A site keeps its own
    2(φ − ψ) exactly as a polynomial in t (:class:`SpKey`): φ counts the unit parts run on
    its processors, ψ those of its jobs ([S] 80-82). Its own jobs on its own processors add
    to both and are left out. A job it sent away counts from the instant it left (the
    owner does not know the link's latency) until the runner's ``finished`` report gives the
    real start and end: the key is then exact again.
  * **Pull.** When a processor here is free (a completion, a local release), the site asks
    d sites (``probe``), drawn from its own stream among the others (or its neighbors in a
    network topology). Each answers (``report``) with its key, the key's slope and curvature
    at the sending instant (so the asker extrapolates it to the decision instant exactly,
    while nothing changed there) and how many of its jobs wait. Once all answers are in,
    the free processors go to the largest keys among the reports and this site's own, ties
    to the lowest site id: its own jobs start at once; the others are asked for jobs
    (``ask``, the number of processors held for them).
  * **Push.** A job released when more jobs wait here than processors are free announces
    the wait to d sites (``need``, the same fields as a report, unasked). A site with processors that
    nothing is waiting for asks for jobs at once; one that is probing counts it as an answer.
  * **Grants.** An asked site sends its first waiting jobs, in submission order (``job``
    transfers, one per processor asked), and refuses the rest (``refuse``); the asker's held
    processors are then free again and it probes anew. The runner starts a received job
    at once and, when it completes, reports its start and end to the owner (``finished``).
  * ``choices = 0``: every organization runs its own jobs only (no message; the baseline of
    no cooperation).

Messages: 2d per probing round (about one per start), d per job that waits at its release,
and for a job run elsewhere an ask, its transfer and ``finished``: independent of N. There
is no clock stretch: a job starts as soon as a processor is found for it, one round trip
after the processor freed (2L). The price is that each decision sees d + 1 organizations'
keys instead of all of them; ``docs/results/decentralization.md`` measures Δψ/p_tot against
the centralized DIRECTCONTR as N grows.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.model.messages import message
from gridemu.model.rng import PURPOSE_DC_SAMPLE, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.directcontr.protocol import DirectContrParams

#: A site with a free processor asks for the receiver's key and waiting jobs.
PROBE = message("probe")
#: The answer: 2(φ − ψ) at the sending instant, its slope and curvature there, and the jobs waiting.
REPORT = message("report", key=float, slope=float, curve=float, waiting=int)
#: The same fields, unasked: jobs wait here and every processor here is busy.
NEED = message("need", key=float, slope=float, curve=float, waiting=int)
#: ``count`` processors are held for the receiver's waiting jobs.
ASK = message("ask", count=int)
#: ``count`` of the processors asked for get no job (the receiver's queue was shorter).
REFUSE = message("refuse", count=int)
#: A job of the receiver's ran here from ``start`` to ``end``.
FINISHED = message("finished", start=float, end=float, job_id=int)
MESSAGES = (PROBE, REPORT, NEED, ASK, REFUSE, FINISHED)


class SpKey:
    """2(φ − ψ) of one organization as c2·t² + c1·t + c0 ([S] 80-82, ψ_sp of unit parts).

    A job running since s adds ±(t − s)(t − s + 1); once it ran p units, ±(2p·t + p(1 − 2s − p))
    for good (the same value at t = s + p). + for φ (run on our processors), − for ψ (ours)."""

    __slots__ = ("c2", "c1", "c0")

    def __init__(self) -> None:
        self.c2 = self.c1 = self.c0 = 0.0

    def run(self, s: float, sign: int) -> None:
        self.c2 += sign
        self.c1 += sign * (1 - 2 * s)
        self.c0 += sign * (s * s - s)

    def finish(self, s: float, e: float, sign: int) -> None:
        self.run(s, -sign)
        p = e - s
        self.c1 += sign * 2 * p
        self.c0 += sign * p * (1 - 2 * s - p)

    def at(self, t: float) -> float:
        return (self.c2 * t + self.c1) * t + self.c0

    def slope(self, t: float) -> float:
        return 2 * self.c2 * t + self.c1


class DirectContrSampledAgent(Agent):
    """One organization's site (module doc)."""

    name = "directcontr_sampled"
    intercepts_arrivals = True

    def __init__(self, site, grid: GridInfo, params: DirectContrParams):
        super().__init__(site, grid, params)
        me = site.site_id
        self.choices = params.choices if grid.n_sites > 1 else 0
        self.rng = site_rng(grid.seed, me, PURPOSE_DC_SAMPLE)
        self.key = SpKey()
        self.waiting: deque[int] = deque()  # own jobs not started nor sent, in submission order
        self.held = 0  # processors held for jobs asked from other sites
        self.due = 0  # answers still due in the probing round (0: no round)
        self.heard: dict[int, tuple] = {}  # site -> its report or need, this round
        self.sent: dict[int, float] = {}  # own job id running elsewhere -> the instant it left
        self.ran: dict[int, float] = {}  # slot of another's job running here -> its start

    def free(self) -> int:
        return self.site.free_count() - self.held

    def _state(self, now: float) -> dict[str, float]:
        return {
            "key": self.key.at(now),
            "slope": self.key.slope(now),
            "curve": self.key.c2,
            "waiting": float(len(self.waiting)),
        }

    # local events ---------------------------------------------------------------------
    def on_arrival(self, now: float, slot: int) -> bool:
        self.waiting.append(slot)
        if self.free() > 0:
            self._probe(now)
        if len(self.waiting) > self.free() and self.choices:  # more waiting than processors here
            state = self._state(now)
            for k in self.random_neighbors(self.rng, self.choices):
                self.site.send(now, k, "need", **state)
        return False  # queued here; the planned scheduler never starts it by itself

    def on_complete(self, now: float, slot: int) -> None:
        site = self.site
        if not site.is_local(slot):
            start = self.ran.pop(slot)
            self.key.finish(start, now, +1)
            site.send(now, site.submit_site(slot), "finished", start=start, end=now, job_id=int(site.job_id(slot)))
        self._probe(now)

    def _probe(self, now: float) -> None:
        """Start a probing round for the free processors (none while one is under way)."""
        if self.due:
            return
        if not self.choices:  # decide at once, but after the kernel queued the job that arrives
            self.due = 1
            self.site.set_timer(now, "decide")
            return
        self.heard = {}
        targets = self.random_neighbors(self.rng, self.choices)
        self.due = len(targets)
        for k in targets:
            self.site.send(now, k, "probe")

    def _decide(self, now: float) -> None:
        """The free processors to the largest keys among what was heard and this site's own."""
        free = self.free()
        me = self.site.site_id
        ranked = [(-self.key.at(now), me, len(self.waiting))] if self.waiting else []
        for u, msg in self.heard.items():
            if msg.waiting > 0:
                d = now - msg.sent
                ranked.append((-(msg.key + msg.slope * d + msg.curve * d * d), u, int(msg.waiting)))
        self.heard = {}
        for _, u, waiting in sorted(ranked):
            if free <= 0:
                break
            n = min(free, waiting)
            free -= n
            if u == me:
                for _ in range(n):
                    slot = self.waiting.popleft()
                    self.site.dequeue(slot)
                    self.site.start(slot, now)
            else:
                self.held += n
                self.site.send(now, u, "ask", count=float(n))

    def on_timer(self, now: float, tag: Any) -> None:
        self.due = 0
        self._decide(now)

    # messages -------------------------------------------------------------------------
    def on_probe(self, now: float, msg) -> None:
        self.site.send(now, msg.src, "report", **self._state(now))

    def on_report(self, now: float, msg) -> None:
        self.heard[int(msg.src)] = msg
        self.due -= 1
        if not self.due:
            self._decide(now)

    def on_need(self, now: float, msg) -> None:
        if self.due:
            self.heard.setdefault(int(msg.src), msg)  # counted with the round's answers
        elif self.free() > 0:
            self.heard = {int(msg.src): msg}
            self._decide(now)

    def on_ask(self, now: float, msg) -> None:
        asked = int(msg.count)
        give = min(asked, len(self.waiting))
        for _ in range(give):
            slot = self.waiting.popleft()
            self.sent[int(self.site.job_id(slot))] = now
            self.key.run(now, -1)
            self.site.transfer(now, slot, int(msg.src))
        if give < asked:
            self.site.send(now, msg.src, "refuse", count=float(asked - give))

    def on_refuse(self, now: float, msg) -> None:
        self.held -= int(msg.count)
        self._probe(now)

    def on_job(self, now: float, msg) -> None:
        """A job we asked for: run it at once on a held processor."""
        site = self.site
        slot = site.receive_job(now, msg)
        self.held -= 1
        site.dequeue(slot)
        site.start(slot, now)
        self.ran[slot] = now
        self.key.run(now, +1)

    def on_finished(self, now: float, msg) -> None:
        """One of our jobs finished elsewhere: its real start replaces the instant it left."""
        left = self.sent.pop(int(msg.job_id))
        self.key.run(left, +1)
        self.key.run(msg.start, -1)
        self.key.finish(msg.start, msg.end, -1)
