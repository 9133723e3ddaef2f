"""A property-based fuzzer over every input file kind but the scenario TOML (issue 44, part 5;
tests/test_fuzz.py and tests/test_gate.py mutate the scenarios): CSV job lists, SWF traces,
edge files, fairshare policy files (XML and TOML), checkpoints given to ``gridemu resume``,
and run folders given to ``gridemu report`` and ``gridemu export``. Each example starts from a
small valid file, mutates its bytes (flips, truncation, inserted lines, unicode digits, huge
numbers, empty fields, duplicated headers) and calls the CLI in-process. The rule: exit 0, or
exit 2 with exactly one ``gridemu: error:`` line; never a traceback, never a deleted input.

Checkpoints and run folders come from a small stopped run of each of several protocols
(``PROTOCOL_BASES``: averaging, bilb, molba in both modes, fairshare, gm, directcontr,
power-of-d), each with state of its own in the checkpoint; besides damaged files, forged
ones (a checksum that matches a graph naming ``os:system`` and the like) must run no code
and be refused.

Hangs and memory: a run the gate accepts must end within ``WALL_FACTOR`` times the
estimate's wall time plus ``WALL_SLACK`` seconds, and peak under ``MEMORY_FACTOR`` times its
estimated memory plus ``MEMORY_SLACK``. The in-process runs get the time limit as a SIGALRM
(a hang fails the test instead of stopping CI); memory is measured on runs in a child
process (``test_runs_validate_accepts_end_within_the_estimate_and_its_memory``): the child
is killed when its resident memory (``/proc/PID/status`` VmRSS, looked at every 20 ms) or its
time passes the limit, and its exact peak is ``os.wait4``'s ``ru_maxrss``, the child's own
(``RUSAGE_CHILDREN`` would be the largest of every child the test run ever waited for).
Not ``RLIMIT_AS``: numpy's BLAS threads, pyarrow's allocator and Ray reserve address space
they never touch (gigabytes of virtual memory for a run of 130 MiB resident), so a cap on
address space either fails sound runs or must be so loose it catches nothing; and a
MemoryError it provokes would end as the one-line error the rule accepts.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import gridemu.emulator as emulator
from gridemu.emulator.cli import main
from gridemu.emulator.estimate import Estimate
from gridemu.emulator.gate import gate
from gridemu.emulator.scenario import load_scenario, parse_override
from gridemu.model.errors import GridemuError
from tests.test_checkpoint import stop_at

#: CI: a fixed set of examples, small enough that the file takes about 20 s on two cores.
#: By hand (docs/reliability.md, "The fuzzer"): ``GRIDEMU_FUZZ_SEED=$RANDOM
#: GRIDEMU_FUZZ_EXAMPLES=500 pytest tests/test_fuzz_inputs.py``.
FUZZ_SEED = os.environ.get("GRIDEMU_FUZZ_SEED")
EXAMPLES = os.environ.get("GRIDEMU_FUZZ_EXAMPLES")


def fuzzed(ci_examples: int) -> Callable:
    def wrap(test):
        test = settings(
            max_examples=int(EXAMPLES) if EXAMPLES else ci_examples,
            deadline=None,
            # derandomize: CI runs the same examples every time (a finding belongs in a fix
            # and a regression test, not in a flaky run); explore with a seed by hand.
            derandomize=FUZZ_SEED is None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )(test)
        return seed(int(FUZZ_SEED))(test) if FUZZ_SEED is not None else test

    return wrap


# --------------------------------------------------------------------------- the rule


def call(argv: list[object]) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:
        return int(exc.code or 0)


def check_rule(capsys, argv: list[object], inputs: list[Path]) -> int:
    """Run argv and assert the rule; returns the exit code."""
    code = call(argv)  # any exception but SystemExit fails the test with its traceback
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out, captured.err
    assert code in (0, 2), f"exit code {code}: {captured.err!r}"
    errors = [line for line in captured.err.splitlines() if line.startswith("gridemu: error:")]
    if code == 2:
        assert len(errors) == 1, f"expected one error line, got {captured.err!r}"
        assert len(errors[0]) > len("gridemu: error: "), captured.err
    else:
        assert not errors, captured.err
    for path in inputs:
        assert path.exists(), f"{path} was deleted"
    return code


# --------------------------------------------------------------------------- mutations of bytes

JUNK_LINES = [
    b"",
    b",,,",
    b"\xff\xfe\x00",
    b"1e999999,1e999999,1e999999",
    b"99999999999999999999999999999999,1,1",
    b"nan,inf,-inf",
    b"-1,-1,-1",
    b"\xc2\xb2,\xd9\xa1,\xd9\xa3.\xd9\xa5",  # ², ١, ٣.٥: str.isdigit is true, int() is not
    b"0x10,1_0,+1",
    b"; a comment",
    b"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
    b"<policy-entry/>",
    b"[policy]",
    b'"a","b"',
]
TOKENS = [b"", b"\xc2\xb2", b"\xd9\xa3", b"1e308", b"1e999", b"-0", b"nan", b"10000000000000000000000", b"x", b"1.5"]


@st.composite
def mutated(draw, base: bytes) -> bytes:
    """One to three of: flip a byte, truncate, insert or delete a line, replace a field with
    a unicode digit, a huge number or nothing, duplicate the first line."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "token", "token", "header"]))
        lines = bytes(data).split(b"\n")
        if how == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        elif how == "truncate":
            del data[draw(st.integers(0, len(data))) :]
        elif how == "insert":
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(JUNK_LINES)))
            data = bytearray(b"\n".join(lines))
        elif how == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            data = bytearray(b"\n".join(lines))
        elif how == "header" and lines:
            lines.insert(1, lines[0])
            data = bytearray(b"\n".join(lines))
        elif how == "token":
            # a run of digits (a number, a share, a site) replaced whole
            spans = [(m.start(), m.end()) for m in _NUMBER.finditer(bytes(data))]
            if spans:
                a, b = draw(st.sampled_from(spans))
                data[a:b] = draw(st.sampled_from(TOKENS))
    return bytes(data)


