"""Everything a protocol author imports, from one place: ``from gridemu.plugin import ...``.

A protocol written in a file of its own (a notebook, a test, ``--plugin my_protocol.py``)
needs an agent class (:class:`Agent`, which sees its site through ``self.site``: a
``SiteView``, whose ``rng(purpose)`` gives the site's random stream for a purpose named by a
string), its message kinds (:func:`message`), the checks of its ``[protocol]`` keys (the
``check_*`` functions, which raise :class:`ScenarioError` naming the key), the facts its
hooks see (:class:`ScenarioFacts`, :class:`RunFacts`, :class:`GridInfo`) and one
:class:`Protocol` description, which :func:`register` adds under its name; it then runs
in-process and on Ray shards alike. ``docs/adding-a-protocol.md`` walks through one.
"""

from __future__ import annotations

from gridemu.brokers.agent import Agent, GridInfo
from gridemu.brokers.params import Params, for_site, param
from gridemu.brokers.protocol import (
    CAPABILITIES,
    GanttCompare,
    Protocol,
    Report,
    ResultTable,
    RunFacts,
    RunSize,
    ScenarioFacts,
    Summary,
    Traffic,
    Work,
    require_identical_processors,
    require_one_site_per_org,
    require_scheduler,
)
from gridemu.brokers.registry import register, unregister
from gridemu.model.checks import check_flag, check_number, choice, per_site_values
from gridemu.model.errors import GridemuError, InvariantError, ScenarioError
from gridemu.model.jobs import STATE_CODE, Job
from gridemu.model.messages import MessageKind, message
from gridemu.model.rng import named_rng, named_rngs
from gridemu.sites.view import SiteView

__all__ = [
    "Agent",
    "CAPABILITIES",
    "GanttCompare",
    "GridInfo",
    "GridemuError",
    "InvariantError",
    "Job",
    "MessageKind",
    "Params",
    "Protocol",
    "Report",
    "ResultTable",
    "RunFacts",
    "RunSize",
    "STATE_CODE",
    "ScenarioError",
    "ScenarioFacts",
    "SiteView",
    "Summary",
    "Traffic",
    "Work",
    "check_flag",
    "check_number",
    "choice",
    "for_site",
    "message",
    "named_rng",
    "named_rngs",
    "param",
    "per_site_values",
    "register",
    "require_identical_processors",
    "require_one_site_per_org",
    "require_scheduler",
    "unregister",
]
