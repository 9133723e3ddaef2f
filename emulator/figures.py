"""What every figure gridemu writes shares: the time unit of a run's axes, the file format
and resolution (``--format``, ``--dpi``), and the organizations' colours.

A run's figures show time in one unit chosen once from the run's span (:func:`time_axis`):
seconds, hours or days when ``run.time_unit`` is a unit of seconds, minutes, hours or days,
else the run's own unit unchanged. ``gridemu report`` draws every figure of a run with the
same :class:`TimeAxis`; a sweep's figures can do the same with :func:`time_axis` and
:func:`save_figure`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gridemu.model.errors import GridemuError

#: The file formats ``--format`` accepts (matplotlib writes each without extra packages).
FORMATS = ("png", "pdf", "svg")
#: PNG resolution when ``--dpi`` is not given; PDF and SVG are vector graphics (the dpi only
#: sets the resolution of any raster part in them).
DEFAULT_DPI = 110

#: Lengths of the time units a run may name (``run.time_unit``), in seconds.
UNIT_SECONDS = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
#: The units figures show, with the longest span (in seconds) each is chosen for: up to
#: 3 hours in seconds, up to 3 days in hours, beyond in days (axes of at most ~100 ticks' worth).
SHOWN = (("s", 1.0, 3 * 3600.0), ("hours", 3600.0, 3 * 86400.0), ("days", 86400.0, float("inf")))


@dataclass(frozen=True)
class TimeAxis:
    """Virtual time as a figure shows it: ``scale`` run time units make one shown ``label``."""

    scale: float
    label: str

    def __call__(self, t: Any) -> np.ndarray:
        return np.asarray(t, dtype=float) / self.scale


def time_axis(span: float, unit: str) -> TimeAxis:
    """The unit a run's figures show time in, from the run's ``span`` (in ``unit``, the run's
    ``run.time_unit``): seconds up to 3 hours, hours up to 3 days, days beyond. Never a unit
    shorter than the run's own (a run in hours is not shown in seconds). A unit that is not a
    known length of time ("time units", "rounds") is shown as it is."""
    length = UNIT_SECONDS.get(unit.strip().lower())
    if length is None:
        return TimeAxis(1.0, unit)
    seconds = max(float(span), 0.0) * length
    label, shown = next((name, size) for name, size, longest in SHOWN if seconds <= longest)
    if shown < length:  # a run counted in days stays in days, even over an hour
        label, shown = next((name, size) for name, size, _ in reversed(SHOWN) if size <= length)
        if shown != length:  # minutes: no shown unit matches, keep the run's
            return TimeAxis(1.0, unit)
    return TimeAxis(shown / length, label)


def duration_text(value: float, unit: str) -> str:
    """A length of virtual time for a label, in the largest of days, hours, minutes and
    seconds it makes at least one of ("1.01 hours", not "0.0422 days"); three significant
    digits. A unit that is not a length of time is kept."""
    length = UNIT_SECONDS.get(unit.strip().lower())
    if length is None:
        return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"
    seconds = value * length
    for name, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0), ("s", 1.0)):
        if seconds >= size or name == "s":
            shown = seconds / size
            return f"{shown:,.0f} {name}" if shown >= 100 else f"{shown:.3g} {name}"
    raise AssertionError("unreachable")


#: Durations a log axis of lengths of time is marked at, in seconds, with their labels.
DURATION_TICKS = (
    (1.0, "1 s"),
    (10.0, "10 s"),
    (60.0, "1 min"),
    (600.0, "10 min"),
    (3600.0, "1 h"),
    (86400.0, "1 day"),
    (864000.0, "10 days"),
    (8640000.0, "100 days"),
)


def mark_durations(ax: Any, axis: TimeAxis, unit: str, lo: float, hi: float) -> bool:
    """Mark a log x axis of durations (in ``axis``'s unit, shown from ``lo`` to ``hi``) at
    round lengths of time, "1 min", "1 h", "1 day", instead of powers of ten of the shown
    unit (10^-4 days). False, axis untouched, where ``unit`` is not a length of time or
    fewer than two marks fall in that range."""
    length = UNIT_SECONDS.get(unit.strip().lower())
    if length is None or not (0 < lo < hi):
        return False
    per_shown = axis.scale * length  # seconds in one shown unit
    ticks = [(sec / per_shown, label) for sec, label in DURATION_TICKS if lo <= sec / per_shown <= hi]
    if len(ticks) < 2:
        return False
    import matplotlib.ticker

    ax.set_xticks([t for t, _ in ticks], [label for _, label in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    return True


def run_span(jobs: Any) -> float:
    """How long a run's job table lasts: its last end, or its last release when no job ended."""
    end = np.asarray(jobs["end"], dtype=float)
    if np.isfinite(end).any():
        return float(np.nanmax(end))
    return float(np.nanmax(np.asarray(jobs["release"], dtype=float))) if len(jobs) else 0.0


def check_format(fmt: str, dpi: float) -> None:
    """``--format`` and ``--dpi``, checked before any work."""
    if fmt not in FORMATS:
        raise GridemuError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if not (isinstance(dpi, (int, float)) and np.isfinite(dpi) and 10 <= dpi <= 2400):
        raise GridemuError(f"--dpi: must be between 10 and 2400, got {dpi!r}")


#: Bytes a PNG's pixel takes while matplotlib draws and writes it: the RGBA canvas and the
#: copy the PNG writer makes of it.
PNG_BYTES_PER_PIXEL = 8


def check_canvas(name: str, width: float, height: float, fmt: str, dpi: float) -> None:
    """Refuse, before drawing, a PNG whose pixels cannot fit in this machine's memory (a
    1,000-panel Gantt chart at 2400 dpi was 28,800 x 97,440 pixels: 22 GB); ``width`` and
    ``height`` in inches. PDF and SVG hold no pixels."""
    if fmt != "png":
        return
    from gridemu.model.inputs import check_allocation

    w, h = round(width * dpi), round(height * dpi)
    check_allocation("--dpi", w * h * PNG_BYTES_PER_PIXEL, f"{name} at {dpi:g} dpi, {w:,} x {h:,} pixels,")


def figure_options(parser: Any, dpi: float = DEFAULT_DPI) -> None:
    """``--format`` and ``--dpi`` on an argparse parser: ``gridemu report`` and the scripts of
    docs/results that draw figures take the same two options."""
    parser.add_argument("--format", choices=FORMATS, default="png", help="of every figure: png (default), pdf or svg")
    parser.add_argument("--dpi", type=float, default=dpi, help=f"resolution of PNG figures (default {dpi:g})")


def save_figure(fig: Any, path: Path, fmt: str = "png", dpi: float = DEFAULT_DPI, tight: bool = False) -> Path:
    """Write ``fig`` to ``path`` with the suffix of ``fmt`` (png, pdf or svg) at ``dpi``, close
    it, and return the path written. PDF and SVG carry no creation date and SVG fixed ids, so
    the same figure gives the same bytes again."""
    import matplotlib.pyplot as plt

    check_format(fmt, dpi)
    out = Path(path).with_suffix(f".{fmt}")
    check_canvas(out.name, *fig.get_size_inches(), fmt, dpi)
    metadata = {"png": None, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]
    # SVG ids are random unless salted: a fixed salt keeps them the same from one save to the next.
    with plt.rc_context({"svg.hashsalt": "gridemu"}):
        fig.savefig(out, format=fmt, dpi=dpi, metadata=metadata, bbox_inches="tight" if tight else None)
    plt.close(fig)
    return out


#: Ten colours after tab10's, each picked in turn (from ColorBrewer's and matplotlib's) as the
#: farthest from all before it: no two of the twenty closer than 0.26 in RGB, none near white.
MORE_TEN = (
    "#252525",
    "#80cdc1",
    "#fdae6b",
    "#ff4d6d",
    "#00665e",
    "#c51b7d",
    "#5e3c99",
    "#b5cf6b",
    "#9e0142",
    "#1b9e77",
)


def org_colors(n: int) -> np.ndarray:
    """``n`` RGBA colours that tell organizations apart: tab10 up to 10; up to 20, then
    :data:`MORE_TEN` (tab20 pairs a dark and a light shade of one hue: org0 and org1 were two
    blues, and its light grey vanished on white); past 20, a
    perceptually spaced colormap (turbo) at evenly spaced points, taken in an order that puts
    consecutive organizations far apart on it."""
    import matplotlib

    if n <= 20:
        colors = [matplotlib.colormaps["tab10"](i) for i in range(10)] + [
            matplotlib.colors.to_rgba(c) for c in MORE_TEN
        ]
        return np.array(colors[:n])
    stride = _coprime_stride(n)
    points = (np.arange(n) * stride % n + 0.5) / n
    return np.array([matplotlib.colormaps["turbo"](0.05 + 0.9 * p) for p in points])


def _coprime_stride(n: int) -> int:
    """A step near n / 3 that visits every one of n points once (it shares no factor with n)."""
    step = max(1, round(n / 3))
    while np.gcd(step, n) != 1:
        step += 1
    return step


def parse_window(text: str | None) -> tuple[float, float] | None:
    """``--window T0:T1`` (run time units; either side may be left empty): the time range a
    Gantt chart draws. None: the whole run."""
    if text is None:
        return None
    lo, colon, hi = text.partition(":")
    try:
        if not colon:
            raise ValueError
        t0 = float(lo) if lo.strip() else -np.inf
        t1 = float(hi) if hi.strip() else np.inf
    except ValueError:
        raise GridemuError(f"--window: {text!r} is not T0:T1 (two times, such as 0:86400 or 3600:)") from None
    if np.isnan(t0) or np.isnan(t1) or not t0 < t1:
        raise GridemuError(f"--window: {text!r}: T0 must be less than T1")
    return t0, t1