_NUMBER = re.compile(rb"-?[0-9]+(\.[0-9]+)?")


@contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gridemu-fuzz-") as d:
        yield Path(d)


def run_argv(scenario: Path, out: Path) -> list[object]:
    return ["run", scenario, "--backend", "inprocess", "--quiet", "--out", out]


def fuzz_scenario_file(capsys, name: str, content: bytes, scenario: str) -> None:
    """Write the scenario and its mutated input file, run it, check the rule; a run the gate
    refuses must be refused, and one it accepts must end within the limit derived from its
    estimate (in this process: the memory limit is test_runs_validate_accepts_...'s, in a child)."""
    with folder() as d:
        (d / name).write_bytes(content)
        (d / "s.toml").write_text(scenario)
        est = accepted(d / "s.toml", [])
        with time_limit(WALL_FACTOR * est.wall + WALL_SLACK if est is not None else WALL_SLACK):
            code = check_rule(capsys, run_argv(d / "s.toml", d / "out"), [d / name, d / "s.toml"])
        assert (code == 0) == (d / "out" / "jobs.parquet").exists()
        assert est is not None or code == 2, "the gate refused a run that then ran"


class Hang(BaseException):
    """A run past its time limit (a BaseException: the CLI turns no Exception into exit 2)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in this thread past ``seconds`` of wall time: a limit that catches a hang."""

    def expired(signum, frame):
        raise Hang(f"still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- text input files

CSV = b"release,size,site,procs\n0,1.0,0,1\n0.5,2.0,1,2\n1.0,1.5,2,1\n2.0,0.5,0,2\n"
CSV_SCENARIO = '[sites]\ncount = 3\nprocs = 2\n[workload]\nkind = "csv"\npath = "jobs.csv"\n'

SWF = (
    b"; Version: 2.2\n; MaxJobs: 4\n; MaxProcs: 8\n"
    b"1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    b"2 10 0 50 1 -1 -1 1 100 -1 1 2 1 -1 1 -1 -1 -1\n"
    b"3 20 3 80 4 -1 -1 4 90 -1 1 3 2 -1 1 -1 -1 -1\n"
    b"4 35 1 30 1 -1 -1 1 60 -1 1 1 2 -1 1 -1 -1 -1\n"
)
SWF_SCENARIO = '[sites]\ncount = 2\nprocs = 4\n[workload]\nkind = "swf"\npath = "trace.swf"\n'

EDGES = b"source,target,latency\n0,1,1.0\n1,2,0.5\n2,3,2.0\n3,0,1.0\n"
EDGES_SCENARIO = (
    '[sites]\ncount = 4\nprocs = 2\n[network]\ntopology_file = "edges.csv"\n'
    '[workload]\nkind = "poisson"\njobs = 20\n[protocol]\nname = "random"\n'
)

POLICY_XML = (
    b'<policy-entry type="resource" name="R">\n'
    b'  <usage-source at="local"/>\n'
    b"  <child-entries>\n"
    b'    <policy-entry type="VO" name="A" share="60"/>\n'
    b'    <policy-entry type="VO" name="B" share="40"/>\n'
    b"  </child-entries>\n"
    b"</policy-entry>\n"
)
POLICY_TOML = (
    b'[policy]\nname = "R"\ntype = "resource"\nscope = "local"\n'
    b'[[policy.children]]\nname = "A"\ntype = "VO"\nshare = 60\n'
    b'[[policy.children]]\nname = "B"\ntype = "VO"\nshare = 40\n'
)


def policy_scenario(name: str) -> str:
    return (
        '[run]\nhorizon = 600.0\n[sites]\ncount = 2\nprocs = 2\n[scheduler]\nname = "fairshare"\n'
        f'[protocol]\nname = "fairshare"\nrefresh = 60.0\n[policy]\nfile = "{name}"\n'
        '[workload]\nkind = "streams"\nuntil = 600.0\n'
        '[[workload.streams]]\ngroup = "A"\ninterval = 100.0\nsize = 50.0\n'
        '[[workload.streams]]\ngroup = "B"\ninterval = 150.0\nsize = 50.0\n'
    )


TEXT_KINDS = {
    "csv": ("jobs.csv", CSV, CSV_SCENARIO),
    "swf": ("trace.swf", SWF, SWF_SCENARIO),
    "edges": ("edges.csv", EDGES, EDGES_SCENARIO),
    "policy-xml": ("policy.xml", POLICY_XML, policy_scenario("policy.xml")),
    "policy-toml": ("policy.toml", POLICY_TOML, policy_scenario("policy.toml")),
}


@pytest.mark.parametrize("kind", sorted(TEXT_KINDS))
def test_the_base_inputs_run(capsys, kind):
    """The base of each mutation is valid: a mutation that is refused is refused for itself."""
    name, content, scenario = TEXT_KINDS[kind]
    with folder() as d:
        (d / name).write_bytes(content)
        (d / "s.toml").write_text(scenario)
        assert check_rule(capsys, run_argv(d / "s.toml", d / "out"), [d / name]) == 0


@fuzzed(ci_examples=150)
@given(kind=st.sampled_from(sorted(TEXT_KINDS)), data=st.data())
def test_mutated_input_files_are_refused_with_one_line_or_run(capsys, kind, data):
    name, content, scenario = TEXT_KINDS[kind]
    fuzz_scenario_file(capsys, name, data.draw(mutated(content)), scenario)


# --------------------------------------------------------------------------- checkpoints and run folders

#: One small run of each protocol whose checkpoint holds state of its own (offers and pieces
#: in flight, plans, usage ledgers, sampled views, load tables): shipped scenarios made a
#: second or so with overrides. Stopped after STOP_WINDOW windows with a checkpoint at every
#: barrier, so the checkpoint holds the shards' state, not checkpoint zero's.
PROTOCOL_BASES: dict[str, tuple[str, dict[str, object]]] = {
    "averaging": ("quickstart", {"workload.jobs": 300}),
    "bilb": ("bilb-topology", {"sites.count": 10, "workload.until": 20.0}),
    "molba": ("molba", {"workload.jobs": 20, "sites.count": 4}),
    "molba-negotiated": ("molba", {"workload.jobs": 20, "sites.count": 4, "protocol.mode": "negotiated"}),
    "fairshare": ("fairshare-imbalanced", {"workload.until": 300.0, "run.horizon": 600.0}),
    "gm": ("gm-grid", {"workload.jobs": 30}),
    "directcontr": ("shapley-scale", {"sites.count": 4, "workload.until": 20.0}),
    "power-of-d": ("power-of-d", {"sites.count": 12, "workload.jobs": 100, "metrics.counterfactual": "none"}),
}
STOP_WINDOW = 6
CHECKPOINT = "checkpoint.gridemu"


class Bases:
    """The stopped and the finished run of each protocol, made when an example first needs
    them (a CI run with few examples makes only the ones it draws)."""

    def __init__(self, root: Path):
        self.root = root
        self._stopped: dict[str, Path] = {}
        self._finished: dict[str, Path] = {}

    def stopped(self, key: str) -> Path:
        if key not in self._stopped:
            name, overrides = PROTOCOL_BASES[key]
            out = self.root / f"stopped-{key}"
            with pytest.raises(KeyboardInterrupt):
                emulator.run(
                    name,
                    backend="inprocess",
                    shards=2,
                    overrides=overrides,
                    out=out,
                    checkpoint=0,
                    on_progress=stop_at(STOP_WINDOW),
                )
            assert (out / CHECKPOINT).is_file()
            self._stopped[key] = out
        return self._stopped[key]

    def finished(self, key: str) -> Path:
        """The stopped run resumed to its end through the CLI: a run folder of that protocol."""
        if key not in self._finished:
            out = self.root / f"finished-{key}"
            shutil.copytree(self.stopped(key), out)
            assert call(["resume", out, "--backend", "inprocess", "--quiet"]) == 0
            assert (out / "jobs.parquet").is_file() and not (out / CHECKPOINT).exists()
            self._finished[key] = out
        return self._finished[key]


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> Bases:
    return Bases(tmp_path_factory.mktemp("bases"))


@st.composite
def mutated_checkpoint(draw, base: bytes) -> bytes:
    """Truncated, flipped bytes, junk spliced in, or another file's header line."""
    data = bytearray(base)
    header_end = data.index(b"\n") + 1
    how = draw(st.sampled_from(["truncate", "flip", "flip-header", "header", "splice"]))
    if how == "truncate":
        del data[draw(st.integers(0, len(data) - 1)) :]
    elif how == "flip":
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
    elif how == "flip-header":
        data[draw(st.integers(0, header_end - 1))] ^= draw(st.integers(1, 255))
    elif how == "header":
        data[:header_end] = draw(
            st.sampled_from(
                [
                    b"PK\x03\x04\n",  # a zip's, as the payload's own
                    b"\x80\x04\x95\n",  # a pickle's
                    b"{}\n",
                    b'{"magic": "gridemu-checkpoint", "format": 99}\n',
                    b"release,size,site\n",
                    b"; Version: 2.2\n",
                    bytes(data[:header_end]).replace(b'"bytes": ', b'"bytes": 1'),
                    b"\n",
                ]
            )
        )
    else:
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from([b"\x00" * 64, b"\n", b"{}", b"\xc2\xb2"]))
    return bytes(data)


