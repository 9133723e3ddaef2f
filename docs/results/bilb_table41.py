"""Thesis Table 4.1 (the two-player sender-receiver game of section 4.4), evaluated, with a
Monte Carlo check of the cost model EG of section 4.2, as markdown (for docs/results/bilb.md).

    python -m gridemu.experiments.bilb_table41            # print
    python -m gridemu.experiments.bilb_table41 --write    # and put it into bilb.md (t41 markers)

Pure numpy, no emulator run: a few seconds. The game's payoffs come from
``gridemu.brokers.bilb.cost.expected_delay`` (EG, equation 4.1's closed form); the
Monte Carlo check recomputes EG from the definition of g(r, L, Φ) alone, so a wrong closed
form (or a wrong transcription of it) would show as an estimate outside its interval.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gridemu.brokers.bilb.cost import expected_delay
from gridemu.experiments.script_args import hand_parsed

DOC = Path(__file__).with_name("bilb.md")
MARKERS = ("<!-- t41:begin (bilb_table41.py --write) -->", "<!-- t41:end -->")
RATE = 0.2  # λ of every figure and table of chapter 4
LOADS = (0.0, 2.0, 5.0, 10.0, 20.0)  # L: from an idle receiver to a queue of four mean gaps
FOREIGN = (1.0, 5.0, 20.0)  # Φ: a fifth, one and four mean gaps between local jobs
LIMIT_FOREIGN = (1.0, 5.0, 10.0, 25.0, 50.0, 100.0)  # Φ → ∞ at L = 0
MC_POINTS = ((0.0, 1.0), (2.0, 5.0), (5.0, 5.0), (10.0, 20.0), (20.0, 1.0))
MC_DRAWS = 400_000
MC_SEED = 41
Z95 = 1.959963984540054  # two-sided 95 % normal quantile (the sample is large)


def md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table: one header row, then one line per row (cells formatted by str)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def delay(arrival: np.ndarray, load: float, foreign: float) -> np.ndarray:
    """g(r, L, Φ) of section 4.2: the delay of the next local job, arriving at r > 0, when the
    receiver's queue ends at L and it has accepted a foreign load Φ run right after it.

    Φ if the job comes before L (it waits behind all of Φ), L + Φ - r while Φ runs (it waits
    for Φ's rest), 0 after Φ is done. Written from the cases, not from EG's closed form."""
    r = np.asarray(arrival, dtype=float)
    return np.where(r < load, foreign, np.where(r < load + foreign, load + foreign - r, 0.0))


def monte_carlo_eg(
    load: float, foreign: float, rate: float = RATE, draws: int = MC_DRAWS, seed: int = MC_SEED
) -> tuple[float, float]:
    """EG(L, Φ) (equation 4.1) estimated as the mean of g(r, L, Φ) over r ~ Exp(λ) (the gap to
    the next Poisson arrival), with the half-width of its 95 % confidence interval."""
    r = np.random.default_rng(seed).exponential(1.0 / rate, draws)
    g = delay(r, load, foreign)
    return float(g.mean()), Z95 * float(g.std(ddof=1)) / math.sqrt(draws)


def payoffs(load: float, foreign: float, rate: float = RATE) -> dict[str, float]:
    """Table 4.1 at one (L, Φ): (a) the simple game of Definition 4.1 when the sender sends
    and the receiver accepts, and (b) the cooperation game's payoff to each player.

    ``social`` is the sum of (a)'s payoffs, positive by Proposition 4.2; ``accept_loss`` is
    what accept costs the receiver against reject (whose payoff is 0), positive when accept
    is dominated (Corollary 4.1)."""
    eg = expected_delay(load, foreign, rate)
    return {
        "eg": eg,
        "sender": foreign,
        "receiver": -eg,
        "social": foreign - eg,
        "accept_loss": 0.0 - (-eg),
        "cooperate": (foreign - eg) / 2,
    }


def social_limit(foreign: float, rate: float = RATE) -> float:
    """Φ - EG(0, Φ) = (1 - e^{-λΦ}) / λ, which tends to 1/λ as Φ → ∞ (section 4.4)."""
    return foreign - expected_delay(0.0, foreign, rate)


def symbolic_tables() -> str:
    """Table 4.1 a and b as the thesis prints them (row player's payoff first)."""
    a = md_table(
        ["(a) simple game", "accept (printed: receive)", "reject"],
        [["send", "Φ_k, −EG(L_k, Φ_k)", "0, 0"], ["compute locally", "0, 0", "0, 0"]],
    )
    b = md_table(
        ["(b) cooperation game", "cooperate", "compute locally"],
        [["cooperate", "½(Φ_k − EG(L_k, Φ_k)), ½(Φ_k − EG(L_k, Φ_k))", "0, 0"], ["compute locally", "0, 0", "0, 0"]],
    )
    return a + "\n\n" + b


def game_table(loads: Sequence[float] = LOADS, foreign: Sequence[float] = FOREIGN, rate: float = RATE) -> str:
    """Table 4.1's (send, accept) and (cooperate, cooperate) cells on a grid of (L, Φ); the
    first row gives the thesis's symbolic entry of each column."""
    rows: list[list[object]] = [["thesis", "", "Φ_k", "−EG(L_k, Φ_k)", "Φ_k − EG > 0", "EG > 0", "½(Φ_k − EG) > 0"]]
    for phi in foreign:
        for load in loads:
            p = payoffs(load, phi, rate)
            rows.append(
                [
                    f"{load:g}",
                    f"{phi:g}",
                    f"{p['sender']:.3f}",
                    f"{p['receiver']:.3f}",
                    f"{p['social']:.3f}",
                    f"{p['accept_loss']:.3f}",
                    f"{p['cooperate']:.3f}",
                ]
            )
    return md_table(
        [
            "L",
            "Φ",
            "(a) sender: send, accepted",
            "(a) receiver: accept",
            "(a) social outcome (Prop. 4.2)",
            "(a) what accept costs the receiver against reject (Cor. 4.1)",
            "(b) each: cooperate, cooperate",
        ],
        rows,
    )


def limit_table(foreign: Sequence[float] = LIMIT_FOREIGN, rate: float = RATE) -> str:
    """The social outcome at L = 0 against Φ, approaching 1/λ from below."""
    rows = [
        [f"{phi:g}", f"{social_limit(phi, rate):.4f}", f"{1 / rate - social_limit(phi, rate):.4f}"] for phi in foreign
    ]
    return md_table(["Φ", "Φ − EG(0, Φ)", f"1/λ − (Φ − EG(0, Φ)), 1/λ = {1 / rate:g}"], rows)


def mc_results(
    points: Sequence[tuple[float, float]] = MC_POINTS, rate: float = RATE, draws: int = MC_DRAWS, seed: int = MC_SEED
) -> list[tuple[float, float, float, float, float]]:
    """(L, Φ, EG from expected_delay, Monte Carlo mean, 95 % half-width) per point; one seed per
    point, derived from ``seed``, so each line is reproducible on its own."""
    return [
        (load, phi, expected_delay(load, phi, rate), *monte_carlo_eg(load, phi, rate, draws, seed + i))
        for i, (load, phi) in enumerate(points)
    ]


def mc_table(results: Sequence[tuple[float, float, float, float, float]], draws: int = MC_DRAWS) -> str:
    """expected_delay beside the Monte Carlo estimate of EG from g's definition."""
    rows = [
        [
            f"{load:g}",
            f"{phi:g}",
            f"{eg:.4f}",
            f"{mean:.4f} ± {half:.4f}",
            f"{(mean - eg) / half:+.2f}",
            "yes" if abs(mean - eg) <= half else "**no**",
        ]
        for load, phi, eg, mean, half in results
    ]
    return md_table(
        [
            "L",
            "Φ",
            "EG (expected_delay)",
            f"Monte Carlo mean of g ± 95 % CI ({draws:,} draws)",
            "(estimate − EG) / half-width",
            "EG inside the interval",
        ],
        rows,
    )


def render(rate: float = RATE) -> str:
    """The whole t41 section of bilb.md: what it shows, the thesis's tables, then the figures."""
    lim = social_limit(LIMIT_FOREIGN[-1], rate)
    mc = mc_results(rate=rate)
    grid = [[payoffs(load, phi, rate) for load in LOADS] for phi in FOREIGN]
    cells = [p for row in grid for p in row]
    # the claims of the paragraph below, counted on the grid rather than asserted
    positive = sum(p["social"] > 0 for p in cells)
    dominated = sum(p["receiver"] < 0 for p in cells)
    falling = all(a["social"] > b["social"] for row in grid for a, b in zip(row, row[1:]))
    inside = sum(abs(mean - eg) <= half for _, _, eg, mean, half in mc)
    text = f"""Evaluated with `brokers/bilb/cost.py: expected_delay` (λ = {rate:g}; `python
docs/results/bilb_table41.py --write`). The sender's gain Φ exceeds the receiver's expected
loss EG, i.e. the social outcome Φ − EG = e^(−λL)(1 − e^(−λΦ))/λ is positive (Proposition
4.2), on {positive} of the {len(cells)} lines, and it {"falls" if falling else "does not always fall"} as the receiver's
queue L grows at fixed Φ; yet the receiver's payoff −EG is below reject's 0 on {dominated} of the
{len(cells)} lines, so accept is dominated and the simple game never balances (Corollary 4.1).
In the cooperation game (b) each player gets half the social outcome, so cooperate dominates
wherever that is positive. At L = 0 the social outcome approaches 1/λ = {1 / rate:g}
from below (Φ = {LIMIT_FOREIGN[-1]:g}: {lim:.4f}). Every payoff is per **next local job**
only: section 4.2 leaves out the jobs after it and any later balancing, and Table 4.1 b is
the thesis's informal picture of players who alternate between sending and receiving, not a
game it solves. The Monte Carlo check draws the next local job's arrival r ~ Exp(λ) and
averages g(r, L, Φ) from its definition: EG's closed form lies inside {inside} of the {len(mc)}
95 % intervals (about one in twenty may miss by chance alone)."""
    return "\n\n".join(
        [
            text,
            "Table 4.1 as printed:",
            symbolic_tables(),
            "Evaluated (time units; the receiver's and the sender's payoffs are those of the (send, accept) cell):",
            game_table(rate=rate),
            "The social outcome at L = 0 as Φ grows:",
            limit_table(rate=rate),
            "EG against its definition:",
            mc_table(mc),
        ]
    )


def emit(text: str, markers: tuple[str, str], argv: Sequence[str]) -> None:
    """Print a section; with ``--write`` in ``argv`` also put it between ``markers`` in bilb.md
    (write_between re-reads the page right before writing, so others' edits are kept)."""
    print(text)
    if "--write" in argv:
        # imported only here: the sibling script pulls in matplotlib, which printing does not need
        from gridemu.experiments.decentralization_tables import write_between

        write_between(*markers, text, DOC)


if __name__ == "__main__":
    sys.argv[1:] = hand_parsed(__doc__, sys.argv[1:], ('--write',))
    emit(render(), MARKERS, sys.argv[1:])
