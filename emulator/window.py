"""The window rule (DESIGN.md, "Time and parallelism: conservative windows"), as a pure function.

With T the earliest pending event or in-flight message and B the earliest send bound of
any site (an in-flight message counts as a bound of its destination, whose agent may
answer it), the next window is [T, W) with W = max(B, T) + lookahead, never past the
horizon. An agent sends at or after its bound and inside the window, so at s >= max(B, T),
and its message is due at s + latency >= max(B, T) + lookahead >= W: nothing sent inside a
window is delivered inside it, and shards handle their events independently.

Windows may also be capped (``WindowRule.capped``): 1/``WINDOW_SLICES`` of the workload's
span, never below the lookahead while jobs are released. A shorter window never changes the
job table; the cap exists so that a periodic protocol's run ends after the same events for
every backend and shard count (see :meth:`WindowRule.cap`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from gridemu.model.errors import GridemuError

WINDOW_SLICES = 200


class Window(NamedTuple):
    start: float  # T: every event before it is handled
    end: float  # W: the shards handle every event with time < W


@dataclass(frozen=True)
class WindowRule:
    """What the rule needs that does not change during a run."""

    lookahead: float  # the smallest link latency (or run.lookahead, which may be lower)
    horizon: float = math.inf
    #: The workload's last release, cut at the horizon (the horizon where nothing is released
    #: before it): the cap's unit and the progress bar's end.
    span: float = 0.0
    #: Periodic protocols (timers forever) and random crashes: windows capped at every T.
    periodic: bool = False
    #: Progress is shown: a run whose sites never talk gets capped windows too (else one).
    progress: bool = False
    #: A message in flight counts as a send bound of its destination, whose agent may answer
    #: it; False where no agent answers (every one sends only at its arrivals and timers, and
    #: no site crashes: ``Agent.sends_only_on_arrival_and_timer``; or routes jobs on the
    #: route path): then it is no bound (``exchange.window_after``).
    answers: bool = True
    #: Every shard's sites handle what they receive before the span at their next arrival or
    #: timer (``SiteEngine.wake``): a message in flight is then no event before the span
    #: either. With ``answers``, a message crossing to another shard changes no window, as one
    #: delivered within a shard does not.
    waits: bool = False

    @classmethod
    def for_run(
        cls,
        lookahead: float,
        horizon: float,
        last_release: float,
        periodic: bool = False,
        progress: bool = False,
        answers: bool = True,
        waits: bool = False,
    ) -> WindowRule:
        span = last_release
        if math.isfinite(horizon):
            span = min(span, horizon) if span > 0 else horizon
        return cls(lookahead, horizon, span, periodic, progress, answers, waits)

    @property
    def slice(self) -> float:
        return max(self.span, self.lookahead) / WINDOW_SLICES

    def cap(self, start: float, bound: float) -> float:
        """The longest window starting at ``start``.

        Periodic protocols' timers run until the barrier that sees the last job finish, so
        their windows have a cap that depends on T alone: the run then ends after the same
        events whatever the windows' other bounds. It is 1/200 of the span, and never shorter
        than the lookahead until the last release (every window may reach T + lookahead
        anyway: a shorter cap would only add barriers); after it, 1/200, so the run ends close
        to the last job's end (a longer last window would add rounds of reports that nobody
        reads). Sites that never talk get one window (every barrier costs a Ray exchange)
        unless progress is shown. Other talking sites' windows are bounded by their send
        bounds and the lookahead alone."""
        if self.periodic or (self.progress and math.isinf(bound)):
            return max(self.slice, self.lookahead) if start < self.span else self.slice
        return math.inf


def next_window(rule: WindowRule, pending: float, bound: float) -> Window | None:
    """The next window, from ``pending`` (the earliest pending event or in-flight message:
    T) and ``bound`` (the earliest send bound, in-flight messages included: B); None when
    nothing is left before the horizon."""
    if pending >= rule.horizon or math.isinf(pending):
        return None
    end = max(bound, pending) + rule.lookahead
    if end > rule.horizon:
        end = rule.horizon
    if rule.periodic or rule.progress:  # only then can a window be capped (WindowRule.cap)
        end = min(end, pending + rule.cap(pending, bound))
    if not end > pending:  # t + lookahead == t once t is large enough beside it
        raise GridemuError(
            f"run.lookahead: a window of {rule.lookahead:g} no longer advances virtual time at t={pending:g} "
            "(float resolution): use a larger network.latency or run.lookahead, or a shorter run"
        )
    return Window(pending, end)