def resealed(graph: bytes, arrays: dict[str, bytes]) -> bytes:
    """A checkpoint file whose payload is ``graph`` and ``arrays`` (the .npy members), with a
    header that matches it: what someone who forges a checkpoint, not damages one, writes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("graph.npy", _npy(graph))
        for name, member in arrays.items():
            zf.writestr(name, member)
    payload = buf.getvalue()
    header = {"magic": "gridemu-checkpoint", "format": 7, "sha256": hashlib.sha256(payload).hexdigest()}
    return json.dumps(header | {"bytes": len(payload)}).encode() + b"\n" + payload


def _npy(data: bytes) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(data, dtype=np.uint8), allow_pickle=False)
    return buf.getvalue()


def opened(checkpoint: bytes) -> tuple[bytes, dict[str, bytes]]:
    """(the JSON graph, the other .npy members) of a genuine checkpoint file."""
    payload = checkpoint[checkpoint.index(b"\n") + 1 :]
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    graph = np.load(io.BytesIO(members.pop("graph.npy")), allow_pickle=False).tobytes()
    return graph, members


#: Names a forged graph may put where a class or a rebuilder is named: each would run code
#: or build an object gridemu never wrote, if a name were trusted.
HOSTILE_NAMES = [
    "os:system",
    "builtins:eval",
    "builtins:exec",
    "subprocess:Popen",
    "pickle:loads",
    "numpy:load",
    "gridemu.emulator.cli:main",
    "gridemu.emulator.checkpoint:save",
    "gridemu.model:__builtins__",
    "gridemu.emulator.plain:Decoder.value",
    "tests.test_fuzz_inputs:Bases",
]
_CLASS_NAME = re.compile(rb'"(gridemu\.[A-Za-z0-9_.]+:[A-Za-z0-9_.]+)"')


@st.composite
def forged_checkpoint(draw, base: bytes) -> bytes:
    """A checkpoint whose checksum matches but whose graph names what gridemu never writes: a
    class or rebuilder swapped for a hostile name, or a node list or root that is not a
    graph's. Nothing of it may run: the resume is refused with one line."""
    graph, arrays = opened(base)
    how = draw(st.sampled_from(["name", "name", "nodes", "roots", "json"]))
    if how == "name":
        names = sorted(set(_CLASS_NAME.findall(graph)))
        victim = draw(st.sampled_from(names))
        graph = graph.replace(b'"' + victim + b'"', json.dumps(draw(st.sampled_from(HOSTILE_NAMES))).encode())
    elif how == "nodes":
        doc = json.loads(graph)
        doc["nodes"] = draw(st.sampled_from([[], None, 1, [["obj", "os:system", []]], doc["nodes"][:1]]))
        graph = json.dumps(doc).encode()
    elif how == "roots":
        doc = json.loads(graph)
        doc["roots"] = draw(st.sampled_from([{}, [], {"meta": {"r": 10**9}}, {"meta": None, "shards": 1}]))
        graph = json.dumps(doc).encode()
    else:
        graph = graph[: draw(st.integers(0, len(graph) - 1))]
    return resealed(graph, arrays)


