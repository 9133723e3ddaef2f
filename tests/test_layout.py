"""The layout rules of DESIGN.md, checked on the source: imports run one way, no circles,
agents see their site only through the view, messages are read by name. (Line length,
import order and complexity are ruff's: tests/test_style.py.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "sites", "scenarios", "brokers", "emulator")
#: What each package may import besides itself. scenarios builds job arrays and sits beside
#: brokers: neither imports the other; the kernel (emulator) is on top.
MAY_IMPORT = {
    "model": set(),
    "sites": {"model"},
    "scenarios": {"model", "sites"},
    "brokers": {"model", "sites"},
    "emulator": {"model", "sites", "scenarios", "brokers"},
}


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out["gridemu." + ".".join(parts)] = path
    return out


def _typing_only(tree: ast.Module) -> set[int]:
    """Line numbers of the imports inside ``if TYPE_CHECKING:`` blocks."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {
                n.lineno for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))
            }
    return lines


def imported(path: Path, runtime_only: bool = False) -> list[tuple[int, str]]:
    """Every gridemu module a file imports (at any depth; with ``runtime_only``, not those
    under ``if TYPE_CHECKING:``, which never run)."""
    found = []
    tree = ast.parse(path.read_text(), str(path))
    skip = _typing_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, n) for n in names if n.startswith("gridemu.")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("gridemu.")]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; write gridemu.<package>.<module>")
    return found


MODULES = modules()


def resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_no_import_goes_up_or_sideways():
    bad = []
    for mod, path in MODULES.items():
        pkg = mod.split(".")[1]
        for line, name in imported(path):
            target = name.split(".")[1]
            if target != pkg and target not in MAY_IMPORT[pkg]:
                bad.append(
                    f"{path.relative_to(ROOT)}:{line} imports {name} ({pkg} may import "
                    f"{sorted(MAY_IMPORT[pkg]) or 'nothing of gridemu'})"
                )
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    # Run-time imports only: a type annotation may name a class of the module that imports this one.
    graph = {
        mod: {resolve(n) for _, n in imported(path, runtime_only=True)} - {None, mod} for mod, path in MODULES.items()
    }
    # A package's __init__ is imported with any of its modules; edges into it are not circles.
    graph = {m: {t for t in ts if not MODULES[t].name == "__init__.py"} for m, ts in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return stack[stack.index(t) :] + [t]
            if t not in state and (cycle := visit(t)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import circle: " + " -> ".join(cycle))


AGENT_FILES = sorted((ROOT / "brokers").rglob("*.py"))


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_brokers_use_the_site_view_and_named_messages(path):
    text = path.read_text()
    problems = []
    for pattern, why in (
        (r"\bsite\.(c|r)_\w+", "reads the site's job or run columns; use the SiteView (sites/view.py)"),
        (
            r"\bsite\.(scheduler|changed|setup|free_procs|cursor|heap|outbox)\b",
            "reaches into the site; use the SiteView",
        ),
        (r"\brow\[\d+\]|\brow\[N_ROUTING|\brow\[_", "reads a message by position; declare a kind and read its fields"),
        (r"\b(MTYPE|MESSAGE_TYPES|job_columns)\b", "uses the positional message names; declare kinds with message()"),
        (r"lru_cache|functools\.cache\b", "a cache shared between the sites of a process hides each site's cost"),
        (r"\bscheduler_state\b", "reaches for the local scheduler; ask the view's named methods (sites/view.py)"),
    ):
        for m in re.finditer(pattern, text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r} {why}")
    assert not problems, "\n".join(problems)


def private_members_used(tree: ast.Module) -> list[tuple[int, str]]:
    """Underscore attributes a module reads that it does not own: ``obj._x`` on anything but
    ``self`` or ``cls``, and ``self._x`` where no code of this module defines ``_x`` (a
    method, or an attribute it sets: a base class's private member in another module).
    Dunders and a namedtuple's public ``_asdict``, ``_fields``, ``_make``, ``_replace`` pass."""
    public = {"_asdict", "_fields", "_make", "_replace"}
    defined = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
            defined.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            defined.add(n.id)  # a class-level field
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            defined.add(n.target.id)
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in ("setattr", "object.__setattr__") and len(n.args) > 1:
            if isinstance(n.args[1], ast.Constant):
                defined.add(n.args[1].value)
    found = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)):
            continue
        name = n.attr
        if not name.startswith("_") or name.startswith("__") or name in public:
            continue
        owner = ast.unparse(n.value)
        if owner not in ("self", "cls") or name not in defined:
            found.append((n.lineno, f"{owner}.{name}"))
    return found


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_brokers_use_no_private_member_of_another_module(path):
    """A subclass or a mixin in another module is driven through a documented interface
    (e.g. ``GmAgent``'s for ``brokers/gm/sampled.py``), never through its private state."""
    tree = ast.parse(path.read_text(), str(path))
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {what} is private to another module or object"
        for line, what in private_members_used(tree)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", AGENT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_brokers_import_neither_the_site_nor_a_test_oracle(path):
    """An agent sees its site through the view (sites/view.py), never ``sites/site.py``, and
    does not depend on the reference it is tested against (``brokers/<protocol>/reference.py``,
    or ``*_reference.py`` where a protocol has more than one):
    what both need (tolerances, rules) lives in a neutral module both import."""
    bad = []
    for line, target in sorted({(line, resolve(name) or "") for line, name in imported(path)}):
        if target == "gridemu.sites.site":
            bad.append(f"{path.relative_to(ROOT)}:{line}: imports {target}; use the SiteView (sites/view.py) or model/")
        if (
            target
            and target.rsplit(".", 1)[-1].endswith("reference")  # reference.py, sampled_reference.py
            and target.startswith("gridemu.brokers.")
            and not path.stem.endswith("reference")
        ):
            bad.append(
                f"{path.relative_to(ROOT)}:{line}: imports {target}, a test "
                "oracle; move what both share to the protocol's algorithm module"
            )
    assert not bad, "\n".join(bad)


