"""The scheduling game of thesis ch. 3 (sections 3.4-3.6) emulated: organizations' strategy
profiles played over many rounds, each round a fresh instance of section 3.7.1.

    python -m gridemu.experiments.dedicated_game            # print the tables (about 7 minutes, see below)
    python -m gridemu.experiments.dedicated_game --write    # into dedicated.md, and img/dedicated-game.png
    python -m gridemu.experiments.dedicated_game --orgs 2,3,4,5,6,7,8,9,10   # the sweep by N over other N

Each profile's result is kept under ``--cache`` (runs/dedicated-game), named by the code's
commit: a stopped run, started again on the same commit, goes on where it stopped.

Every profile is the shipped scenario ``dedicated`` (3 organizations, 8 jobs per machine,
sizes 1..10) with ``workload.rounds`` = ROUNDS and ``protocol.strategy`` set as the row says;
the same seed, so every profile plays the same instances. Organization 1 is the one that
deviates. Figures are from each run's summary.json (computed from the job table).

Time: the first command above took 435 s of CPU (one process; 740 s of wall time on 2 cores shared
with other jobs, load 5 to 10); the profiles' table was printed within the first 100 s, the
rest is the sweep by N. ``--orgs`` 2 to 10 took about 65 minutes of wall time at the lowest priority
beside three other jobs on 2 cores.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

import gridemu.emulator as emulator
from gridemu.emulator.figures import figure_options, save_figure
from gridemu.emulator.provenance import git_commit
from gridemu.emulator.results import json_default
from gridemu.experiments.decentralization_tables import write_between

DOC = Path(__file__).with_name("dedicated.md")
IMG = Path(__file__).with_name("img") / "dedicated-game.png"
MARKERS = ("<!-- game:begin -->", "<!-- game:end -->")
BY_N = ("<!-- game-n:begin -->", "<!-- game-n:end -->")
ROUNDS = 1000
ROUNDS_BY_N = 500
ORGS = (2, 3, 5, 8)
PROFILES = [
    ("everyone follows the proposal (cooperation)", "follow", {}),
    ("everyone plays MJF (the one-shot Nash equilibrium, Prop. 3.8)", "mjf", {}),
    ("organization 1 plays MJF, the others follow", {"default": "follow", 1: "mjf"}, {}),
    ("organization 1 plays MJF, the others tit-for-tat", {"default": "tit-for-tat", 1: "mjf"}, {}),
    ("organization 1 plays MJF, the others grim", {"default": "grim", 1: "mjf"}, {}),
    ("everyone tit-for-tat", "tit-for-tat", {}),
    ("everyone follows **SPT** (the social optimum, Cor. 3.4)", "follow", {"protocol.proposal": "spt"}),
]


#: Each profile's result is kept here (``--cache``), named by the code's commit and the run's
#: settings, so an interrupted sweep goes on where it stopped; a checkout with changed files
#: keeps nothing (its results could not be told from the commit's).
CACHE = Path("runs/dedicated-game")
_cache: Path | None = CACHE


def play(strategy, extra: dict, seed: int = 1, rounds: int = ROUNDS):
    overrides = {"workload.rounds": rounds, "protocol.strategy": strategy, **extra}
    kept = _kept(overrides, seed)
    if kept is not None and kept.is_file():
        return json.loads(kept.read_text())
    result = emulator.run("dedicated", seed=seed, overrides=overrides).summary["protocol"]
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(result, default=json_default))
    return result


def _kept(overrides: dict, seed: int) -> Path | None:
    code = git_commit(Path(__file__).resolve().parent) if _cache is not None else None
    if code is None or code["modified"]:
        return None
    key = json.dumps([code["commit"], seed, overrides], default=str)  # insertion order: the code's
    return _cache / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def payoff_matrix(p: dict, rounds: int, n: int) -> np.ndarray:
    u = np.zeros((rounds, n))
    for r in p["per_round"]:
        u[r["round"], r["org"]] = r["u"]
    return u


def ci(x: np.ndarray) -> str:
    """Mean ± the 95 % half-width (normal; hundreds of rounds, each a fresh instance)."""
    return f"{x.mean():+.2f} ± {1.96 * x.std(ddof=1) / np.sqrt(len(x)):.2f}"


def table() -> tuple[str, dict]:
    lines = [
        "| profile | mean u_1 (organization 1) | mean u of the others | rounds someone has u_k < 0 | "
        "ΣC score (1 − ΣC / ΣC(MJF)) | MJF played, share of machine-rounds |",
        "|---|---|---|---|---|---|",
    ]
    curves = {}
    for label, strategy, extra in PROFILES:
        p = play(strategy, extra)
        u = payoff_matrix(p, ROUNDS, 3)
        negative = int((u < -1e-9).any(axis=1).sum())
        mjf = sum(o["moves"]["mjf"] for o in p["per_org"]) / (3 * ROUNDS)
        lines.append(
            f"| {label} | {ci(u[:, 1])} | {ci(u[:, [0, 2]].mean(axis=1))} | {negative} of {ROUNDS} | "
            f"{100 * p['sum_score_executed']:.1f} % | {100 * mjf:.0f} % |"
        )
        curves[label] = u
    return "\n".join(lines), curves


def by_orgs(orgs: tuple[int, ...] = ORGS) -> str:
    """One defector (organization 1) against followers and against tit-for-tat, by N."""
    lines = [
        "| N | everyone follows: mean u | organization 1 defects, the others follow: its u / the others' u "
        "| against tit-for-tat: its u / the others' u |",
        "|---|---|---|---|",
    ]
    for n in orgs:

        def run(strategy):
            return payoff_matrix(play(strategy, {"sites.count": n}, rounds=ROUNDS_BY_N), ROUNDS_BY_N, n)

        coop, alone, tft = (
            run("follow"),
            run({"default": "follow", 1: "mjf"}),
            run({"default": "tit-for-tat", 1: "mjf"}),
        )
        others = [k for k in range(n) if k != 1]
        lines.append(
            f"| {n} | {ci(coop.mean(axis=1))} | {ci(alone[:, 1])} / {ci(alone[:, others].mean(axis=1))} "
            f"| {ci(tft[:, 1])} / {ci(tft[:, others].mean(axis=1))} |"
        )
    return "\n".join(lines)


def figure(curves: dict, fmt: str = "png", dpi: float = 110) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [PROFILES[i][0] for i in (0, 2, 3, 4)]
    fig, axes = plt.subplots(1, len(shown), figsize=(14, 3.8), sharey=True)
    rounds = np.arange(1, ROUNDS + 1)
    for ax, label in zip(axes, shown):
        u = curves[label]
        for k, style in (
            (1, dict(color="black", lw=2.0, label="organization 1")),
            (0, dict(color="tab:blue", lw=1.2, label="organization 0")),
            (2, dict(color="tab:orange", lw=1.2, label="organization 2")),
        ):
            ax.plot(rounds, np.cumsum(u[:, k]), **style)
        ax.axhline(0, color="grey", lw=0.8, ls=":")
        ax.set_title(label.replace(" (cooperation)", ""), fontsize=9)
        ax.set_xlabel("round")
    axes[0].set_ylabel("cumulative payoff $\\Sigma\\, u_k$\n(time units gained over MJF)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"The scheduling game, 3 organizations, 8 jobs per machine, {ROUNDS} rounds (gridemu run dedicated)",
        fontsize=10,
    )
    fig.tight_layout()
    IMG.parent.mkdir(exist_ok=True)
    print(f"wrote {save_figure(fig, IMG, fmt, dpi)}")


def main(write: bool, orgs: tuple[int, ...] = ORGS, fmt: str = "png", dpi: float = 110) -> None:
    text, curves = table()
    print(text)
    per_n = by_orgs(orgs)
    print(per_n)
    if write:
        write_between(*MARKERS, text, DOC)
        write_between(*BY_N, per_n, DOC)
        figure(curves, fmt, dpi)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="put the tables into dedicated.md and draw the figure")
    ap.add_argument(
        "--orgs", type=lambda t: tuple(int(x) for x in t.split(",")), default=ORGS, help="N of the sweep by N"
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=CACHE,
        help=f"where each profile's result is kept, so a stopped run resumes (default {CACHE}); 'none': nowhere",
    )
    figure_options(ap, dpi=110)
    args = ap.parse_args()
    _cache = None if str(args.cache) == "none" else args.cache
    main(args.write, args.orgs, args.format, args.dpi)