@pytest.mark.parametrize("key", sorted(PROTOCOL_BASES))
def test_each_protocols_stopped_run_resumes_and_a_resealed_copy_too(bases, key):
    """The bases are genuine (a refusal below is the mutation's), and opening a checkpoint and
    sealing it again, unchanged, gives a file that resumes: the forgeries below differ from a
    genuine file only by what they name."""
    graph, arrays = opened((bases.stopped(key) / CHECKPOINT).read_bytes())
    with folder() as d:
        shutil.copytree(bases.stopped(key), d / "r")
        (d / "r" / CHECKPOINT).write_bytes(resealed(graph, arrays))
        assert call(["resume", d / "r", "--backend", "inprocess", "--quiet"]) == 0
        finished = bases.finished(key)
        assert (d / "r" / "jobs.parquet").read_bytes() == (finished / "jobs.parquet").read_bytes()


@fuzzed(ci_examples=48)
@given(key=st.sampled_from(sorted(PROTOCOL_BASES)), data=st.data())
def test_mutated_checkpoints_are_refused_with_one_line(capsys, bases, key, data):
    content = data.draw(mutated_checkpoint((bases.stopped(key) / CHECKPOINT).read_bytes()))
    with folder() as d:
        shutil.copytree(bases.stopped(key), d / "r")
        (d / "r" / CHECKPOINT).write_bytes(content)
        code = check_rule(capsys, ["resume", d / "r", "--backend", "inprocess", "--quiet"], [])
        # Only a genuine file resumes (a splice inside the header's own whitespace may leave it one)
        if code == 2:
            assert (d / "r" / CHECKPOINT).read_bytes() == content, "a refused checkpoint was changed"
        else:
            assert (d / "r" / "jobs.parquet").exists()


