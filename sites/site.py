"""A site: one organization's cluster, its queue, its running jobs and its own events.

Within a window a site is a logical process that touches nothing but itself: it runs
its own events in order (time, kind rank, key) until the window's end and collects the
messages its agent sends. Jobs live in per-site columns (plain lists, indexed by
*slot*): local jobs first, in release order, then jobs received from other sites.

Heterogeneous processors: a job takes the ``q`` fastest free processors and runs at the
speed of the slowest of them (a rigid job advances in lockstep).
"""

from __future__ import annotations

import bisect
import heapq
import math
from array import array
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from gridemu.model.errors import InvariantError
from gridemu.model.jobs import GONE, OFFERED, STATE_CODE
from gridemu.model.messages import JOB, N_ROUTING, NO_FIELDS, NO_JOB, MessageKinds
from gridemu.sites import faults, fcfs_recurrence
from gridemu.sites.job_columns import COLUMN_NAMES, JOB_FIELDS, own_columns
from gridemu.sites.schedulers import FCFS, make_scheduler

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.sites.spec import SiteSpec

INF = math.inf
# Event kinds in the order they are handled at equal times (DESIGN: kind rank):
# completions free processors before anything at the same instant looks at them; a crash
# or a repair (sites/faults.py) comes next.
COMPLETE, FAULT, MESSAGE, TIMER, ARRIVAL = 0, 1, 2, 3, 4

PENDING, QUEUED, RUNNING, DONE, TRANSFERRED = (
    STATE_CODE["pending"],
    STATE_CODE["queued"],
    STATE_CODE["running"],
    STATE_CODE["done"],
    STATE_CODE["transferred"],
)

SIZE, FRAGMENT = (JOB_FIELDS.index(f) for f in ("size", "fragment"))
# Called once an event: one global read each, not a module or type attribute too.
_APPEND, _VIEW_OF, _HEAPPOP = array.append, tuple.__new__, heapq.heappop
# The payload slots of a job message after its tag (model/messages.py: JOB's only field, the
# first float slot): what ``transfer`` puts between them and the job record.
_AFTER_TAG = NO_FIELDS[1:]
assert JOB.payload((), {"tag": 0.5}) == (0.5,) + _AFTER_TAG + NO_JOB


class Tally:
    """A shard's running counts, which every site of the shard adds to as it goes: events
    handled, and jobs finished (finished pieces less the pieces split off jobs: the job count
    once all are done). The shard reads them once a window, instead of each site's counts
    before and after its visit (a tenth of a visit's opcodes)."""

    __slots__ = ("events", "done")

    def __init__(self) -> None:
        self.events = 0
        self.done = 0


def too_wide(site: str, m: int, job: int, procs: int, protocol: str, now: float) -> InvariantError:
    """A job sent to a site with fewer processors than it needs: it could never start there,
    and an FCFS queue would wait behind it for ever (the run's figures would then be the few
    jobs that finished): a protocol's fault, stopped where it shows."""
    return InvariantError(
        f"site {site} ({m} processors) at t={now}: received job {job}, which needs {procs}: the {protocol} "
        "protocol sent a job to a site where it can never start"
    )


