"""Grid-wide fairshare (Elmroth and Gardfjäll): sites exchange usage reports, the ``fairshare`` protocol.

Each site's ``fairshare`` scheduler (``sites/schedulers.py``) enforces the share policy with
its own usage, always fresh, and a cached grid-wide view. This agent keeps that view:

  * every ``refresh`` seconds (60 in the paper: "a locally cached view on global usage data
    that is refreshed once per minute") the site reports its usage per policy entry, as the
    policy's global ``approach`` counts it (historical, active or predictive), one ``usage``
    message per entry;
  * ``exchange = "all"``: reports go to every other site, which caches the last report of
    each (its global view is those plus its own fresh usage);
  * ``exchange = "service"``: reports go to the usage service of the entry's top-level
    entry (a VO), hosted by the site ``services`` names (default: VO i of the policy at
    site i mod N); each service sends, every ``refresh``, one ``max_latency`` after the
    reports (when the round's have all arrived), the sum of the last reports it holds to
    every site. A site subtracts what it last reported itself and adds its fresh usage, so
    its own work is not counted twice; the view is one hop and ``max_latency`` staler than
    "all";
  * ``exchange = "tree"``: usage is summed up an aggregation tree and the grid's total
    pushed back down: site i's parent is (i - 1) // F (``fanout`` F, or the F of a
    ``tree:F`` network topology). Each round, a site adds its children's subtree sums to its
    own report and sends the sum to its parent; the root sends the total down, and every
    site forwards it to its children. A site's view of the others is that total less its
    own report of the round. 2(N - 1) messages per entry and round instead of N(N - 1);
    the view is 2 × depth hops stale;
  * ``exchange = "gossip"``: push-sum aggregation (Kempe, Dobra and Gehrke, 2003) over the
    network's links. At each refresh a site starts with its report as mass s (per entry)
    and weight w = 1; for ``gossip_rounds`` steps, one ``max_latency`` apart, it keeps half
    of (s, w) and sends the other half to a neighbor drawn from its own stream. N × s / w
    then estimates the grid's total (the sum of s and of w over sites never changes), and
    the view of the others is that less the site's own report. Rows per refresh:
    N × rounds × (entries + 1), against N(N - 1) × entries all-to-all; the estimate's error
    shrinks geometrically with the rounds. (Forwarding every site's newest report with
    timestamps, the other reading of "gossip", would move at least N(N - 1) rows a refresh:
    every site's new report must reach every site.)
  * ``exchange = "none"``: no reports; the global view is the site's own usage (what a
    site can do alone: local-only fairshare).

The scheduler reads the cached view at its next scheduling pass; reports do not trigger
passes (jobs start when processors free up or jobs arrive).

Mounted subpolicies (section 3: "policy fetchers that periodically follow policy references
and incorporate them in the runtime policy"): a provider with a ``site`` in ``[policy]``
serves its subpolicy from that site. Every other site asks for it (``request``) at the start
and every ``policy_refresh`` seconds; the provider answers with one ``offer`` message per entry
of the subpolicy (its index in the runtime policy and its share) and a closing one. Until
the subpolicy arrives, a site maps the jobs below the mount point to the mount point
itself (the VO entry): it enforces the VO's share but not yet its projects'. Subpolicies
are fixed during a run, so later refreshes deliver the same shares (checked). Over a
sparse network topology a site asks the first hop of a shortest path to the provider
(lowest id among equals); a site asked for a subpolicy answers from the copy it received,
or, with none yet, waits for the answer to its own request (one in flight at a time) and
answers every neighbor that asked when the copy comes. At the first fetch a site d hops
from the provider mounts after d + 1 latencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.model.errors import InvariantError
from gridemu.model.messages import message
from gridemu.model.rng import PURPOSE_GOSSIP, site_rng

if TYPE_CHECKING:  # pragma: no cover
    from gridemu.brokers.fairshare.protocol import FairshareParams

#: Ask a provider for the subpolicy below a mount point (``entry``: the mount point's index
#: in the runtime policy's entries).
REQUEST = message("request", entry=int)
#: A usage figure of one entry (its index): a site's report (``mode`` REPORT) or a usage
#: service's sum of the last reports it holds (``mode`` AGGREGATE).
USAGE = message("usage", usage=float, mode=int, entry=int)
#: One entry of a served subpolicy (its index and its target share, percent); the closing
#: one names the mount point itself, with ``last`` = 1 (and no target).
OFFER = message("offer", target=float, last=bool, entry=int)
#: Aggregation tree (``exchange = "tree"``): a subtree's usage of one entry, up to the parent,
#: and the grid's total, down to the children, for one round; ``entry`` -1 closes a round's
#: report (a report lists the entries with usage only).
UP = message("usage_up", usage=float, round=int, entry=int)
DOWN = message("usage_down", usage=float, round=int, entry=int)
#: Push-sum gossip (``exchange = "gossip"``): half a site's mass of one entry for a refresh
#: round; ``entry`` -1 carries half its weight (in ``usage``).
PUSH = message("push", usage=float, round=int, entry=int)
MESSAGES = (REQUEST, USAGE, OFFER, UP, DOWN, PUSH)
CLOSE = -1

REPORT, AGGREGATE = 0, 1  # the ``mode`` of a usage message: a site's report, or a service's sum


class FairshareAgent(Agent):
    """One site's usage reporting (module doc)."""

    name = "fairshare"

    def __init__(self, site, grid: GridInfo, params: FairshareParams):
        super().__init__(site, grid, params)
        self.refresh = params.refresh
        self.exchange = params.exchange
        self.entries = site.policy_entries()  # the fairshare scheduler's (the view checks there is one)
        self.index = {e: i for i, e in enumerate(self.entries)}
        tops = [e for e in self.entries if "/" not in e]
        services = dict(params.services or ())
        self.service_of = {}
        for e in self.entries:
            top = e.split("/")[0]
            self.service_of[e] = int(services.get(top, tops.index(top) % grid.n_sites))
        #: The entries whose usage service this site hosts (``exchange = "service"``).
        self.serving = [e for e in self.entries if self.service_of[e] == site.site_id]
        self.collected: dict[int, dict[str, float]] = {}  # at a service: site -> its last report
        self.last_sent: dict[str, float] = {}
        self.policy_refresh = params.policy_refresh
        self.served = site.mount_points()  # mount point -> the site that serves its subpolicy
        self.fetching: dict[str, dict[str, float]] = {}  # mount point -> entries received so far
        site.await_subpolicies({m for m, k in self.served.items() if k != site.site_id})
        # Where a site asks for a subpolicy: its provider on the full graph, else the first
        # hop of a shortest path to it (routing from the network's shape, not its state).
        self.hop = {m: self.next_hop(k) for m, k in self.served.items() if k != site.site_id}
        self.copies: dict[str, dict[str, float]] = {}  # mount point -> the subpolicy as received
        self.pending: dict[str, list[int]] = {}  # mount point asked for -> neighbors waiting for this site's copy
        # The aggregation tree (exchange = "tree").
        fanout = params.fanout
        me, n = site.site_id, grid.n_sites
        self.parent = (me - 1) // fanout if me else -1
        self.children = [c for c in range(fanout * me + 1, fanout * me + fanout + 1) if c < n]
        self.round = 0
        self.own: dict[int, dict[str, float]] = {}  # round -> this site's report
        self.subtree: dict[int, dict[str, float]] = {}  # round -> the sum so far of its subtree
        self.waiting: dict[int, set[int]] = {}  # round -> children whose subtree sum is not complete
        self.total: dict[int, dict[str, float]] = {}  # round -> the grid total coming down
        # Push-sum gossip (exchange = "gossip"): this refresh round's mass and weight.
        self.steps = params.gossip_rounds
        self.step_gap = grid.max_latency
        self.rng = site_rng(grid.seed, me, PURPOSE_GOSSIP) if self.exchange == "gossip" else None
        self.mass: dict[str, float] = {}
        self.weight = 0.0

    def on_start(self, now: float) -> None:
        if self.exchange != "none" and self.grid.n_sites > 1:
            self.site.set_timer(0.0, "report")
        if any(k != self.site.site_id for k in self.served.values()):
            self.site.set_timer(0.0, "fetch")

    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "publish":  # at a usage service, once the round's reports are all in
            self._publish(now)
            return
        if tag == "fetch":
            for point in self.hop:
                self._ask(now, point)
            self.site.set_timer(now + self.policy_refresh, "fetch")
            return
        if isinstance(tag, tuple):  # a push-sum step
            self._push_step(now, *tag)
            return
        site, me = self.site, self.site.site_id
        report = site.usage_report(now)
        if self.exchange in ("gossip", "tree"):
            self.round += 1
            r = self.round
            self.own[r] = report
        if self.exchange == "gossip":
            self.mass, self.weight = dict(report), 1.0
            self._push_step(now, r, 0)
        elif self.exchange == "tree":
            self.subtree[r] = dict(report)
            self.waiting[r] = set(self.children)
            self._climb(now, r)
        elif self.exchange == "all":
            for dst in range(self.grid.n_sites):
                if dst != me:
                    for entry, u in report.items():
                        site.send(now, dst, "usage", usage=u, mode=REPORT, entry=self.index[entry])
        else:
            self.last_sent = dict(report)
            for entry, u in report.items():
                dst = self.service_of[entry]
                if dst == me:
                    self.collected.setdefault(me, {})[entry] = u
                else:
                    site.send(now, dst, "usage", usage=u, mode=REPORT, entry=self.index[entry])
            if self.serving:
                # Published when this round's reports have arrived (a report due at that very
                # instant is handled first: messages come before timers). Published at once,
                # the sum held the others' reports of the round before, from which each site
                # took its report of this round: the others' usage a refresh staler, and
                # short by the site's own growth over it.
                site.set_timer(now + self.grid.max_latency, "publish")
        site.set_timer(now + self.refresh, "report")

    def _publish(self, now: float) -> None:
        """At a usage service: send the sum of the last reports for the entries it serves."""
        me = self.site.site_id
        sums = {e: sum(r.get(e, 0.0) for r in self.collected.values()) for e in self.serving}
        for dst in range(self.grid.n_sites):
            if dst == me:
                self._aggregate(me, sums)
            else:
                for entry, u in sums.items():
                    self.site.send(now, dst, "usage", usage=u, mode=AGGREGATE, entry=self.index[entry])

    # the aggregation tree ---------------------------------------------------------------
    def _climb(self, now: float, r: int) -> None:
        """Once every child's subtree sum of round ``r`` is in: send it up, or (the root) down."""
        if self.waiting[r] or r not in self.own:
            return
        del self.waiting[r]
        sums = self.subtree.pop(r)
        if self.parent < 0:
            self._descend(now, r, sums)
        else:
            self._send_report(now, self.parent, "usage_up", r, sums)

    def _descend(self, now: float, r: int, total: dict[str, float]) -> None:
        own = self.own.pop(r)
        self.site.replace_usage(-1, {e: max(0.0, u - own.get(e, 0.0)) for e, u in total.items()})
        for child in self.children:
            self._send_report(now, child, "usage_down", r, total)

    def _send_report(self, now: float, dst: int, kind: str, r: int, usage: dict[str, float]) -> None:
        for entry, u in usage.items():
            self.site.send(now, dst, kind, usage=u, round=r, entry=self.index[entry])
        self.site.send(now, dst, kind, round=r, entry=CLOSE)

    def on_usage_up(self, now: float, msg) -> None:
        r = int(msg.round)
        if msg.entry == CLOSE:
            self.waiting[r].discard(int(msg.src))
            self._climb(now, r)
        else:
            entry = self.entries[int(msg.entry)]
            sums = self.subtree[r]
            sums[entry] = sums.get(entry, 0.0) + msg.usage

    def on_usage_down(self, now: float, msg) -> None:
        r = int(msg.round)
        if msg.entry == CLOSE:
            self._descend(now, r, self.total.pop(r, {}))
        else:
            self.total.setdefault(r, {})[self.entries[int(msg.entry)]] = msg.usage

    # push-sum gossip ---------------------------------------------------------------------
    def _push_step(self, now: float, r: int, step: int) -> None:
        """Send half the mass and weight to a random neighbor; after the last step, the view."""
        if step == self.steps:
            own = self.own.pop(r)
            n = self.grid.n_sites
            self.site.replace_usage(
                -1, {e: max(0.0, n * s / self.weight - own.get(e, 0.0)) for e, s in self.mass.items()}
            )
            return
        dst = self.random_neighbor(self.rng)
        self.weight /= 2
        for entry in self.mass:
            self.mass[entry] /= 2
            self.site.send(now, dst, "push", usage=self.mass[entry], round=r, entry=self.index[entry])
        self.site.send(now, dst, "push", usage=self.weight, round=r, entry=CLOSE)
        self.site.set_timer(now + self.step_gap, (r, step + 1))

    def on_push(self, now: float, msg) -> None:
        if int(msg.round) != self.round:  # the round is over (its steps fit in a refresh: checked)
            return
        if msg.entry == CLOSE:
            self.weight += msg.usage
        else:
            entry = self.entries[int(msg.entry)]
            self.mass[entry] = self.mass.get(entry, 0.0) + msg.usage

    # messages -------------------------------------------------------------------------
    def on_request(self, now: float, msg) -> None:
        """Serve a subpolicy (one offer per entry below the mount point, then a closing one):
        from the policy at its provider, from the copy received at a relay; a relay that has
        none yet asks its own next hop and answers once the copy comes."""
        point = self.entries[int(msg.entry)]
        src = int(msg.src)
        if self.served[point] == self.site.site_id:
            self._serve(now, src, point, self.site.subpolicy(point))
        elif point in self.copies:
            self._serve(now, src, point, self.copies[point])
        else:
            self._ask(now, point)
            if src not in self.pending[point]:
                self.pending[point].append(src)

    def _ask(self, now: float, point: str) -> None:
        """Ask the next hop for a subpolicy, unless this site's request is already on its way."""
        if point not in self.pending:
            self.pending[point] = []
            self.site.send(now, self.hop[point], "request", entry=self.index[point])

    def _serve(self, now: float, dst: int, point: str, shares: dict[str, float]) -> None:
        for e, target in shares.items():
            self.site.send(now, dst, "offer", target=target, entry=self.index[e])
        self.site.send(now, dst, "offer", last=1.0, entry=self.index[point])

    def on_offer(self, now: float, msg) -> None:
        entry = self.entries[int(msg.entry)]
        if msg.last != 1.0:
            point = next(m for m in self.served if entry.startswith(m + "/"))
            self.fetching.setdefault(point, {})[entry] = msg.target
            return
        got = self.fetching.pop(entry, {})
        want = self.site.subpolicy(entry)
        if got != want:
            raise InvariantError(
                f"site {self.site.name}: the subpolicy served for {entry} changed during the run ({got} != {want})"
            )
        self.copies[entry] = got
        self.site.mount_subpolicy(entry)
        for dst in self.pending.pop(entry, ()):
            self._serve(now, dst, entry, got)

    def on_usage(self, now: float, msg) -> None:
        src, entry, u = int(msg.src), self.entries[int(msg.entry)], msg.usage
        if msg.mode == REPORT:
            if self.exchange == "all":
                self.site.cache_usage(src, {entry: u})
            else:
                self.collected.setdefault(src, {})[entry] = u
        else:
            self._aggregate(src, {entry: u})

    def _aggregate(self, service: int, sums: dict[str, float]) -> None:
        # The service's sum includes this site's last report: keep the others' part only.
        self.site.cache_usage(
            -1 - service, {entry: max(0.0, u - self.last_sent.get(entry, 0.0)) for entry, u in sums.items()}
        )

    def send_bound(self) -> float:
        return self.site.next_agent_event_time()