@fuzzed(ci_examples=24)
@given(key=st.sampled_from(sorted(PROTOCOL_BASES)), data=st.data())
def test_forged_checkpoints_run_no_code_and_are_refused_with_one_line(capsys, bases, key, data):
    content = data.draw(forged_checkpoint((bases.stopped(key) / CHECKPOINT).read_bytes()))
    with folder() as d:
        shutil.copytree(bases.stopped(key), d / "r")
        (d / "r" / CHECKPOINT).write_bytes(content)
        assert check_rule(capsys, ["resume", d / "r", "--backend", "inprocess", "--quiet"], []) == 2
        assert (d / "r" / CHECKPOINT).read_bytes() == content


@st.composite
def damaged_folder(draw, files: list[str]) -> tuple[str, str, bytes, int, int]:
    """(file, how, payload, offset, xor): delete one of the run's files, corrupt it, or add a junk file."""
    how = draw(st.sampled_from(["delete", "truncate", "flip", "replace", "junk"]))
    name = draw(st.sampled_from(files))
    if how == "junk":
        name = draw(st.sampled_from(["notes.txt", "jobs.csv", "x.parquet", ".hidden"]))
    payload = draw(st.sampled_from([b"", b"\x00\xff" * 10, b"{}", b'{"global": 1}', b"[run]\nseed = ", b"PAR1"]))
    return name, how, payload, draw(st.integers(0, 10**6)), draw(st.integers(1, 255))


