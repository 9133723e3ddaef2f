"""Every command of the README's code blocks, run as a user types it, in one folder and in the
README's order (later commands read what earlier ones wrote: runs/q4, runs/long, my.toml, ...).
The README is the source of truth: a command added there is run here, ``> FILE`` included.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_commands() -> list[str]:
    """The gridemu commands of the README's bash blocks (comments cut; the quick start's
    install step left to CI, which runs it before this suite)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith("pip install") and "&&" in line:
                line = line.split("&&", 1)[1].strip()
            if line.startswith("gridemu"):
                out.append(line)
    return out


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


def gridemu(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """One README line (``a && b`` runs b only if a succeeded, as in a shell)."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    if "--address auto" in command:
        # Ray's address file in a folder of the test's own: a test never joins a cluster it did
        # not start, and another test's cluster (tests/test_checkpoint.py's ray.cluster_utils
        # writes /tmp/ray/ray_current_cluster) came and went under this one (a 600 s hang).
        env["RAY_TMPDIR"] = str(cwd / "no-cluster")
        env.pop("RAY_ADDRESS", None)
    proc = None
    for part in command.split("&&"):
        argv = shlex.split(part)
        assert argv[0] == "gridemu"
        target = None
        if ">" in argv:  # gridemu show NAME > FILE: stdout into FILE, as the shell does
            argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
        proc = subprocess.run(
            [sys.executable, "-m", "gridemu.emulator.cli", *argv[1:]],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if target is not None:
            (cwd / target).write_text(proc.stdout)
        if proc.returncode:
            break
    return proc


def test_the_readme_has_the_commands_this_file_runs():
    assert len(COMMANDS) >= 20 and COMMANDS[0] == "gridemu run quickstart"
    assert any("--address auto" in c for c in COMMANDS)
    # my.toml is written by a README line before any line reads it.
    first_use = min(i for i, c in enumerate(COMMANDS) if "my.toml" in c)
    assert COMMANDS[first_use].startswith("gridemu show ") and COMMANDS[first_use].endswith("> my.toml")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command(command, folder):
    proc = gridemu(command, folder)
    if "--address auto" in command:
        # Joining a cluster needs one started with `ray start --head`: none is recorded where
        # this command looks (gridemu above), so it says so in one line.
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "ray start --head" in proc.stderr and "Traceback" not in proc.stderr
        return
    assert proc.returncode == 0, f"{command}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("code", python_blocks())
def test_readme_python(code, folder):
    # After the commands (the same folder): each block as a script of its own.
    script = folder / "block.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_ci_runs_the_readme_test_command():
    # .ci/run runs "the test command written in the README": the same pytest arguments.
    quick = re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1)
    readme = [
        line.split("&&", 1)[1].split("-m pytest", 1)[1].strip() for line in quick.splitlines() if "pytest" in line
    ]
    ci = (README.parent / ".ci" / "run").read_text()
    ran = [line.split("-m pytest", 1)[1].strip() for line in ci.splitlines() if line.startswith("python3 -m pytest")]
    assert len(readme) == 1 and ran == readme, (readme, ran)
