"""Brute-force checks of thesis numbers that no instance of chapter 3 can give (Tables 3.3,
3.5 and 3.7), for docs/results/dedicated.md ("Numbers the thesis cannot have").

    python -m gridemu.experiments.dedicated_checks            # print the tables
    python -m gridemu.experiments.dedicated_checks --write    # and put them into dedicated.md

* **Table 3.3** (exponential instances, Figure 3.2): both organizations have jobs 1, 2, 4,
  ..., 2^(n-1) on one machine. By Proposition 3.1 an owner's jobs in SPT order dominate any
  other order of them (swapping two of its jobs into SPT order lowers its own C and leaves the
  other owner's unchanged), so the Pareto front over all (2n)! orders is the front over the
  C(2n, n) SPT interleavings. This script enumerates every interleaving, independently of
  ``brokers/scheduling_game`` (numpy only), and counts the Pareto-optimal vectors [C_1, C_2]
  and the interleavings that give them.
* **Tables 3.5 and 3.7**: an instance's "all solutions" |Π^SPT| is the product over the
  machines of the multinomial n! / Π_k n_{k,l}!, so it lies between 1 and M, the largest
  product over every split of n jobs per machine. A quantity X in [m, M] with mean μ has
  variance at most (M − μ)(μ − m) (Bhatia–Davis: E[(M − X)(X − m)] ≥ 0); the sample σ of c
  instances (divisor c − 1) is then at most sqrt(c / (c − 1) · (M − μ)(μ − m)). The script
  prints M, that bound and the thesis's σ, row by row.
* **"All solutions" under each reading of the split** (``dedicated_tables.READINGS``): the
  exact mean and σ of |Π^SPT| over the split's distribution (sizes do not change the count),
  enumerated over every split. Under composition and per-job the machines are independent,
  so the mean is E[m]^N and E[X²] = E[m²]^N for one machine's multinomial m; under same and
  rotated every machine has the same multinomial (rotating a split keeps its multiset), so
  X = m^N.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

#: Table 3.3's Pareto counts, n = 3..11.
T33_PARETO = {3: 16, 4: 44, 5: 116, 6: 278, 7: 620, 8: 1324, 9: 2752, 10: 5628, 11: 11400}
#: Tables 3.5 and 3.7's "all solutions" rows: (N, n) -> (mean, σ, instances in the row).
T35_T37_ALL = {
    (2, 5): (57.3, 32.4, 200),
    (2, 8): (1630.7, 1501.4, 200),
    (2, 10): (18998.6, 19852.4, 200),
    (2, 11): (59359.9, 66803.4, 200),
    (2, 12): (225004.9, 261132.4, 200),
    (3, 4): (1264.8, 1174.5, 50),
    (3, 5): (13251.2, 21163.1, 50),
}


def exponential_front(n: int, chunk: int = 50_000) -> tuple[int, int, int]:
    """(interleavings, Pareto-optimal vectors, interleavings on the front) of Figure 3.2's instance."""
    costs = []
    combos = itertools.combinations(range(2 * n), n)  # the positions of O_1's jobs
    while block := list(itertools.islice(combos, chunk)):
        first = np.zeros((len(block), 2 * n), dtype=bool)
        first[np.arange(len(block))[:, None], np.array(block)] = True
        i1, i2 = np.cumsum(first, axis=1) - 1, np.cumsum(~first, axis=1) - 1  # each owner's job index, SPT
        size = np.where(first, 2 ** np.maximum(i1, 0), 2 ** np.maximum(i2, 0))
        end = np.cumsum(size, axis=1)
        costs.append(np.stack([(end * first).sum(axis=1), (end * ~first).sum(axis=1)], axis=1))
    c = np.concatenate(costs)
    vectors, copies = np.unique(c, axis=0, return_counts=True)  # sorted by C_1, then C_2
    # A vector is dominated iff an earlier one (smaller C_1, or equal C_1 and smaller C_2) has C_2 <= its own.
    earlier_best = np.concatenate(([np.iinfo(np.int64).max], np.minimum.accumulate(vectors[:-1, 1])))
    on = vectors[:, 1] < earlier_best
    return len(c), int(on.sum()), int(copies[on].sum())


def splits(n: int, n_orgs: int):
    if n_orgs == 1:
        yield (n,)
        return
    for k in range(n + 1):
        for rest in splits(n - k, n_orgs - 1):
            yield (k,) + rest


def largest_count(n_orgs: int, n: int) -> int:
    """M: the most SPT grid schedules of an instance with n jobs on each of N machines."""
    per_machine = max(multinomial(s) for s in splits(n, n_orgs))
    return per_machine**n_orgs