def damage(run: Path, name: str, how: str, payload: bytes, at: int, xor: int) -> None:
    path = run / name
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: at % max(len(data), 1)])
    elif how == "flip":
        data = bytearray(path.read_bytes())
        data[at % len(data)] ^= xor
        path.write_bytes(bytes(data))
    else:  # replace, or a junk file beside the results
        path.write_bytes(payload)


@fuzzed(ci_examples=80)
@given(
    key=st.sampled_from(sorted(PROTOCOL_BASES)),
    command=st.sampled_from(["report", "export-swf", "export-evalys"]),
    data=st.data(),
)
def test_damaged_run_folders_are_refused_with_one_line(capsys, bases, key, command, data):
    finished = bases.finished(key)
    # every file of the folder, the protocol's own too (fragments, policy, time series)
    files = sorted(p.name for p in finished.iterdir() if p.is_file())
    damaged = data.draw(damaged_folder(files))
    with folder() as d:
        shutil.copytree(finished, d / "r")
        damage(d / "r", *damaged)
        kept = [p for p in (d / "r").iterdir()]
        argv = {
            "report": ["report", d / "r", "--no-plot"],
            "export-swf": ["export", d / "r", "--format", "swf"],
            "export-evalys": ["export", d / "r", "--format", "evalys"],
        }[command]
        check_rule(capsys, argv, kept)


# --------------------------------------------------------------------------- runs validate accepted: time and memory

#: A run that validate accepted must end within WALL_FACTOR times the gate's estimated wall
#: time plus WALL_SLACK seconds (the child's interpreter start and imports, about a second,
#: on a machine that other work may load several times over: a limit that catches a hang,
#: not a timing), and its peak resident memory must stay under MEMORY_FACTOR times the
#: estimated peak plus MEMORY_SLACK (the estimate is a linear fit, within about 2x of the
#: measured runs of docs/reliability.md; the issue's memory bombs went to gigabytes).
WALL_FACTOR = 20.0
WALL_SLACK = 30.0
MEMORY_FACTOR = 1.5
MEMORY_SLACK = 256 * 2**20
#: The child runs the command in its own process (``main`` with an argv runs in-process, not
#: in the supervised grandchild of the ``gridemu`` command), and as it exits writes its own
#: peak resident memory (VmHWM) where GRIDEMU_TEST_PEAK says. Not wait4's ru_maxrss: Linux
#: carries a process's high-water mark across exec, and subprocess starts the child by
#: vfork, on this test process's memory, so ru_maxrss was this process's peak when it was
#: the larger (a 133 MB run read as 438 MB late in a test session).
CHILD = """
import atexit, os, sys

def peak():
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(os.environ["GRIDEMU_TEST_PEAK"], "w") as out:
        out.write(hwm)

atexit.register(peak)
from gridemu.emulator.cli import main

sys.exit(main(sys.argv[1:]))
"""


@dataclass
class Bounded:
    code: int
    err: str
    peak: int  # bytes: the child's own peak resident memory (see CHILD), else wait4's ru_maxrss
    wall: float
    killed: str  # "", or the limit the child was killed at: "time" or "memory"


