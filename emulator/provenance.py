"""What a run needs to be repeated, recorded in ``summary.json`` (``provenance``): the gridemu
version and, when the package runs from a git checkout, its commit (and whether files were
changed); the versions of Python, numpy, pandas and Ray; each input file's absolute path and
SHA-256 (the trace a workload reads), so that a later run can tell it has the same data.
The saved ``scenario.toml`` carries the same facts as comment lines (:func:`toml_header`).
The commit and the versions are read once a process (those of the code it imported); the
input files are hashed at every run.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

#: The libraries whose versions can change a run's numbers or files.
LIBRARIES = ("numpy", "pandas", "pyarrow", "ray")


@functools.lru_cache(maxsize=None)
def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def git_commit(where: Path) -> dict[str, Any] | None:
    """The commit of the checkout holding ``where`` and whether its tracked files differ
    from it, or None outside a git checkout (an installed wheel) or without git."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit.stdout.strip(), "modified": bool(dirty.stdout.strip())}


@functools.lru_cache(maxsize=1)
def _own_commit() -> dict[str, Any] | None:
    """gridemu's own checkout, asked once a process: the code a process runs is what it
    imported, and two git calls are 10 ms, a fifth of a small run's gathering (a sweep of
    small runs in one process asked them for every run)."""
    import gridemu

    return git_commit(Path(gridemu.__file__).resolve().parent)


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def input_files(data: dict[str, Any]) -> dict[str, str]:
    """The files a resolved scenario reads, by key (``workload.path``: its trace or job list)."""
    wl = data.get("workload", {})
    path = wl.get("path") if isinstance(wl, dict) else None
    return {"workload.path": path} if isinstance(path, str) else {}


def provenance(data: dict[str, Any]) -> dict[str, Any]:
    """The ``provenance`` section of ``summary.json`` for a run of the resolved scenario ``data``."""
    out: dict[str, Any] = {"gridemu": _version("gridemu") or "unknown (not installed)"}
    own = _own_commit()
    if own is not None:
        out["git"] = dict(own)  # a copy: the cached one stays as git gave it
    out["python"] = platform.python_version()
    out.update({name: _version(name) for name in LIBRARIES})
    files = {}
    for key, path in input_files(data).items():
        p = Path(path).resolve()
        files[key] = {"path": str(p), "sha256": sha256(p) if p.is_file() else None}
    if files:
        out["inputs"] = files
    return out


def toml_header(prov: dict[str, Any] | None) -> str:
    """``provenance`` as TOML comment lines, put at the top of a saved ``scenario.toml`` so
    that the file alone says what ran it (a TOML reader skips them)."""
    if not prov:
        return ""
    what = f"gridemu {prov.get('gridemu')}"
    git = prov.get("git")
    if git:
        what += f" (git {git['commit']}{', with modified files' if git.get('modified') else ''})"
    libraries = ", ".join(f"{name} {prov[name]}" for name in ("python", *LIBRARIES) if prov.get(name))
    lines = [f"# written by {what}; {libraries}"]
    for key, file in prov.get("inputs", {}).items():
        lines.append(f"# {key}: {file['path']}, sha256 {file['sha256'] or 'none (the file is missing)'}")
    return "\n".join(lines) + "\n"
