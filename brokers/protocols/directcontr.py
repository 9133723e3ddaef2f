"""The ``protocol`` section of a ``directcontr`` run: fairness as the Shapley papers measure it.

Δψ/p_tot ([S] section 5.1): the L1 distance at t_end between the organizations' ψ_sp and
those of REF's ideally fair schedule ψ*, over p_tot, the unit parts REF completes by t_end.
The decentralized run's figure is beside those of the centralized algorithms listed in
``protocol.compare``, run on the same jobs and processors with ``brokers.shapley.simulate``
(REF's subcoalitions level by level, on Ray when the run used the Ray backend).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gridemu.brokers.algorithms.shapley import SJob, fairness, p_tot, psi_sp, simulate


def instance(submitted: np.ndarray) -> list[SJob]:
    return [
        SJob(int(i), int(o), int(round(r)), int(round(s)))
        for i, o, r, s in zip(submitted["job_id"], submitted["submit_site"], submitted["release"], submitted["size"])
    ]


def executed_psi(table: pd.DataFrame, k: int, t_end: float) -> list[float]:
    """ψ_sp of every organization at t_end in the run's schedule (jobs by their submit site)."""
    out = [0.0] * k
    started = table[table["start"].notna() & (table["start"] <= t_end)]
    for u, part in started.groupby("submit_site"):
        end = part["end"].to_numpy()
        p = np.where(np.isnan(end), np.nan, end - part["start"].to_numpy())
        out[int(u)] = psi_sp([(s, None if q != q else q) for s, q in zip(part["start"], p)], t_end)
    return out


def shapley_summary(submitted: np.ndarray, table: pd.DataFrame, procs: list[int], scenario: Any) -> dict[str, Any]:
    proto = scenario.protocol
    t_end = int(scenario.horizon)
    jobs = instance(submitted)
    k = len(procs)
    level_map = map
    if scenario.data["run"]["backend"] == "ray" and "ref" in proto["compare"]:
        from gridemu.brokers.algorithms.shapley_parallel import ray_level_map

        level_map = ray_level_map
    results = {p: simulate(jobs, procs, p, t_end, seed=scenario.seed, samples=proto["samples"], level_map=level_map)
               for p in proto["compare"]}
    psi = executed_psi(table, k, t_end)
    out: dict[str, Any] = {"name": "directcontr", "t_end": t_end, "psi": psi}
    if "ref" in results:
        ref = results["ref"]
        ptot = p_tot(ref, jobs, t_end)
        out["p_tot"] = ptot
        out["psi_ref"] = list(ref.psi)
        out["fairness"] = float(fairness(psi, ref.psi, ptot)) if ptot else 0.0
        for p, r in results.items():
            out[f"fairness_{p}"] = fairness(r.psi, ref.psi, ptot) if ptot else 0.0
    central = results.get("directcontr") or simulate(jobs, procs, "directcontr", t_end, seed=scenario.seed)
    index = simulate(jobs, procs, "directcontr", t_end, gamma="index")
    out["psi_central_directcontr"] = list(central.psi)
    if "ref" in results and out["p_tot"]:
        out["fairness_directcontr_index"] = fairness(index.psi, results["ref"].psi, out["p_tot"])
    starts = dict(zip(table["job_id"].tolist(), table["start"].tolist()))
    # The protocol's decisions are the centralized ones with processors taken by number; its
    # starts lag on the real clock (module doc of brokers.directcontr_agent).
    diffs = [abs(starts[j] - s) for j, s in index.start.items() if starts.get(j) == starts.get(j)]
    missing = [j for j in index.start if starts.get(j) != starts.get(j)]
    out["max_start_diff_vs_central_index_order"] = float(max(diffs)) if diffs else 0.0
    out["jobs_started_only_by_central"] = len(missing)
    return out