def _rss(pid: int) -> int:
    """The resident memory of ``pid`` now, in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_bounded(argv: list[object], seconds: float, memory: float) -> Bounded:
    """Run ``gridemu ARGV`` in a fresh interpreter, as :func:`bounded`, with the child's own peak."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "peak"
        done = bounded(
            [sys.executable, "-c", CHILD, *map(str, argv)], seconds, memory, {"GRIDEMU_TEST_PEAK": str(path)}
        )
        if path.exists():  # not where the child was killed: then wait4's figure stands
            done.peak = int(path.read_text()) * 1024
        return done


def bounded(command: list[str], seconds: float, memory: float, env: dict[str, str] | None = None) -> Bounded:
    """Run ``command`` (with ``env`` added to this process's environment), killed past
    ``seconds`` of wall time or ``memory`` bytes resident (looked at every 20 ms, so a bomb is
    stopped on its way up), and return its exit code, standard error and peak (``os.wait4``'s
    ru_maxrss: resident, not virtual, and no less than this process's own; see CHILD)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )
        start, killed = time.monotonic(), ""
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > seconds:
                killed = "time"
            elif _rss(proc.pid) > memory:
                killed = "memory"
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        err.seek(0)
        text = err.read().decode(errors="replace")
    return Bounded(proc.returncode, text, usage.ru_maxrss * 1024, time.monotonic() - start, killed)


def accepted(ref: str | Path, sets: list[str]) -> Estimate | None:
    """The gate's estimate of the run, or None when the gate refuses it (as validate does)."""
    try:
        return gate(load_scenario(ref, dict(parse_override(p) for p in sets)), warn=False)[0]
    except GridemuError:
        return None


