"""Where the whole ``emulator.run`` calls of ``bench/protocols.py`` go, in-process against Ray.

    python bench/protocols.py --models 10000x1M,averaging1000 --engines inprocess,ray2 --json a.json
    python bench/protocols.py --models neighbors10000 --engines inprocess,ray2 --json b.json
    python bench/plot_protocols.py a.json b.json --out docs/img/protocols-ray.png

One panel per model, one bar per gridemu engine (the bare heapq loop and SimPy have no
phases and are left out), split into the call's parts: the kernel's setup (shards built;
on Ray, actors started and the shards built in them), the window loop, gathering the
shards' results, and the rest of the call, which is the driver's alone (scenario facts,
job and site tables, checks, summary: call s - wall s). The black tick on a Ray bar marks the
least that call could take on the machine's cores, the CPU it kept busy over the cores
(call cpu s / cores): no split of the work among shards brings it below that. The dashed line is issue
13's target for 2 Ray shards, the in-process call / 1.3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from protocols import MODELS, ray_shards, ray_target  # noqa: E402

PARTS = (  # (row key or None for the driver's rest, label, colour)
    ("setup_s", "setup (shards built; Ray: actors started)", "#9ecae1"),
    ("loop_s", "window loop", "#3182bd"),
    ("gather_s", "gathering the shards' results", "#fdae6b"),
    (None, "driver alone (tables, checks, summary)", "#bdbdbd"),
)


def gridemu_rows(paths: list[Path]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """The gridemu rows of the benchmark files by model, in-process first; the machine's CPUs."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    cpus = 0
    for path in paths:
        try:
            data = json.loads(path.read_text())
            cpus = max(cpus, int(data["environment"]["cpus"]))
            rows = list(data["rows"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(
                f"plot_protocols.py: {path}: not a bench/protocols.py --json file ({type(exc).__name__}: {exc})",
                file=sys.stderr,
            )
            raise SystemExit(2) from None
        for row in rows:
            if row["engine"] == "inprocess" or ray_shards(row["engine"]) is not None:
                if "call_s" in row and "error" not in row:
                    by_model.setdefault(row["model"], []).append(row)
    for rows in by_model.values():
        rows.sort(key=lambda r: (r["engine"] != "inprocess", ray_shards(r["engine"]) or 0))
    return by_model, cpus


def describe(model: str) -> str:
    spec = MODELS.get(model, {})
    if spec.get("protocol") == "random":
        return "random broker"
    if spec.get("protocol") == "averaging":
        return "averaging, " + ("8 random neighbors each" if "topology" in spec else "all-to-all")
    return spec.get("protocol", "")


def plot(by_model: dict[str, list[dict[str, Any]]], cpus: int, out: Path) -> None:
    models = list(by_model)
    fig, axes = plt.subplots(
        len(models), 1, figsize=(9, 1.2 + 1.35 * sum(len(by_model[m]) for m in models)), squeeze=False
    )
    for ax, model in zip(axes[:, 0], models):
        rows = by_model[model]
        inproc = next((r for r in rows if r["engine"] == "inprocess"), None)
        labels = []
        for y, row in enumerate(rows):
            left = 0.0
            rest = row["call_s"] - row["setup_s"] - row["loop_s"] - row.get("gather_s", 0.0)
            for key, name, colour in PARTS:
                width = row.get(key, 0.0) if key else max(0.0, rest)
                ax.barh(y, width, left=left, color=colour, edgecolor="white", label=name)
                left += width
            if row.get("call_cpu_s") and row["engine"] != "inprocess":  # one process: one core's worth
                floor = row["call_cpu_s"] / cpus
                ax.plot([floor, floor], [y - 0.4, y + 0.4], color="black", lw=2.5)
            text = f"{row['call_s']:.2f} s"
            if inproc is not None and row is not inproc:
                text += f"  ({inproc['call_s'] / row['call_s']:.2f}x in-process)"
            ax.text(left, y, "  " + text, va="center", fontsize=9)
            labels.append(
                "in-process, 1 shard" if row["engine"] == "inprocess" else f"Ray, {ray_shards(row['engine'])} shards"
            )
        speedup, issue = ray_target(model, 2)
        if inproc is not None and speedup and any(ray_shards(r["engine"]) == 2 for r in rows):
            ax.axvline(inproc["call_s"] / speedup, color="#de2d26", ls="--", lw=1.2)
            ax.text(
                inproc["call_s"] / speedup,
                -0.48,
                f" 2 shards' target ({issue}): {speedup:g}x",
                color="#de2d26",
                fontsize=8,
                va="top",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
            )
        ax.set_yticks(range(len(rows)), labels)
        ax.invert_yaxis()
        first = rows[0]
        # Two lines: on one, the longest models' titles ran past the panel's right edge.
        ax.set_title(
            f"{model} ({describe(model)})\n{first['sites']:,} sites, {first['jobs']:,} jobs, "
            f"{first.get('messages', 0):,} messages",
            fontsize=10,
            loc="left",
        )
        ax.set_xlim(0, max(r["call_s"] for r in rows) * 1.45)
        ax.set_xlabel("seconds of the emulator.run call (ray.init not included)")
        ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=colour, label=name) for _, name, colour in PARTS] + [
        Line2D([], [], color="black", lw=2.5, label=f"least a Ray call could take on {cpus} cores (its CPU / {cpus})"),
        Line2D(
            [],
            [],
            color="#de2d26",
            ls="--",
            lw=1.2,
            label="the target for 2 Ray shards: in-process call / the speed-up asked",
        ),
    ]
    fig.legend(handles=handles, loc="upper center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / fig.get_size_inches()[1]))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path, help="JSON files written by bench/protocols.py --json")
    ap.add_argument("--out", type=Path, default=Path("protocols-ray.png"))
    args = ap.parse_args(argv)
    by_model, cpus = gridemu_rows(args.results)
    if not by_model:
        ap.error("no gridemu row with a whole-call time in these files")
    plot(by_model, cpus, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
