"""Grid-wide fairshare (Elmroth and Gardfjäll): sites exchange usage reports, the ``fairshare`` protocol.

Each site's ``fairshare`` scheduler (``sites/schedulers.py``) enforces the share policy with
its own usage, always fresh, and a cached grid-wide view. This agent keeps that view:

  * every ``refresh`` seconds (60 in the paper: "a locally cached view on global usage data
    that is refreshed once per minute") the site reports its usage per policy entry, as the
    policy's global ``approach`` counts it (historical, active or predictive), one ``usage``
    row per entry;
  * ``exchange = "all"``: reports go to every other site, which caches the last report of
    each (its global view is those plus its own fresh usage);
  * ``exchange = "service"``: reports go to the usage service of the entry's top-level
    entry (a VO), hosted by the site ``services`` names (default: VO i of the policy at
    site i mod N); each service sends, every ``refresh``, the sum of the last reports it
    holds to every site. A site subtracts what it last reported itself and adds its fresh
    usage, so its own work is not counted twice; the view is one hop staler than "all";
  * ``exchange = "none"``: no reports; the global view is the site's own usage (what a
    site can do alone: local-only fairshare).

The scheduler reads the cached view at its next scheduling pass; reports do not trigger
passes (jobs start when processors free up or jobs arrive).

Mounted subpolicies (section 3: "policy fetchers that periodically follow policy references
and incorporate them in the runtime policy"): a provider with a ``site`` in ``[policy]``
serves its subpolicy from that site. Every other site asks for it (``request``) at the start
and every ``policy_refresh`` seconds; the provider answers with one ``offer`` row per entry
of the subpolicy (its index in the runtime policy and its share) and a closing row. Until
the subpolicy arrives, a site maps the jobs below the mount point to the mount point
itself (the VO entry): it enforces the VO's share but not yet its projects'. Subpolicies
are fixed during a run, so later refreshes deliver the same shares (checked).
"""
from __future__ import annotations

from typing import Any

from gridemu.brokers.agents.base import Agent, GridInfo
from gridemu.model.errors import InvariantError
from gridemu.model.messages import MTYPE, N_ROUTING, job_columns
from gridemu.model.jobs import JOB_DTYPE
from gridemu.model.messages import message

#: Ask a provider for the subpolicy below a mount point (the entry's group index).
REQUEST = message("request", entry="group")
#: A usage figure of one entry: a site's report (mode REPORT) or a service's aggregate (AGGREGATE).
USAGE = message("usage", usage="value", mode="value2", entry="group")
#: One entry of a served subpolicy (its target share, percent); ``last`` = 1 on the closing row.
OFFER = message("offer", target="value", last="value2", entry="group")
MESSAGES = (REQUEST, USAGE, OFFER)


USAGE, REQUEST, OFFER = MTYPE["usage"], MTYPE["request"], MTYPE["offer"]
_GROUP = N_ROUTING + JOB_DTYPE.names.index("group")
REPORT, AGGREGATE = 0.0, 1.0  # value2 of a usage row: a site's report, or a service's sum


