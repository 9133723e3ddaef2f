"""The counterexample instances of the migration paper (Amar, Mu'alem, Stößer, AAMAS 2008), section 4.

Propositions 1-3 each build a small instance on which no busy scheduler without migration
is envy-free (EF), weakly performance-monotone (WPM) or independent of low-value jobs
(ILV). Plain data, no broker types: a job is a tuple ``(id, release, size, priority)``
(the paper's θ_j = (r_j, t_j, v0_j), in the field order of
``brokers.gm.algorithm.GmJob``), machines are a list of speeds (machine 0 = n1). The
``proposition`` workload (``scenarios/workload.py``) and the tests build from these; a
bad parameter raises ValueError naming it (``X: ...``, ``group: ...``, ``n: ...``).

The ``proposition`` workload kind (``[workload] kind = "proposition"``) runs them in the
emulator: :func:`workload_rows` checks its settings and picks the instance,
:func:`workload_jobs` makes the job array (``scenarios/workload.py`` dispatches to both).

Readings where the text is ambiguous or silent (the paper's wording in quotes):
  * "Any large enough X > 0" (Props. 1-2): X/2 must be an integral time, so X must be an
    even integer; the schedules the proofs describe need X > 4 (e.g. Prop. 1 group 1:
    j5 ends at 3X/2 + 2 < 2X, j4's end), so we accept even X ≥ 6.
  * Proposition 3's j_i are printed "j_2 = (v_2^0 = 1, r_2 = 2, t_1 = 2n − 2), ..., j_n =
    (..., t_1 = n)": read t_i = 2n − i. With n = 1, j_1 ends at 2 = r_2 and nothing waits,
    so n ≥ 2 is required.

How the busy schedulers of ``brokers.gm.algorithm`` and GM fare on each instance is told
in that module's docstring.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from gridemu.model.checks import check_number
from gridemu.model.errors import ScenarioError
from gridemu.model.jobs import empty_jobs

#: One job of an instance: (id, release r, size t at speed 1, priority v0).
Row = tuple[int, float, float, float]


def _check_x(X: float, group: int) -> None:
    if isinstance(X, bool) or not isinstance(X, (int, float)) or not math.isfinite(X) or X != int(X) or int(X) % 2:
        raise ValueError(f"X: must be an even integer (X/2 is a release time), got {X!r}")
    if X < 6:
        raise ValueError(f"X: must be >= 6 for the schedules of the proof (needs X > 4), got {X!r}")
    if group not in (1, 2):
        raise ValueError(f"group: must be 1 (j1 on n1) or 2 (j1 on n2), got {group!r}")


def _five(rows: Sequence[tuple[float, float]]) -> list[Row]:
    return [(i + 1, float(r), float(t), 1.0) for i, (r, t) in enumerate(rows)]


def proposition_1(X: float, group: int) -> tuple[list[Row], list[float]]:
    """Proposition 1's EF counterexample for busy schedulers of ``group`` (1: j1 on n1, 2: on n2).

    Machine 0 = n1 (speed 1), machine 1 = n2 (speed 2); j4 ≻ j5 in both groups.
    """
    _check_x(X, group)
    if group == 1:
        rows = [(0, X), (1, X), (X / 2 + 1, X), (X, X), (X + 1, X + 2)]
    else:
        rows = [(0, X), (1, X - 1), (X / 2, X + 2), (X, X), (X + 1, X + 1)]
    return _five(rows), [1.0, 2.0]


def proposition_2(X: float, group: int) -> tuple[list[Row], list[float]]:
    """Proposition 2's WPM counterexample (the base instance; j4 is then released at X + 2).

    Machine 0 = n1 (speed 1), machine 1 = n2 (speed 2). Group 1 (j1 on n1) and group 2
    (j1 on n2) differ only in t_2 (X vs X - 1).
    """
    _check_x(X, group)
    t2 = X if group == 1 else X - 1
    rows = [(0, X), (1, t2), (X / 2 + 2, X), (X, X), (X + 1, 2)]
    return _five(rows), [1.0, 2.0]


def proposition_3(n: int) -> tuple[list[Row], list[Row], list[float]]:
    """Proposition 3's ILV counterexample: (J, J', speeds) on n identical machines of speed 1.

    J = j_1..j_n with v0 = 1, r_i = i, t_i = 2n - i, and j_{n+1} with v0 = 2, r = n + 1,
    t = 3n; J' = [j_{n+1}] = h_{θ}(J) for θ = j_{n+1}.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n: must be an integer >= 2 (with n = 1 nothing waits), got {n!r}")
    top = (n + 1, float(n + 1), float(3 * n), 2.0)
    J = [(i, float(i), float(2 * n - i), 1.0) for i in range(1, n + 1)] + [top]
    return J, [top], [1.0] * n


# ------------------------------------------------------------ the ``proposition`` workload

#: The variants of each Proposition's instance (``workload.variant``).
VARIANTS = {1: ("base",), 2: ("base", "late"), 3: ("base", "alone")}


def workload_rows(wl: dict[str, Any]) -> list[Row]:
    """The instance a ``[workload]`` of kind "proposition" asks for, as rows (its settings
    checked, a bad one raising ScenarioError naming the key): ``number`` 1 (EF), 2 (WPM)
    or 3 (ILV); ``X`` (even, ≥ 6) and ``group`` (1: the scheduler puts j1 on the slow
    machine, 2: on the fast one) for 1 and 2; ``variant`` "late" releases j4 at X + 2
    (Proposition 2's better-off type), "alone" keeps only j_{n+1} (Proposition 3's J').
    Proposition 3's n is ``X``, to be the site's processor count."""
    number = wl.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number not in VARIANTS:
        raise ScenarioError("workload.number", f"must be 1, 2 or 3 (the paper's Propositions), got {number!r}")
    variant = wl.get("variant", "base")
    if not isinstance(variant, str) or variant not in VARIANTS[number]:
        raise ScenarioError(
            "workload.variant", f"Proposition {number} has variants {', '.join(VARIANTS[number])}, got {variant!r}"
        )
    try:
        if number == 3:
            n = int(check_number("workload.X", wl.get("X", 3), positive=True, integer=True))
            J, alone, _ = proposition_3(n)
            return alone if variant == "alone" else J
        X = check_number("workload.X", wl.get("X", 10), positive=True, integer=True)
        rows, _ = (proposition_1 if number == 1 else proposition_2)(int(X), wl.get("group", 1))
    except ValueError as exc:
        key = "workload.group" if str(exc).startswith("group") else "workload.X"
        raise ScenarioError(key, str(exc).split(": ", 1)[-1]) from None
    if variant == "late":
        rows = [(i, X + 2.0, t, v0) if i == 4 else (i, r, t, v0) for i, r, t, v0 in rows]
    return rows


def workload_jobs(wl: dict[str, Any], owner: int) -> tuple[np.ndarray, list[str]]:
    """The job array of a "proposition" workload and its group names: every job submitted
    to site 0 by organization ``owner``; the group column names each job as the paper does
    (j1, j2, ...: ids follow release order)."""
    rows = workload_rows(wl)
    jobs = empty_jobs(len(rows))
    jobs["release"] = [r for _, r, _, _ in rows]
    jobs["size"] = [t for _, _, t, _ in rows]
    jobs["priority"] = [v0 for _, _, _, v0 in rows]
    jobs["submit_site"] = 0
    jobs["owner"] = owner
    jobs["group"] = np.arange(len(rows))
    return jobs, [f"j{i}" for i, _, _, _ in rows]
