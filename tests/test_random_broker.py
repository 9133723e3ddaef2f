"""The ``random`` broker against destinations drawn here, not through ``random_routes``.

Its docstring declares the rule: each newly submitted job goes to a site drawn uniformly
from all sites, the submitting site included (then the job stays), or in a network topology
from the site and its neighbors; one draw per job, in submission order, from the site's own
broker stream (``site_rng(seed, k, PURPOSE_BROKER)``, gridemu.model.rng). The kernel runs it
two ways (the route path and the agents' general path, ``tests/test_route.py`` compares them
with each other); here both are compared with draws made one job at a time from that stream,
and the destinations are checked to be uniform over the declared choices.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import gridemu.emulator as emulator
from gridemu.model.rng import PURPOSE_BROKER, site_rng
from tests.conftest import small_grid


def declared_destinations(jobs: pd.DataFrame, seed: int, n_sites: int, ring: bool) -> pd.Series:
    """Each job's destination by the docstring: site k's jobs in submission order (release,
    then id), one uniform draw each from k's broker stream over every site in id order, or on
    a ring over k itself then its two neighbors in id order."""
    dest = {}
    for k, mine in jobs.sort_values(["release", "job_id"]).groupby("submit_site", sort=True):
        rng = site_rng(seed, int(k), PURPOSE_BROKER)
        choices = list(range(n_sites)) if not ring else [int(k), *sorted({(k - 1) % n_sites, (k + 1) % n_sites})]
        for job in mine["job_id"].tolist():
            dest[job] = choices[int(rng.integers(len(choices)))]
    return pd.Series(dest).reindex(jobs["job_id"].to_numpy())


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("recurrence", [True, False])  # the route path, and the agents' general path
def test_each_job_runs_where_the_declared_stream_sends_it(recurrence, ring):
    data = small_grid("random", jobs=400, sites=5)
    if ring:
        data["network"]["topology"] = "ring"
    jobs = emulator.run(data, backend="inprocess", recurrence=recurrence).jobs
    want = declared_destinations(jobs, data["run"]["seed"], 5, ring)
    assert jobs["exec_site"].tolist() == want.tolist()
    assert (jobs["exec_site"] != jobs["submit_site"]).sum() > 200  # most jobs leave: 4 choices in 5 (2 in 3)


@pytest.mark.parametrize("ring", [False, True])
def test_destinations_are_uniform_over_the_site_and_its_neighbors(ring):
    """Pearson's chi-square of the (submitting site, destination) counts against uniform draws
    over the declared choices; the bound is the statistic's mean plus ten standard deviations
    (df + 10 sqrt(2 df)), generous enough for a fixed seed, far below what leaving out one
    choice (the submitting site itself: about n/6 per site here) gives."""
    n_sites = 6
    data = small_grid("random", jobs=6000, sites=n_sites)
    if ring:
        data["network"]["topology"] = "ring"
    jobs = emulator.run(data, backend="inprocess", seed=11).jobs
    counts = jobs.groupby(["submit_site", "exec_site"]).size()
    chi2, df = 0.0, 0
    for k, n_k in jobs.groupby("submit_site").size().items():
        choices = range(n_sites) if not ring else sorted({k, (k - 1) % n_sites, (k + 1) % n_sites})
        assert set(counts.loc[k].index) <= set(choices)  # never outside the site and its neighbors
        expected = n_k / len(choices)
        chi2 += sum((counts.get((k, d), 0) - expected) ** 2 / expected for d in choices)
        df += len(choices) - 1
    assert chi2 < df + 10 * math.sqrt(2 * df), (chi2, df)


def test_jobs_wider_than_a_site_under_a_protocol_blind_to_widths_are_said_before_the_run(tmp_path, capsys):
    # validate said ok; the run then stopped mid-way (exit 3) when random sent a 3-processor
    # job to the 2-processor site. Protocols that declare the widths capability are not named.
    from gridemu.emulator.cli import main

    (tmp_path / "jobs.csv").write_text("release,size,site,procs\n" + "".join(f"{i},1.0,0,3\n" for i in range(5)))
    base = '[sites]\ncount = 2\nprocs = [4, 2]\n[workload]\nkind = "csv"\npath = "jobs.csv"\n'
    for protocol, said in (("random", True), ("power_of_d", True), ("averaging", False), ("local", False)):
        path = tmp_path / f"{protocol}.toml"
        path.write_text(base + f'[protocol]\nname = "{protocol}"\n')
        assert main(["validate", str(path)]) == 0
        err = capsys.readouterr().err
        line = "5 jobs need more processors than site site1 has (2); the " + protocol
        assert (line in err) == said, (protocol, err)