class FairshareAgent(Agent):
    """One site's usage reporting (module doc)."""

    name = "fairshare"

    def __init__(self, site, grid: GridInfo, params: dict[str, Any]):
        super().__init__(site, grid, params)
        self.refresh = float(params.get("refresh", 60.0))
        self.exchange = params.get("exchange", "all")
        self.sched = site.scheduler
        if self.sched.name != "fairshare":
            from gridemu.model.errors import ScenarioError

            raise ScenarioError("scheduler.name", 'the fairshare protocol serves the fairshare scheduler: set scheduler.name = "fairshare"')
        rt = self.sched.conf
        self.entries = rt.entries
        self.index = {e: i for i, e in enumerate(self.entries)}
        tops = [e for e in self.entries if "/" not in e]
        services = params.get("services") or {}
        self.service_of = {}
        for e in self.entries:
            top = e.split("/")[0]
            self.service_of[e] = int(services.get(top, tops.index(top) % grid.n_sites))
        self.collected: dict[int, dict[str, float]] = {}  # at a service: site -> its last report
        self.last_sent: dict[str, float] = {}
        self.policy_refresh = float(params.get("policy_refresh", 3600.0))
        self.served = rt.served  # mount point -> the site that serves its subpolicy
        self.fetching: dict[str, dict[str, float]] = {}  # mount point -> rows received so far
        self.sched.unmounted = {m for m, k in self.served.items() if k != site.site_id}

    def on_start(self, now: float) -> None:
        if self.exchange != "none" and self.grid.n_sites > 1:
            self.site.set_timer(0.0, "report")
        if any(k != self.site.site_id for k in self.served.values()):
            self.site.set_timer(0.0, "fetch")

    def on_timer(self, now: float, tag: Any) -> None:
        if tag == "fetch":
            for point, k in self.served.items():
                if k != self.site.site_id:
                    self.site.send(now, k, "request", job=job_columns(group=self.index[point]))
            self.site.set_timer(now + self.policy_refresh, "fetch")
            return
        site, me = self.site, self.site.site_id
        report = self.sched.usage(now, self.sched.conf.approach)
        if self.exchange == "all":
            for dst in range(self.grid.n_sites):
                if dst != me:
                    for entry, u in report.items():
                        site.send(now, dst, "usage", value=u, value2=REPORT, job=job_columns(group=self.index[entry]))
        else:
            self.last_sent = dict(report)
            for entry, u in report.items():
                dst = self.service_of[entry]
                if dst == me:
                    self.collected.setdefault(me, {})[entry] = u
                else:
                    site.send(now, dst, "usage", value=u, value2=REPORT, job=job_columns(group=self.index[entry]))
            self._publish(now)
        site.set_timer(now + self.refresh, "report")

    def _publish(self, now: float) -> None:
        """At a usage service: send the sum of the last reports for the entries it serves."""
        me = self.site.site_id
        mine = [e for e in self.entries if self.service_of[e] == me]
        if not mine:
            return
        sums = {e: sum(r.get(e, 0.0) for r in self.collected.values()) for e in mine}
        for dst in range(self.grid.n_sites):
            if dst == me:
                self._aggregate(me, sums)
            else:
                for entry, u in sums.items():
                    self.site.send(now, dst, "usage", value=u, value2=AGGREGATE, job=job_columns(group=self.index[entry]))

    def on_message(self, now: float, row: tuple) -> None:
        if row[5] == REQUEST:  # serve a subpolicy: one row per entry below the mount point, then a closing row
            point = self.entries[int(row[_GROUP])]
            src = int(row[1])
            for e in self.entries:
                if e.startswith(point + "/"):
                    self.site.send(now, src, "offer", value=100 * self.sched.conf.targets[e], job=job_columns(group=self.index[e]))
            self.site.send(now, src, "offer", value2=1.0, job=job_columns(group=self.index[point]))
            return
        if row[5] == OFFER:
            self._subpolicy_row(row)
            return
        if row[5] != USAGE:
            super().on_message(now, row)
            return
        src, entry, u = int(row[1]), self.entries[int(row[_GROUP])], row[6]
        if row[7] == REPORT:
            if self.exchange == "all":
                self.sched.remote.setdefault(src, {})[entry] = u
            else:
                self.collected.setdefault(src, {})[entry] = u
        else:
            self._aggregate(src, {entry: u})

    def _subpolicy_row(self, row: tuple) -> None:
        entry = self.entries[int(row[_GROUP])]
        if row[7] != 1.0:
            point = next(m for m in self.served if entry.startswith(m + "/"))
            self.fetching.setdefault(point, {})[entry] = row[6]
            return
        got = self.fetching.pop(entry, {})
        want = {e: 100 * self.sched.conf.targets[e] for e in self.entries if e.startswith(entry + "/")}
        if got != want:
            raise InvariantError(f"site {self.site.name}: the subpolicy served for {entry} changed during the run ({got} != {want})")
        if entry in self.sched.unmounted:
            self.sched.mount(entry)

    def _aggregate(self, service: int, sums: dict[str, float]) -> None:
        # The service's sum includes this site's last report: keep the others' part only.
        view = self.sched.remote.setdefault(-1 - service, {})
        for entry, u in sums.items():
            view[entry] = max(0.0, u - self.last_sent.get(entry, 0.0))

    def send_bound(self) -> float:
        return self.site.next_agent_event_time()