def test_the_private_member_check_sees_a_base_class_private_method_and_another_objects():
    tree = ast.parse(
        "class A(Base):\n"
        "    def f(self):\n"
        "        self._mine = 1\n"
        "        self._own()\n"
        "        return self._mine + self._inherited() + other._field + self.__class__.__name__ + row._asdict()\n"
        "    def _own(self):\n"
        "        pass\n"
    )
    assert sorted(what for _, what in private_members_used(tree)) == ["other._field", "self._inherited"]


#: What the kernel may import of the protocols' package: the contract, the registry and the
#: figures every run shares; never a protocol's own folder.
KERNEL_SEES_OF_BROKERS = {
    "gridemu.brokers.agent",
    "gridemu.brokers.protocol",
    "gridemu.brokers.registry",
    "gridemu.brokers.metrics",
    "gridemu.brokers.params",
}


def test_the_kernel_names_no_protocol():
    from gridemu.brokers.registry import PROTOCOLS
    from gridemu.emulator.scenario import SCHEDULERS
    from gridemu.emulator.topology import SHAPES

    # "fairshare" names a local scheduler too, and "random" a topology, which the kernel may name.
    other = set(SCHEDULERS) | {shape.split(":")[0] for shape in SHAPES}
    names = "|".join(re.escape(n) for n in PROTOCOLS if n != "local" and n not in other)
    hits = []
    for path in sorted((ROOT / "emulator").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if re.search(rf"""["']({names})["']""", code):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
        for i, name in imported(path):
            # ``from gridemu.brokers import registry`` names the package too: only its modules count.
            if name.startswith("gridemu.brokers.") and resolve(name) not in KERNEL_SEES_OF_BROKERS:
                hits.append(f"{path.relative_to(ROOT)}:{i}: imports {name}")
    assert not hits, "\n".join(hits)


def test_the_kernel_names_no_scheduler_section():
    """A local scheduler's own section (the fairshare scheduler's [policy]) reaches the kernel
    through sites/sections.py alone: no kernel module names it or imports its hooks."""
    from gridemu.sites.sections import SECTIONS

    names = "|".join(re.escape(s.name) for s in SECTIONS.values())
    hooks = {s.module for s in SECTIONS.values()}
    hits = []
    for path in sorted((ROOT / "emulator").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(rf"""["']({names})["']""", line.split("#")[0]):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
        hits += [
            f"{path.relative_to(ROOT)}:{i}: imports {name}" for i, name in imported(path) if resolve(name) in hooks
        ]
    assert not hits, "\n".join(hits)


def test_the_protocol_contract_stays_small():
    """Everything the kernel asks of a protocol fits in about a dozen fields: what only one
    protocol needs is a hook it fills (summary, report) or a capability it declares, never a
    field. (13 since ``work``, the estimate's count of a protocol's own computation, issue 45.)"""
    from dataclasses import fields

    from gridemu.brokers.protocol import Protocol

    names = [f.name for f in fields(Protocol)]
    assert len(names) <= 13, names
    assert not {
        "divisible",
        "dedicated",
        "fairness",
        "periodic",
        "topologies",
        "starts_jobs",
        "faults",
        "gantt_compare",
    } & set(names)


def test_shard_actors_start_without_pandas():
    """A Ray shard actor imports the kernel's shard module and every protocol; pandas (with
    pyarrow, about 0.18 s) belongs to the driver's result tables, not to actor start-up."""
    import subprocess
    import sys

    code = (
        "import sys, gridemu.emulator.shard; "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"importing the shard module pulled in {out}"


EXPERIMENTS = sorted((ROOT / "docs" / "results").glob("*.py"))
BENCH = sorted((ROOT / "bench").glob("*.py"))


def test_scripts_import_by_package_path_and_never_the_tests():
    """docs/results is the package gridemu.experiments: its scripts import each other by that
    path (so they run from any folder) and the library never imports them; benchmarks share
    bench/harness.py, not each other's private functions; no script imports tests.*."""
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in MODULES.values()
        for line, name in imported(path)
        if name.startswith("gridemu.experiments")
    ]
    siblings = {p.stem for p in EXPERIMENTS}
    bench = {p.stem for p in BENCH}
    for path in EXPERIMENTS + BENCH:
        text = path.read_text()
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                top, names = node.names[0].name.split(".")[0], []
            else:
                continue
            if top == "tests":
                bad.append(f"{where}:{node.lineno} imports the tests ({top})")
            elif path in EXPERIMENTS and top in siblings:
                bad.append(f"{where}:{node.lineno} imports {top} by bare name; write gridemu.experiments.{top}")
            elif path in BENCH and top in bench and top != "harness" and any(n.startswith("_") for n in names):
                bad.append(
                    f"{where}:{node.lineno} imports private names of bench/{top}.py; share them in bench/harness.py"
                )
        if "sys.path.insert" in text:
            bad.append(f"{where}: edits sys.path")
    assert not bad, "\n".join(bad)