def check_bounded(capsys, ref: str | Path, sets: list[str], out: Path, inputs: list[Path]) -> int | None:
    """validate, and when it accepts, the run in a bounded child: the rule, the time limit,
    the memory limit. Returns the run's exit code (None: validate refused)."""
    argv = [ref, *(a for p in sets for a in ("--set", p))]
    code = call(["validate", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    assert code in (0, 2), f"validate exit code {code}: {captured.err!r}"
    if code == 2:
        assert captured.err.startswith("gridemu: error:"), captured.err
        return None
    est = accepted(ref, sets)
    assert est is not None, f"validate accepted what the gate refuses: {argv}"
    seconds = WALL_FACTOR * est.wall + WALL_SLACK
    memory = MEMORY_FACTOR * est.memory + MEMORY_SLACK
    done = run_bounded(["run", *argv, "--backend", "inprocess", "--quiet", "--out", out], seconds, memory)
    what = f"{argv}: estimated {est.wall:.2g} s and {est.memory / 2**20:.0f} MiB ({est.describe()})"
    assert not done.killed, f"killed past its {done.killed} limit ({seconds:.0f} s, {memory / 2**20:.0f} MiB): {what}"
    assert done.peak <= memory, f"peak {done.peak / 2**20:.0f} MiB, more than {memory / 2**20:.0f} MiB: {what}"
    assert "Traceback" not in done.err, done.err
    assert done.code in (0, 2), f"exit code {done.code}: {done.err!r}"
    errors = [line for line in done.err.splitlines() if line.startswith("gridemu: error:")]
    assert len(errors) == (done.code == 2), done.err
    assert (done.code == 0) == (out / "jobs.parquet").exists()
    for path in inputs:
        assert path.exists(), f"{path} was deleted"
    return done.code


#: --set mutations toward what cannot end or fit (issue 44's float-resolution cases, and
#: milder ones the gate accepts), drawn zero to two at a time; a key a scenario does not
#: have is refused by validate, which the rule allows too.
HARD_SETS = [
    "workload.rate=1e-300",
    "workload.beta=1e300",
    "network.latency=1e300",
    "sites.speed=1e-300",
    "protocol.period=1e-9",
    "protocol.refresh=1e-9",
    "workload.rate=1e-3",
    "workload.beta=50.0",
    "network.latency=5.0",
    "sites.speed=0.01",
    "protocol.period=0.05",
    "workload.jobs=2000",
    "sites.procs=64",
    'metrics.counterfactual="local"',
]


def _set(key: str, value: object) -> str:
    return f"{key}={json.dumps(value)}"


@fuzzed(ci_examples=6)
@given(
    base=st.sampled_from(sorted(TEXT_KINDS) + sorted(PROTOCOL_BASES)),
    sets=st.lists(st.sampled_from(HARD_SETS), max_size=2, unique=True),
    data=st.data(),
)
def test_runs_validate_accepts_end_within_the_estimate_and_its_memory(capsys, base, sets, data):
    with folder() as d:
        if base in TEXT_KINDS:
            name, content, scenario = TEXT_KINDS[base]
            if data.draw(st.booleans()):
                content = data.draw(mutated(content))
            (d / name).write_bytes(content)
            (d / "s.toml").write_text(scenario)
            ref: str | Path = d / "s.toml"
            inputs = [d / name, d / "s.toml"]
        else:
            ref, overrides = PROTOCOL_BASES[base]
            sets = [_set(k, v) for k, v in overrides.items()] + sets
            inputs = []
        check_bounded(capsys, ref, sets, d / "out", inputs)


def test_the_bounds_catch_a_hang_and_a_memory_bomb():
    """The limits of :func:`bounded` hold: a child past its time is killed, and one past its
    memory (a 400 MiB array, against a 200 MiB limit) too, well before their own end."""
    hang = bounded([sys.executable, "-c", "import time; time.sleep(600)"], 2.0, 2**40)
    assert hang.killed == "time" and hang.wall < 60
    bomb = [sys.executable, "-c", "import numpy as np, time; a = np.ones(50 * 2**20); time.sleep(600)"]
    done = bounded(bomb, 600, 200 * 2**20)
    assert done.killed == "memory" and done.peak > 200 * 2**20 and done.wall < 60


# --------------------------------------------------------------------------- what the fuzzer found


def test_an_swf_field_of_1e999_is_one_line_naming_the_line(capsys):
    """A run time of 1e999 in an integer field: an OverflowError traceback (int(inf))."""
    with folder() as d:
        (d / "s.toml").write_text(SWF_SCENARIO)
        for bad, needle in ((b"2 10 0 50 1e999 ", "non-finite '1e999'"), (b"2 10 0 50 \xd9\xa1 ", "non-numeric")):
            (d / "trace.swf").write_bytes(SWF.replace(b"2 10 0 50 1 ", bad))
            assert call(run_argv(d / "s.toml", d / "out")) == 2
            err = capsys.readouterr().err
            assert err.startswith("gridemu: error:") and len(err.strip().splitlines()) == 1, err
            assert "trace.swf:5" in err and needle in err, err


@pytest.mark.parametrize(
    ("summary", "key"),
    [
        (b"{}", "summary.global"),
        (b'{"global": 1}', "summary.global"),
        (None, "global.jobs_by_state"),  # a flipped byte in a key: "jobs_by_state" -> "jobs_by_stat\x00"
        (
            b'{"global": {"protocol": "x", "sites": 1, "seed": 1, "jobs_by_state": {}}, "organizations": []}',
            "organizations",
        ),
    ],
)
def test_a_damaged_summary_is_one_line_naming_the_key(capsys, bases, summary, key):
    """summary.json of another shape: KeyError and TypeError tracebacks in report and export."""
    with folder() as d:
        shutil.copytree(bases.finished("averaging"), d / "r")
        path = d / "r" / "summary.json"
        path.write_bytes(
            summary if summary is not None else path.read_bytes().replace(b'"jobs_by_state"', b'"jobs_by_statf"')
        )
        for argv in (["report", d / "r", "--no-plot"], ["export", d / "r"]):
            assert call(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith("gridemu: error:") and "summary.json" in err and key in err, err
            assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["bilb-topology", "averaging-game"])
def test_strategy_periods_of_1e_9_are_refused_before_the_run(capsys, name):
    """BILB's and the averaging game's ``period`` below ``min_gap``: the gate counted rounds
    every min_gap only, so period = 1e-9 passed validate and the run filled memory with a
    record per site and period (10^11 a site; killed past 426 MiB by the bounded run)."""
    sets = ["--set", "sites.count=10", "--set", "workload.until=20.0", "--set", "protocol.period=1e-9"]
    with folder() as d:
        for argv in (["validate", name, *sets], run_argv(name, d / "out") + sets):
            assert call(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith("gridemu: error: protocol:") and len(err.strip().splitlines()) == 1, err
            assert "rounds counted by the strategy's periods" in err, err
        assert not (d / "out").exists()