def split_law(reading: str, n_orgs: int, n: int) -> dict[tuple[int, ...], Fraction]:
    """One machine's split (n_1, ..., n_N) and its probability under a reading of the text."""
    law: dict[tuple[int, ...], Fraction] = {}
    if reading in ("composition", "same", "rotated"):
        every = list(splits(n, n_orgs))
        return {c: Fraction(1, len(every)) for c in every}
    if reading == "per-job":
        return {c: Fraction(multinomial(c), n_orgs**n) for c in splits(n, n_orgs)}

    # sequential: n_1 uniform over {0..n}, n_2 over {0..n - n_1}, ..., the last the rest
    def walk(left: int, k: int, prob: Fraction, head: tuple[int, ...]) -> None:
        if k == n_orgs - 1:
            law[head + (left,)] = law.get(head + (left,), Fraction(0)) + prob
            return
        for a in range(left + 1):
            walk(left - a, k + 1, prob / (left + 1), head + (a,))

    walk(n, 0, Fraction(1), ())
    return law


def multinomial(c: tuple[int, ...]) -> int:
    return math.factorial(sum(c)) // math.prod(math.factorial(x) for x in c)


def count_moments(reading: str, n_orgs: int, n: int) -> tuple[float, float]:
    """Exact mean and σ of |Π^SPT| under a reading."""
    law = split_law(reading, n_orgs, n)
    if reading in ("same", "rotated"):
        m1 = sum(p * multinomial(c) ** n_orgs for c, p in law.items())
        m2 = sum(p * multinomial(c) ** (2 * n_orgs) for c, p in law.items())
    else:
        m1 = sum(p * multinomial(c) for c, p in law.items()) ** n_orgs
        m2 = sum(p * multinomial(c) ** 2 for c, p in law.items()) ** n_orgs
    return float(m1), math.sqrt(float(m2 - m1 * m1))


def main() -> None:
    print("Table 3.3, exponential instances: Pareto-optimal solutions, by complete enumeration")
    print("| n | interleavings C(2n, n) | Pareto-optimal vectors | interleavings on the front | thesis |")
    print("|---|---|---|---|---|")
    for n, thesis in T33_PARETO.items():
        total, vectors, schedules = exponential_front(n)
        flag = " (impossible)" if thesis > schedules else ""
        print(f"| {n} | {total:,} | {vectors:,} | {schedules:,} | {thesis:,}{flag} |")
    print()
    print("Tables 3.5 and 3.7, all solutions: the largest σ a row's mean allows")
    print("| N | n | M (most SPT grid schedules) | thesis mean | thesis σ | largest possible σ | |")
    print("|---|---|---|---|---|---|---|")
    for (n_orgs, n), (mean, sd, count) in T35_T37_ALL.items():
        top = largest_count(n_orgs, n)
        bound = math.sqrt(count / (count - 1) * max(0.0, (top - mean) * (mean - 1)))
        verdict = "impossible" if sd > bound or mean > top else "possible"
        print(f"| {n_orgs} | {n} | {top:,} | {mean:,} | {sd:,} | {bound:,.1f} | {verdict} |")
    # Table 3.7's average row: the mean of the n = 4 and n = 5 rows (100 instances, n = 6 has none)
    top, mean, sd = largest_count(3, 5), 7258.0, 16082.3
    bound = math.sqrt(100 / 99 * (top - mean) * (mean - 1))
    verdict = "impossible" if sd > bound else "possible"
    print(f"| 3 | average (4, 5) | {top:,} | {mean:,} | {sd:,} | {bound:,.1f} | {verdict} |")
    print()
    readings = ("composition", "per-job", "same", "rotated", "sequential")
    print(
        "All solutions |Π^SPT|: exact mean (σ) under each reading of the split, and z, the thesis's mean minus it"
        " in standard errors of a mean of the row's instances (200 for N = 2, 50 for N = 3)"
    )
    print("| N | n | thesis | " + " | ".join(readings) + " |")
    print("|---|---|---|" + "---|" * len(readings))
    for (n_orgs, n), (mean, sd, count) in T35_T37_ALL.items():
        cells = []
        for reading in readings:
            if reading == "sequential" and n_orgs == 2:
                cells.append("= composition")
                continue
            m, s = count_moments(reading, n_orgs, n)
            # how many standard errors of a mean of the row's instance count the thesis's mean is off
            cells.append(f"{m:,.1f} ({s:,.1f}), z = {(mean - m) / (s / math.sqrt(count)):+.1f}")
        print(f"| {n_orgs} | {n} | {mean:,} ({sd:,}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="put the output into dedicated.md")
    args = ap.parse_args()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        main()
    print(text.getvalue(), end="")
    if args.write:
        from gridemu.experiments.decentralization_tables import write_between

        doc = Path(__file__).with_name("dedicated.md")
        write_between(
            "<!-- checks:begin (dedicated_checks.py --write) -->", "<!-- checks:end -->", text.getvalue(), doc
        )
