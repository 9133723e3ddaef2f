"""A corpus of bad inputs, each of which must give one clear line and exit code 2.

Each case is a command line of ``gridemu`` and the files it needs (written into a fresh
folder): scenario keys of the shipped scenarios set to wrong types, NaN, infinities, huge,
zero and negative numbers, unknown and missing keys; broken TOML, CSV, SWF, XML and
topology files, folders and binary files where files belong; bad ``--set``, ``--out`` and
other options; ``report``, ``sweep`` and ``resume`` on folders that are not what they need.

``python -m tests.corpus`` runs every case and prints how many were tried, clean (exit 2
and one ``gridemu: error:`` line), tracebacks, hangs (past a time limit) and passed (exit 0
on bad input), and each case that is not clean; docs/reliability.md quotes its counts.
``tests/test_corpus.py`` asserts that every case is clean.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

#: A file's content: text, bytes, or ``DIR`` for a folder.
DIR = object()


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]  # "{d}" stands for the case's folder
    files: dict[str, object] = field(default_factory=dict)


def _set(scenario: str, key: str, value: str, command: str = "validate") -> Case:
    return Case(f"{scenario}: {key}={value}", (command, scenario, "--set", f"{key}={value}"))


# (scenario, key, bad values as TOML text). Every value is wrong for its key.
KEYS: list[tuple[str, str, list[str]]] = [
    ("quickstart", "run.seed", ["-1", "1.5", "'x'", "true"]),
    ("quickstart", "run.horizon", ["0", "-5", "nan", "'soon'"]),
    ("quickstart", "run.backend", ["'gpu'", "1"]),
    ("quickstart", "run.shards", ["-1", "1.5", "100000"]),
    ("quickstart", "run.packing", ["'zigzag'"]),
    ("quickstart", "run.lookahead", ["0", "1e6", "-1", "nan"]),
    ("quickstart", "run.bogus", ["1"]),
    (
        "quickstart",
        "network.latency",
        ["0", "-1", "inf", "nan", "1e-300", "'x'", "{dist='normal'}", "{dist='uniform', low=2.0, high=1.0}"],
    ),
    ("quickstart", "network.topology", ["'star'", "'random:0'", "'tree:0'", "'smallworld:3:0.1'", "5"]),
    ("gm-grid", "network.topology", ["'ring'"]),
    ("quickstart", "network.latency_matrix", ["[[1.0]]", "'x'", "[[0.0, 0.0], [0.0, 0.0]]"]),
    ("quickstart", "network.bogus", ["1"]),
    ("quickstart", "sites.count", ["0", "-3", "1.5", "1e12"]),
    (
        "quickstart",
        "sites.procs",
        [
            "0",
            "1e12",
            "-2",
            "'many'",
            "{dist='zipf', alpha=1}",
            "{dist='uniform', low=5, high=2}",
            "{dist='zipf', a=0.5}",
        ],
    ),
    ("quickstart", "sites.speed", ["0", "inf", "-1", "[1.0, 2.0]"]),
    ("quickstart", "sites.bogus", ["1"]),
    ("quickstart", "scheduler.name", ["'lifo'", "3"]),
    ("quickstart", "workload.kind", ["'magic'"]),
    (
        "quickstart",
        "workload.rate",
        ["0", "-1", "inf", "nan", "1e308", "'x'", "[]", "[1.0, 2.0]", "{default=1.0, 99=2.0}"],
    ),
    ("quickstart", "workload.alpha", ["0", "-1", "inf", "2e-6"]),
    ("quickstart", "workload.beta", ["inf", "0", "nan"]),
    ("quickstart", "workload.jobs", ["0", "-5", "1.5", "1e10"]),
    ("quickstart", "workload.bogus", ["1"]),
    ("quickstart", "protocol.name", ["'magic'", "1"]),
    ("quickstart", "protocol.period", ["0", "-1", "inf", "'x'"]),
    ("quickstart", "protocol.exchange", ["'shout'"]),
    ("quickstart", "protocol.bogus", ["1"]),
    ("quickstart", "metrics.counterfactual", ["'maybe'"]),
    ("quickstart", "metrics.fairness", ["'yes'"]),
    ("bilb", "protocol.limit", ["-1", "'x'"]),
    ("bilb", "workload.until", ["-1", "'x'"]),
    ("shapley", "protocol.samples", ["1.5e10", "-1"]),
    ("shapley", "workload.path", ["'no-such.swf'"]),
    ("shapley", "workload.t_start", ["'soon'", "-1e99"]),
    ("molba", "protocol.alpha", ["-1", "'x'"]),
    ("gm-grid", "protocol.bogus", ["1"]),
    ("fairshare-idle", "policy.providers", ["'x'"]),
    ("fairshare-idle", "policy.approach", ["'magic'"]),
    ("fairshare-idle", "policy.default", ["'nowhere'"]),
    ("fairshare-idle", "policy.bogus", ["1"]),
    ("fairshare-idle", "protocol.refresh", ["0", "-1"]),
    ("faults", "faults.message_loss", ["2", "-0.1", "'x'"]),
    ("faults", "faults.mttr", ["0", "inf"]),
    ("faults", "faults.on_crash", ["'explode'"]),
    ("faults", "faults.crash", ["[{site=99, at=1.0, duration=1.0}]", "[{site=0, at=-1.0, duration=1.0}]", "{site=0}"]),
    ("faults", "faults.link", ["[{sites=[1, 1], at=0.0, duration=1.0}]"]),
    ("faults", "faults.bogus", ["1"]),
    ("gm-grid", "faults.message_loss", ["0.1"]),
]

TOML_OK = """
[sites]
count = 2
procs = 2
[workload]
kind = "{kind}"
path = "{{d}}/{file}"
"""

BINARY = bytes(range(256)) * 4


def _workload_file(kind: str, name: str, content: object) -> Case:
    ext = "csv" if kind == "csv" else "swf"
    files = {"s.toml": TOML_OK.format(kind=kind, file=f"w.{ext}")}
    if content is not None:
        files[f"w.{ext}"] = content
    return Case(f"{kind} file: {name}", ("validate", "{d}/s.toml"), files)


def cases() -> list[Case]:
    out = [_set(sc, key, v) for sc, key, values in KEYS for v in values]
    header = "release,size,site,procs\n"
    for name, content in [
        ("missing", None),
        ("a folder", DIR),
        ("binary", BINARY),
        ("empty", ""),
        ("only a header", header),
        ("a broken number", header + "0.0,abc,0,1\n"),
        ("size inf", header + "0.0,inf,0,1\n"),
        ("too wide for its site", header + "0.0,1.0,0,5\n"),
        ("an unknown site", header + "0.0,1.0,9,1\n"),
        ("a missing field", header + "0.0,,0,1\n"),
        ("negative release", header + "-1.0,1.0,0,1\n"),
    ]:
        out.append(_workload_file("csv", name, content))
    swf_line = "1 0 0 100 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
    for name, content in [
        ("missing", None),
        ("a folder", DIR),
        ("binary", BINARY),
        ("0 bytes", ""),
        ("comments only", "; a header\n"),
        ("a line of 5 fields", "1 0 0 100 1\n"),
        ("a word for a number", swf_line.replace("100", "abc")),
        ("a negative run time for every job", swf_line.replace(" 100 ", " -5 ")),
    ]:
        out.append(_workload_file("swf", name, content))
    out.append(
        Case(
            "swf: a window with no job",
            ("validate", "{d}/s.toml", "--set", "workload.t_start=1e9"),
            {"s.toml": TOML_OK.format(kind="swf", file="w.swf"), "w.swf": swf_line},
        )
    )
    for name, content in [
        ("broken TOML", "[run\nseed = 1\n"),
        ("binary", BINARY),
        ("empty", ""),
        ("a folder", DIR),
        ("no sites", "[run]\nseed = 1\n"),
        ("an unknown section", "[sites]\ncount = 2\n[bogus]\nx = 1\n"),
        ("protocol keys without a name", "[sites]\ncount = 2\n[protocol]\nperiod = 10.0\n"),
        ("an empty site list", "sites = []\n"),
        ("duplicate site names", '[[sites]]\nname = "a"\n[[sites]]\nname = "a"\n'),
        ("sites as a number", "sites = 3\n"),
        ("a job list of strings", '[sites]\ncount = 2\n[workload]\nkind = "jobs"\nlist = ["a"]\n'),
        ("a job without size", '[sites]\ncount = 2\n[workload]\nkind = "jobs"\nlist = [{release = 0.0, site = 0}]\n'),
        (
            "a job of size inf",
            '[sites]\ncount = 2\n[workload]\nkind = "jobs"\nlist = [{release = 0.0, size = inf, site = 0}]\n',
        ),
        ("a fairshare scheduler without a policy", '[sites]\ncount = 2\n[scheduler]\nname = "fairshare"\n'),
        ("a planned scheduler without its protocol", '[sites]\ncount = 2\n[scheduler]\nname = "planned"\n'),
    ]:
        out.append(Case(f"scenario file: {name}", ("validate", "{d}/s.toml"), {"s.toml": content}))
    policy = (
        '[sites]\ncount = 2\n[scheduler]\nname = "fairshare"\n'
        '[protocol]\nname = "fairshare"\n[policy]\nfile = "{d}/p.xml"\n'
    )
    for name, content in [
        ("missing", None),
        ("a folder", DIR),
        ("binary", BINARY),
        ("broken XML", "<policy><entry"),
        ("empty", ""),
    ]:
        files = {"s.toml": policy}
        if content is not None:
            files["p.xml"] = content
        out.append(Case(f"policy file: {name}", ("validate", "{d}/s.toml"), files))
    topo = '[sites]\ncount = 3\n[network]\ntopology_file = "{d}/t.csv"\n[protocol]\nname = "random"\n'
    for name, content in [
        ("missing", None),
        ("a folder", DIR),
        ("binary", BINARY),
        ("a self-loop", "source,target\n0,0\n1,2\n"),
        ("an unknown site", "source,target\n0,1\n1,7\n"),
        ("disconnected", "source,target\n0,1\n"),
        ("a bad latency", "source,target,latency\n0,1,-1\n1,2,1\n"),
        ("a broken line", "source,target\n0\n1,2\n"),
    ]:
        files = {"s.toml": topo}
        if content is not None:
            files["t.csv"] = content
        out.append(Case(f"topology file: {name}", ("validate", "{d}/s.toml"), files))
    out += [
        Case("scenario: no such name", ("validate", "no-such-scenario")),
        Case("--set without =", ("validate", "quickstart", "--set", "workload.rate")),
        Case("--set with an empty key part", ("validate", "quickstart", "--set", "workload..rate=1")),
        Case("--set with no key", ("validate", "quickstart", "--set", "=1")),
        Case("--set inside a number", ("validate", "quickstart", "--set", "run.seed.x=1")),
        Case("--seed negative", ("run", "quickstart", "--seed", "-1", "--backend", "inprocess", "--quiet")),
        Case("--shards negative", ("run", "quickstart", "--shards", "-1", "--backend", "inprocess", "--quiet")),
        Case(
            "--out is a file", ("run", "quickstart", "--backend", "inprocess", "--quiet", "--out", "{d}/f"), {"f": "x"}
        ),
        Case(
            "--out under a file",
            ("run", "quickstart", "--backend", "inprocess", "--quiet", "--out", "{d}/f/run"),
            {"f": "x"},
        ),
        Case(
            "--out holds an earlier run",
            ("run", "quickstart", "--backend", "inprocess", "--quiet", "--out", "{d}/r"),
            {"r/summary.json": "{}", "r/jobs.parquet": "x"},
        ),
        Case(
            "--checkpoint negative",
            ("run", "quickstart", "--backend", "inprocess", "--quiet", "--checkpoint", "-1", "--out", "{d}/r"),
        ),
        Case("report: not a run folder", ("report", "{d}"), {"x.txt": "x"}),
        Case("report: no such folder", ("report", "{d}/nothing")),
        Case(
            "report: corrupt summary.json",
            ("report", "{d}/r"),
            {"r/summary.json": "{not json", "r/jobs.parquet": BINARY},
        ),
        Case("report: corrupt jobs.parquet", ("report", "{d}/r"), {"r/summary.json": "{}", "r/jobs.parquet": BINARY}),
        Case("sweep: unknown key", ("sweep", "quickstart", "--grid", "bogus.x=1,2", "--backend", "inprocess")),
        Case("sweep: no values", ("sweep", "quickstart", "--grid", "workload.rate=", "--backend", "inprocess")),
        Case("sweep: a bad value", ("sweep", "quickstart", "--grid", "workload.alpha=-1,2", "--backend", "inprocess")),
        Case(
            "sweep: repeat 0",
            ("sweep", "quickstart", "--grid", "protocol.name=local", "--repeat", "0", "--backend", "inprocess"),
        ),
        Case(
            "sweep: --out is a file",
            ("sweep", "quickstart", "--grid", "protocol.name=local", "--backend", "inprocess", "--out", "{d}/f"),
            {"f": "x"},
        ),
        Case("resume: no checkpoint", ("resume", "{d}"), {"x.txt": "x"}),
        Case("resume: corrupt checkpoint", ("resume", "{d}"), {"checkpoint.pkl": BINARY}),
        Case("resume: no such folder", ("resume", "{d}/nothing")),
        Case("--address unreachable", ("run", "quickstart", "--address", "127.0.0.1:1", "--quiet")),
        Case("--address malformed", ("run", "quickstart", "--address", "nowhere", "--quiet")),
    ]
    return out


# ----------------------------------------------------------------------------- running


@dataclass
class Outcome:
    case: Case
    verdict: str  # clean | traceback | hang | passed | unclear
    code: int | None
    err: str
    seconds: float


class _Hang(Exception):
    pass


def _write(folder: Path, files: dict[str, object]) -> None:
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is DIR:
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(str(content).replace("{d}", str(folder)))


def run_case(case: Case, limit: float = 30.0) -> Outcome:
    """Run one case in this process (``gridemu.emulator.cli.main``) within ``limit`` seconds."""
    from gridemu.emulator.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, case.files)
        argv = [a.replace("{d}", str(folder)) for a in case.argv]
        err, out = io.StringIO(), io.StringIO()

        def hang(*_: object) -> None:
            raise _Hang

        old = signal.signal(signal.SIGALRM, hang)
        signal.setitimer(signal.ITIMER_REAL, limit)
        t0 = time.perf_counter()
        code: int | None = None
        verdict = ""
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                code = main(argv)
        except _Hang:
            verdict = "hang"
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - any escape is what this corpus looks for
            err.write(traceback.format_exc())
            verdict = "traceback"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        seconds = time.perf_counter() - t0
    text = err.getvalue()
    if not verdict:
        lines = [line for line in text.strip().splitlines() if line]
        if "Traceback" in text or "Traceback" in out.getvalue():
            verdict = "traceback"
        elif code == 0:
            verdict = "passed"
        elif code == 2 and len(lines) == 1 and lines[0].startswith("gridemu: error:"):
            verdict = "clean"
        else:
            verdict = "unclear"
    return Outcome(case, verdict, code, text, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run the corpus of bad inputs; print the counts and every case not clean."
    )
    parser.add_argument("--limit", type=float, default=30.0, help="seconds a case may take before it counts as a hang")
    parser.add_argument("-k", default="", help="only cases whose name holds this text")
    args = parser.parse_args(argv)
    results = [run_case(c, args.limit) for c in cases() if args.k in c.name]
    counts = {v: sum(r.verdict == v for r in results) for v in ("clean", "traceback", "hang", "passed", "unclear")}
    print(f"tried {len(results)}: " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    for r in results:
        if r.verdict != "clean":
            last = r.err.strip().splitlines()[-1] if r.err.strip() else ""
            print(f"  {r.verdict:9s} exit {r.code}  {r.case.name}: {last[:200]}")
    return 0 if counts["clean"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