class Site:
    """State and event loop of one site. Agents act on it through the public methods."""

    # Fixed fields, no instance dict: a site with more than 30 attributes gets no shared-key
    # dict in CPython (1.7 KB a site, 1.7 GB at a million sites), and a slot is read faster.
    __slots__ = (
        *COLUMN_NAMES,
        *(
            "site_id name owner speeds m uniform speed free_count free_procs alloc setup latency _columns "
            "n_local local_jobs cursor r_start r_end r_state r_proc proc_sets scheduler _on_finish fcfs heap "
            "inbox inbox_at timer_times seq msg_seq outbox bound events tally kinds job_code sent received "
            "cpu_seconds pieces agent links fast _fp_free _fp_prev faults down up_at held _hot"
        ).split(),
    )

    def __init__(
        self,
        spec: "SiteSpec",
        jobs: np.ndarray,
        latency: "float | np.ndarray",
        owner: int,
        kinds: MessageKinds | None = None,
        columns: list[array] | None = None,
        tally: Tally | None = None,
    ):
        self.site_id = spec.site_id
        self.name = spec.name
        self.owner = owner
        self.speeds = list(spec.speeds)
        self.m = len(self.speeds)
        self.uniform = len(set(self.speeds)) == 1
        self.speed = self.speeds[0]
        self.free_count = self.m
        # Free processors, fastest first; only consulted when speeds differ.
        self.free_procs = sorted(range(self.m), key=lambda p: (-self.speeds[p], p))
        # Processors of running jobs where they matter (mixed speeds, or named by a protocol).
        self.alloc: dict[int, list[int]] = {}
        self.setup: dict[int, float] = {}  # running slot -> time it spends before progressing
        # One latency for all links, or this site's row of the latency matrix.
        self.latency = latency if isinstance(latency, float) else [float(x) for x in latency]

        if columns is None:  # else the shard cut them for all its sites (split_columns), jobs in order
            jobs, columns = own_columns(jobs)
        # Job columns, one typed array per field (8 bytes a value, or 4 or 1, not a Python
        # object each): c_id, c_owner, c_group, c_release, ...
        for name, col in zip(COLUMN_NAMES, columns):
            setattr(self, name, col)
        # The same columns in JOB_DTYPE's field order (a received record is appended field by field).
        self._columns = columns
        self.n_local = len(jobs)
        # The submitted jobs as given (agents read them; their columns may change: sizes cut).
        self.local_jobs = jobs
        self.cursor = 0
        n = self.n_local
        self.r_start = array("d", [math.nan]) * n
        self.r_end = array("d", [math.nan]) * n
        self.r_state = array("b", [PENDING]) * n
        # Where each piece ran: its first processor (-1: never started), and the processors
        # of a piece on more than one (jobs.parquet's proc and proc_set).
        self.r_proc = array("i", [-1]) * n
        self.proc_sets: dict[int, list[int]] = {}

        self.scheduler = make_scheduler(spec.scheduler, self)
        self._on_finish = getattr(self.scheduler, "finished", None)  # schedulers that account usage
        # Plain FCFS (not a subclass: they dispatch otherwise): a job queued on its empty queue
        # starts at once if it fits, and a completion with nothing queued starts nothing, which
        # the hot paths decide without calling push and dispatch.
        self.fcfs = type(self.scheduler) is FCFS
        self.heap: list[tuple] = []  # completions, faults and timers
        # Received messages not handled yet, sorted (delivery time, source, sequence number)
        # from ``inbox_at`` on. Apart from the heap: a window's messages come in one batch,
        # so one sort replaces a push and a pop each (advance merges the two).
        self.inbox: list[tuple] = []
        self.inbox_at = 0
        # Times of pending timers: with the inbox's head, what an agent that only reacts to
        # those needs for its send bound.
        self.timer_times: list[float] = []
        self.seq = 0
        self.msg_seq = 0
        self.outbox: list[tuple] = []
        self.bound = -INF
        self.events = 0  # this site's (sites.parquet); its shard's are in the tally
        self.tally = tally if tally is not None else Tally()
        self.kinds = kinds if kinds is not None else MessageKinds()
        self.job_code = self.kinds.code["job"]
        self.sent = [0] * len(self.kinds)
        self.received = 0
        self.cpu_seconds = 0.0  # time spent handling this site's events (its decisions' cost)
        self.pieces = 0  # pieces split off jobs here; names their fragment ids
        self.agent: Any = None  # the protocol's agent (brokers/<protocol>/agent.py), attached by the shard
        self._hot: tuple | None = None  # advance's fixed references (_hot_refs), made at the first visit
        # The sites it may send to (None: every site): a tuple or a set (SiteEngine chooses).
        self.links: "tuple[int, ...] | frozenset[int] | None" = None
        self.fast = False
        self._fp_free: list[float] = []
        self._fp_prev = -INF
        # Faults ([faults], sites/faults.py): while down the site holds what reaches it.
        self.faults: Any = None
        self.down = False
        self.up_at = -INF
        self.held: list[tuple] = []

    # ------------------------------------------------------------------ queries

    def next_event_time(self) -> float:
        t = self.heap[0][0] if self.heap else INF
        if self.inbox_at < len(self.inbox) and self.inbox[self.inbox_at][0] < t:
            t = self.inbox[self.inbox_at][0]
        if self.cursor < self.n_local and self.c_release[self.cursor] < t:
            t = self.c_release[self.cursor]
        return t

    def next_release(self) -> float:
        """Release time of the next local job not yet submitted (inf when none is left)."""
        return self.c_release[self.cursor] if self.cursor < self.n_local else INF

    def send_bound(self) -> float:
        """The agent's send bound, or the repair time of a site that is down (it then handles
        what it held: arrivals, jobs, timers, whatever bound the agent would give)."""
        bound = self.agent.send_bound()
        return min(bound, self.up_at) if self.down else bound

    def next_arrival_or_timer(self) -> float:
        """The earliest local arrival or timer: the next event at which an agent that sends
        only from those (``sends_only_on_arrival_and_timer``) may send."""
        release = self.c_release[self.cursor] if self.cursor < self.n_local else INF
        return self.timer_times[0] if self.timer_times and self.timer_times[0] < release else release

    def next_agent_event_time(self) -> float:
        """The earliest pending timer or message."""
        t = self.timer_times[0] if self.timer_times else INF  # and next_message_time, inline (the hot send bound)
        return (
            self.inbox[self.inbox_at][0] if self.inbox_at < len(self.inbox) and self.inbox[self.inbox_at][0] < t else t
        )

    def next_message_time(self) -> float:
        """The earliest message delivered here and not handled yet (for agents that send
        only in answer to messages)."""
        return self.inbox[self.inbox_at][0] if self.inbox_at < len(self.inbox) else INF

    def queued(self) -> list[int]:
        return self.scheduler.queued()

    def backlog(self, now: float) -> float:
        """Work known to the site and not yet done, in processor-time at speed 1 (size × q)."""
        size, procs = self.c_size, self.c_procs
        work = sum(size[s] * procs[s] for s in self.scheduler.queued())
        for slot in self.running_slots():
            if self.r_end[slot] > now:
                work += (self.r_end[slot] - now) * self._job_speed(slot) * procs[slot]
        return work

    def load(self, now: float) -> float:
        """L_k of the thesis: the time at which the site would finish all known work."""
        return now + self.backlog(now) / sum(self.speeds)

    def running_slots(self) -> list[int]:
        # A running piece cut shorter leaves its old completion in the heap, void.
        end = self.r_end
        return [e[4] for e in self.heap if e[1] == COMPLETE and e[0] == end[e[4]]]

    def _job_speed(self, slot: int) -> float:
        if self.uniform:
            return self.speed
        return min(self.speeds[p] for p in self.alloc[slot])

    # ------------------------------------------------------------------ agent actions

    def send(self, now: float, dst: int, kind: str, job: tuple = (), **fields: Any) -> None:
        """Send a message of a declared kind with its named fields (and a job record for the
        kinds that carry one); it is delivered after the link latency, never inside this window."""
        code = self._kind_code(now, kind)  # send_all's body for one destination: its fields not packed again
        self._post(now, (dst,), code, self._payload(now, code, job, fields))

    def send_all(self, now: float, dsts: Iterable[int], kind: str, job: tuple = (), **fields: Any) -> None:
        """``send`` the same message to each of ``dsts`` in order (the same sequence numbers,
        latencies and fault draws as one ``send`` each); the checks and the payload are done
        once, which is what an all-to-all broadcast spends most of its time on."""
        code = self._kind_code(now, kind)
        self._post(now, dsts, code, self._payload(now, code, job, fields))

    def _payload(self, now: float, code: int, job: tuple, fields: dict[str, Any]) -> tuple:
        """The message's payload columns; a field its kind cannot hold (a protocol's error,
        found as it sends) is one line naming the site and time, as any broken rule of the
        run, not a traceback."""
        try:
            return self.kinds.kinds[code].payload(job, fields)
        except TypeError as exc:
            raise InvariantError(f"site {self.name} at t={now}: {exc}") from None

    def _kind_code(self, now: float, kind: str) -> int:
        """The code of a kind this site may send now: after its send bound, declared by its protocol."""
        if now < self.bound:
            raise InvariantError(
                f"causality: site {self.name} sent a {kind!r} message "
                f"at t={now} before its declared send bound {self.bound}"
            )
        try:
            return self.kinds.code[kind]
        except KeyError:
            raise InvariantError(
                f"site {self.name} at t={now}: sent a {kind!r} message, a kind its protocol does not declare "
                f"(declared: {', '.join(self.kinds.names)})"
            ) from None

    def _post(self, now: float, dsts: Iterable[int], code: int, payload: tuple) -> None:
        """Put the message of kind ``code`` with its payload columns in the outbox for each of
        ``dsts`` (send_all's checks done): a sequence number each, the link's latency, the
        faults' draws."""
        links, me, outbox, faults, latency = self.links, self.site_id, self.outbox, self.faults, self.latency
        if not isinstance(dsts, (tuple, list, range)):
            dsts = tuple(dsts)  # read twice below
        if links is not None and dsts is not links:  # the neighbor tuple itself (a broadcast) needs no check
            for dst in dsts:
                if dst not in links:
                    raise InvariantError(
                        f"site {self.name} at t={now}: sent a {self.kinds.names[code]!r} message to site {dst}, "
                        "which is not one of its neighbors in the network topology"
                    )
        first = seq = self.msg_seq
        if faults is None and isinstance(latency, float):  # one delivery time for all
            deliver = now + latency
            for dst in dsts:
                seq += 1
                outbox.append((deliver, me, seq, dst, now, code) + payload)
        else:
            job = self.kinds.kinds[code].job
            for dst in dsts:
                seq += 1
                lat = latency if isinstance(latency, float) else latency[dst]
                deliver = now + lat
                if faults is not None:
                    deliver = faults.fate(now, me, dst, deliver, lat, job)
                    if deliver is None:
                        continue  # lost: sent all the same
                outbox.append((deliver, me, seq, dst, now, code) + payload)
        self.msg_seq = seq
        self.sent[code] += seq - first

    def job_record(self, slot: int, moves: int = 0) -> tuple:
        """The job's fields in JOB_DTYPE order; ``moves`` added to its migrations (a job leaving)."""
        return (
            self.c_id[slot],
            self.c_owner[slot],
            self.c_group[slot],
            self.c_release[slot],
            self.c_size[slot],
            self.c_procs[slot],
            self.c_walltime[slot],
            self.c_priority[slot],
            self.c_submit[slot],
            self.c_migrations[slot] + moves,
            self.c_fragment[slot],
            self.c_deadline[slot],
            self.c_target_site[slot],
        )

    def transfer(self, now: float, slot: int, dst: int, tag: float = 0.0) -> None:
        """Send a queued (or just arrived) job to another site; it leaves this site's books.
        ``tag`` travels with it (e.g. the processor it is meant for)."""
        state = self.r_state
        if state[slot] == QUEUED:
            self.scheduler.remove(slot)
        elif state[slot] != PENDING:
            raise InvariantError(f"site {self.name} tried to transfer job {self.c_id[slot]} which is not queued")
        state[slot] = GONE
        if type(tag) is not float or now < self.bound:  # a cast to make, or the causality error
            self.send_all(now, (dst,), "job", self.job_record(slot, 1), tag=tag)  # send's body
        else:  # send_all's payload, made here: the tag in its float slot, the job record after
            self._post(now, (dst,), self.job_code, (tag,) + _AFTER_TAG + self.job_record(slot, 1))

    # divisible jobs (thesis ch. 4) ---------------------------------------------

    def split(self, slot: int, amount: float, now: float) -> int:
        """Cut the last ``amount`` of work off a piece into a new piece queued right behind it.

        The new piece has the job's fields, its own fragment id (unique in the run: this
        site's id and a counter) and size ``amount``; returns its slot. A running piece
        can be cut too (divisible load: its unprocessed part is just work not done yet):
        it then ends earlier and the new piece heads the queue.
        """
        state = self.r_state[slot]
        if state not in (QUEUED, RUNNING) or not 0 < amount < self.c_size[slot]:
            raise InvariantError(
                f"site {self.name} cannot cut {amount} off job {self.c_id[slot]} (size {self.c_size[slot]})"
            )
        new = self._cut(slot, amount)
        if state == RUNNING:
            end = self.r_end[slot] - amount / self._job_speed(slot)
            if end <= now:
                raise InvariantError(f"site {self.name} cut job {self.c_id[slot]} into work it has already done")
            self.r_end[slot] = end
            self.seq += 1
            heapq.heappush(self.heap, (end, COMPLETE, self.seq, 0, slot))
            self.scheduler.push_front(new)
        else:
            self.scheduler.insert_after(slot, new)
        return new

    def _cut(self, slot: int, amount: float) -> int:
        """A new piece of ``amount`` work off ``slot`` (which keeps the rest): its own fragment id,
        unique in the run (this site's id and a counter); returns its slot."""
        self.pieces += 1
        self.tally.done -= 1  # one more piece to finish before the job is done
        rec = list(self.job_record(slot))
        rec[SIZE] = amount
        rec[FRAGMENT] = ((self.site_id + 1) << 32) | self.pieces
        self.c_size[slot] -= amount
        return self._add_slot(rec)

    def preempt(self, slot: int, now: float) -> int:
        """Stop a running job now: the work it has not done becomes a new piece, queued here
        (for a protocol or a preemptive scheduler to start again or send away); returns its
        slot, or -1 when nothing is left (the job completes at this instant anyway). The
        stopped piece ends now and frees its processors at once; no agent hook sees it.
        """
        if self.r_state[slot] != RUNNING:
            raise InvariantError(f"site {self.name} preempted job {self.c_id[slot]} which is not running")
        progress_from = self.r_start[slot] + self.setup.get(slot, 0.0)
        done = max(0.0, now - progress_from) * self._job_speed(slot)
        rest = self.c_size[slot] - done
        if rest <= 1e-12 * max(1.0, self.c_size[slot]) or self.r_end[slot] <= now:
            return -1
        new = self._cut(slot, rest)
        self.r_end[slot] = now  # its completion in the heap is void from now on
        self._finish_piece(slot)
        self.scheduler.push(new)
        return new

    def announce(self, slot: int, deadline: float) -> None:
        """Record the latest finish time promised to the job's submitter (checked at the end)."""
        self.c_deadline[slot] = deadline

    def offer(self, now: float, slot: int, dst: int, tag: float = 0.0) -> None:
        """Send a copy of a queued piece to ``dst`` and hold it here until ``dst`` answers.

        The message names the slot (``slot``) for the answer; ``tag`` is the agent's.
        """
        if self.r_state[slot] != QUEUED:
            raise InvariantError(f"site {self.name} offered job {self.c_id[slot]} which is not queued")
        self.r_state[slot] = OFFERED
        self.send(now, dst, "fragment", job=self.job_record(slot, moves=1), slot=slot, tag=tag)

    def withdraw(self, slot: int) -> None:
        """The receiver took the offered piece: it leaves this site's books."""
        if self.r_state[slot] != OFFERED:
            raise InvariantError(f"site {self.name}: job {self.c_id[slot]} was granted but not offered")
        self.scheduler.remove(slot)
        self.r_state[slot] = GONE

    def keep(self, slot: int, now: float) -> None:
        """The receiver refused the offered piece: it runs here, where it always was."""
        if self.r_state[slot] != OFFERED:
            raise InvariantError(f"site {self.name}: job {self.c_id[slot]} was refused but not offered")
        self.r_state[slot] = QUEUED
        self.scheduler.dispatch(self, now)

    def set_timer(self, when: float, tag: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, TIMER, self.seq, 0, tag))
        heapq.heappush(self.timer_times, when)

    def enqueue(self, slot: int, now: float) -> None:
        self.r_state[slot] = QUEUED
        self._queue(slot, now)

    def receive_job(self, now: float, msg: tuple) -> int:
        """Take the job a message carries (its view or its row); returns its new slot, queued here."""
        slot = self._add_slot(msg[N_ROUTING:])
        if self.c_procs[slot] > self.m:
            raise too_wide(self.name, self.m, self.c_id[slot], self.c_procs[slot], self.agent.name, now)
        self._queue(slot, now)
        return slot

    def _queue(self, slot: int, now: float) -> None:
        """Queue a job in state QUEUED and start what the scheduler allows now. Plain FCFS does
        push and dispatch's work here on the hot paths: a job on an empty queue starts at once
        if it fits, and dispatch runs only when the head of the queue fits."""
        sched = self.scheduler
        if self.fcfs:
            queue = sched.queue
            if not queue and self.c_procs[slot] <= self.free_count:
                self.start(slot, now)
                return
            queue.append(slot)  # FCFS.push
            if self.c_procs[queue[0]] > self.free_count:
                return
        else:
            sched.push(slot)
        sched.dispatch(self, now)

    def _add_slot(self, record: "tuple | list") -> int:
        slot = len(self.c_id)
        # One C loop over the columns (append returns None: any() runs them all).
        any(map(_APPEND, self._columns, record))
        self.r_start.append(math.nan)
        self.r_end.append(math.nan)
        self.r_state.append(QUEUED)
        self.r_proc.append(-1)
        return slot

    # ------------------------------------------------------------------ kernel side

    def start(self, slot: int, now: float, procs: list[int] | None = None, setup: float = 0.0) -> None:
        """Start a queued job now (called by the scheduler, or by a protocol that names the
        processors and a ``setup`` time spent before the job progresses: a migration's cost)."""
        q = self.c_procs[slot]
        free = self.free_count
        if q > free:
            raise InvariantError(f"site {self.name} started job {self.c_id[slot]} on {q} processors with {free} free")
        self.free_count = free - q
        if procs is None and q == 1 and self.uniform:  # the hot path: the lowest-numbered free one, kept in r_proc only
            self.r_proc[slot] = self.free_procs.pop(0)
            speed = self.speed
        else:
            speed = self._take_processors(slot, q, procs)
        if setup:
            self.setup[slot] = setup
        end = now + setup + self.c_size[slot] / speed
        self.r_start[slot] = now
        self.r_end[slot] = end
        self.r_state[slot] = RUNNING
        self.seq = seq = self.seq + 1
        heapq.heappush(self.heap, (end, COMPLETE, seq, 0, slot))

    def _take_processors(self, slot: int, q: int, procs: list[int] | None) -> float:
        """Take the ``q`` processors a job starts on (``procs``, named by a protocol, or the
        fastest free ones, by number on identical processors) and record them; returns the
        job's speed, its slowest processor's."""
        if procs is not None:
            if len(procs) != q or any(p not in self.free_procs for p in procs):
                raise InvariantError(
                    f"site {self.name} started job {self.c_id[slot]} on processors {procs}, not {q} free ones"
                )
            for p in procs:
                self.free_procs.remove(p)
            self.alloc[slot] = list(procs)
        else:
            procs = self.free_procs[:q]
            del self.free_procs[:q]
            if not self.uniform:
                self.alloc[slot] = procs
        self.r_proc[slot] = procs[0]
        if q > 1:
            self.proc_sets[slot] = sorted(procs)
        return min(self.speeds[p] for p in procs)

    def deliver(self, rows: list[tuple]) -> None:
        """Queue received messages (full message tuples) as events at their delivery times; the
        site may keep ``rows`` itself (the caller's own list, not used after). Called between
        windows only: never while ``advance`` reads the inbox."""
        at = self.inbox_at
        if at < len(self.inbox):
            pending = self.inbox[at:] if at else self.inbox
            pending.extend(rows)
        else:  # nothing pending (the usual case): the rows become the inbox
            pending = rows
        pending.sort()  # (delivery, source, sequence) differ: no comparison reaches a payload
        self.inbox, self.inbox_at = pending, 0

    def pending_messages(self) -> list[tuple]:
        """The messages delivered here and not handled yet, in order."""
        return self.inbox[self.inbox_at :]

    def advance(self, until: float) -> float:  # noqa: C901
        """Handle every event of this site with time < until, in order; return next_event_time()."""
        if self.fast:
            return fcfs_recurrence.advance(self, until)
        agent = self.agent
        # The loop's fixed references, read once a site (a visit handles one or two events:
        # reading them from the site at each was a tenth of the general path's opcodes).
        hot = self._hot
        if hot is None or hot[0] is not agent:  # the first visit, or an agent attached since
            hot = self._hot = self._hot_refs()
        _, heap, rel, n_local, sched, queue, procs, intercept, handlers, kinds = hot
        views = kinds.views
        down = self.down
        inbox, at = self.inbox, self.inbox_at
        n_in = len(inbox)
        # The cursor and the next release live in locals (each written back before a hook
        # runs: next_release reads the cursor), and so do the counts (written back on return:
        # no hook reads them, and a repair's held messages add to ``received`` on their own).
        cursor = self.cursor
        release = rel[cursor] if cursor < n_local else INF
        events = received = 0
        while True:
            # The next heap event or message: at one instant a message comes after
            # completions and faults, before timers (and arrivals: the cursor, below).
            if at < n_in:
                t = inbox[at][0]
                message = not heap or t < heap[0][0] or (t == heap[0][0] and heap[0][1] > MESSAGE)
                if not message:
                    t = heap[0][0]
            else:
                message = False
                t = heap[0][0] if heap else INF
            if release < t:
                if release >= until:
                    t = release
                    break
                now, slot = release, cursor
                cursor += 1
                self.cursor = cursor
                release = rel[cursor] if cursor < n_local else INF
                events += 1
                if down:
                    faults.hold_arrival(self, now, slot)
                    continue
                if intercept and agent.on_arrival(now, slot):
                    continue
                self.r_state[slot] = QUEUED
                self._queue(slot, now)
                continue
            if t >= until:
                if at == n_in and n_in:
                    self.inbox, self.inbox_at = [], 0
                break
            if message:
                row = inbox[at]
                at += 1
                self.inbox_at = at
                events += 1
                if down:
                    faults.hold_message(self, t, row)
                    continue
                received += 1
                code = row[5]
                handlers[code](t, _VIEW_OF(views[code], row))
                continue
            now, kind, _, _, payload = _HEAPPOP(heap)
            if kind == COMPLETE:
                if now != self.r_end[payload]:
                    continue  # the piece was cut shorter and completed earlier
                events += 1
                self._finish_piece(payload)
                agent.on_complete(now, payload)
                # Free every processor of this instant before choosing what starts (list
                # scheduling, Alg. 5.1, picks from all of them; FCFS and SPT start the same).
                # An FCFS queue that is empty or whose head does not fit starts nothing; a heap
                # whose head is not a completion at this instant makes _completes_now False
                # without the call.
                if queue is None or (queue and procs[queue[0]] <= self.free_count):
                    if not (heap and heap[0][0] == now and heap[0][1] == COMPLETE and self._completes_now(now)):
                        sched.dispatch(self, now)
                continue
            events += 1
            if kind == TIMER:
                heapq.heappop(self.timer_times)
                if down:
                    if self.up_at < INF:  # it fires at the repair
                        self.set_timer(self.up_at, payload)
                    continue
                agent.on_timer(now, payload)
            else:  # FAULT: a crash carries its repair time, a repair carries None
                if payload is not None:
                    faults.crash(self, now, payload)
                else:
                    faults.recover(self, now)
                down = self.down
        self.events += events
        self.tally.events += events
        self.received += received
        return t

    def _hot_refs(self) -> tuple:
        """What ``advance`` reads of the site's parts that never change (the agent first: the
        key that says the tuple is current). Plain FCFS: its queue (never replaced), whose head
        a completion starts if it fits (dispatch's test, without the call); any other
        scheduler: None, dispatch decides."""
        agent, sched = self.agent, self.scheduler
        queue, procs = (sched.queue, self.c_procs) if self.fcfs else (None, None)
        return (
            agent,
            self.heap,
            self.c_release,
            self.n_local,
            sched,
            queue,
            procs,
            agent.intercepts_arrivals,
            agent.handlers,
            self.kinds,  # not its views: a view class is made at run time, a checkpoint rebuilds it
        )

    def _finish_piece(self, slot: int) -> None:
        """The piece in ``slot`` is done at its r_end: free its processors, tell a scheduler that
        accounts usage (fairshare)."""
        q = self.c_procs[slot]
        self.free_count += q
        if q == 1 and slot not in self.alloc:  # the hot path: one of identical processors
            free = self.free_procs
            if free:
                bisect.insort(free, self.r_proc[slot])
            else:  # all were busy (a single processor: always)
                free.append(self.r_proc[slot])
        else:
            self.release_processors(slot)
        if self.setup:
            self.setup.pop(slot, None)
        self.r_state[slot] = DONE
        self.tally.done += 1
        if self._on_finish is not None:
            self._on_finish(slot)

    def _completes_now(self, now: float) -> bool:
        """Whether a (live) completion at ``now`` heads the heap: another job ends this instant."""
        heap, end = self.heap, self.r_end
        while heap and heap[0][0] == now and heap[0][1] == COMPLETE:
            if end[heap[0][4]] == now:
                return True
            heapq.heappop(heap)  # a void completion (the piece was cut shorter): drop it now
        return False

    def _proc_key(self, p: int) -> tuple[float, int]:
        return (-self.speeds[p], p)

    def release_processors(self, slot: int) -> None:
        """Put the processors of the piece in ``slot`` back in the free list, fastest first (by
        number on identical ones): those named in alloc, or the ones its start recorded."""
        procs = self.alloc.pop(slot, None)
        if procs is None:
            procs = self.proc_sets[slot] if self.c_procs[slot] > 1 else [self.r_proc[slot]]
        free = self.free_procs
        for p in procs:
            bisect.insort(free, p, key=None if self.uniform else self._proc_key)

    def finish(self, horizon: float) -> None:
        """Close the books at the end of the run: count the completions the recurrence skipped,
        queue what a site that is still down holds."""
        if self.held:
            faults.settle_held(self)
        if self.fast:
            finished = int(np.count_nonzero(np.asarray(self.r_end[: self.cursor], dtype=float) < horizon))
            self.events += finished
