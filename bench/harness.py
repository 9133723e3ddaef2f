"""What every benchmark here shares: runs in fresh processes with their process tree sampled
(peak memory, CPU of the tree and of everything else), repeats reduced to a median row, the
phases of gridemu's window loop, the environment line, number formatting.

The scripts import it by name (``from harness import ...``): ``python bench/NAME.py`` puts
this folder first on ``sys.path``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def jobs_by_site(site: np.ndarray, n_sites: int) -> list[list[int]]:
    """Job indices of each site, in job-id order (= release order within a site): what the
    bare loops and SimPy models walk, site by site."""
    order = np.argsort(site, kind="stable")
    bounds = np.searchsorted(site[order], np.arange(n_sites + 1)).tolist()
    order_l = order.tolist()
    return [order_l[bounds[s] : bounds[s + 1]] for s in range(n_sites)]


def tree_rss() -> int:
    import psutil

    me = psutil.Process()
    total = me.memory_info().rss
    for p in me.children(recursive=True):
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def instrument(marks: dict[str, Any], backend_name: str) -> None:
    """Time the phases of the coordinator's run by wrapping the backend class and the specs'
    builder it calls (this process only)."""
    try:
        import gridemu.emulator.coordinator as coordinator

        cls = coordinator.BACKENDS[backend_name]
        orig_specs = coordinator.build_shard_specs

        def build_shard_specs(*a, **k):
            marks["specs_start"] = time.perf_counter()
            return orig_specs(*a, **k)

        coordinator.build_shard_specs = build_shard_specs

        def wrap(name: str, before: str | None, after: str | None) -> None:
            orig = getattr(cls, name)

            def wrapper(self, *a, **k):
                if before and before not in marks:
                    marks[before] = time.perf_counter()
                out = orig(self, *a, **k)
                if after and after not in marks:
                    marks[after] = time.perf_counter()
                return out

            setattr(cls, name, wrapper)

        wrap("status", None, "ready")
        wrap("results", "results_start", "results_end")
    except Exception as exc:  # the kernel changed shape: report without the split
        marks["instrument_error"] = repr(exc)


def imported_run() -> Any:
    """``emulator.run``, with what its first use in a process imports (pandas, every
    protocol's module: the scenario checks read all their keys) imported now, before a
    benchmark's clock starts: once per process, not part of a run."""
    import gridemu.emulator as emulator
    from gridemu.brokers import registry

    run = emulator.run
    list(registry.PROTOCOLS.values())
    return run


def busy_cpu_seconds(ct: Any) -> float:
    """Busy CPU seconds of a psutil.cpu_times() record (all cores), steal excluded."""
    return ct.user + ct.nice + ct.system + getattr(ct, "irq", 0.0) + getattr(ct, "softirq", 0.0)


class TreeSampler(threading.Thread):
    """Peak of the summed RSS of a process and all its descendants, sampled periodically.

    It also accounts CPU: the machine's busy time during the run minus what the process
    tree and this parent used is "other CPU", the load of processes that are not ours
    (a shared 2-core machine makes timings noisy; the table shows it per run).
    """

    def __init__(self, pid: int, interval: float):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.stop = threading.Event()
        self.peak = 0
        self.peak_parts: dict[str, int] = {}
        # Summed RSS counts a page shared by several processes (Ray's object store, the
        # workers' libraries) once per process; PSS splits it among them, so the summed PSS
        # is what the tree really holds.
        self.peak_pss = 0
        self.samples = 0
        self.tree_cpu: dict[tuple[int, float], float] = {}  # (pid, create time) -> CPU seconds seen

    def run(self) -> None:
        import psutil

        self.t0 = time.perf_counter()
        cpu0 = psutil.cpu_times()
        self.sys_busy0, self.steal0 = busy_cpu_seconds(cpu0), getattr(cpu0, "steal", 0.0)
        self.parent_cpu0 = time.process_time()
        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        # The sampler shares the machine with the run it measures, so it reads little: the
        # process tree (psutil walks every process of the machine for it) once a second, PSS
        # (smaps_rollup, about 1 ms a process) every 5th sample. Walking the tree at every
        # 0.05 s sample, with this one and the run's CPU counted together, took about 8 CPU
        # seconds of a 2-shard Ray call of 30 s on 2 cores (pod10000, 2026-11-27: 62-65 CPU s
        # and 34.8-35.8 s with the bench, 54.3 CPU s and 29.4 s timed without it).
        every = max(1, round(1.0 / self.interval))
        procs: list = []
        while not self.stop.is_set():
            if self.samples % every == 0:
                try:
                    procs = [root] + root.children(recursive=True)
                except psutil.NoSuchProcess:
                    return
            parts = {"driver": 0, "workers": 0, "ray_system": 0}
            with_pss, pss = self.samples % 5 == 0, 0
            for p in procs:
                try:
                    with p.oneshot():
                        if with_pss:
                            mem = p.memory_full_info()
                            rss, pss = mem.rss, pss + mem.pss
                        else:
                            rss = p.memory_info().rss
                        name = p.name()
                        ct = p.cpu_times()
                        born = p.create_time()
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                self.tree_cpu[(p.pid, born)] = ct.user + ct.system
                if p.pid == self.pid:
                    parts["driver"] += rss
                elif name.startswith("ray::") and not name.endswith("Agent"):
                    parts["workers"] += rss
                else:
                    parts["ray_system"] += rss
            total = sum(parts.values())
            self.peak_pss = max(self.peak_pss, pss)
            self.samples += 1
            if total > self.peak:
                self.peak, self.peak_parts = total, parts
            self.stop.wait(self.interval)

    def cpu_report(self, root_cpu: float | None) -> dict[str, float]:
        """After the run: CPU seconds of the tree, of other processes, and steal, over the run."""
        import psutil

        elapsed = time.perf_counter() - self.t0
        cpu1 = psutil.cpu_times()
        busy = busy_cpu_seconds(cpu1) - self.sys_busy0
        steal = getattr(cpu1, "steal", 0.0) - self.steal0
        tree = dict(self.tree_cpu)
        if root_cpu is not None:  # the worker's own final figure beats the last sample
            for key in [k for k in tree if k[0] == self.pid]:
                tree[key] = max(tree[key], root_cpu)
        ours = sum(tree.values()) + (time.process_time() - self.parent_cpu0)
        other = max(0.0, busy - ours)
        return {
            "elapsed_s": elapsed,
            "tree_cpu_s": sum(tree.values()),
            "other_cpu_s": other,
            "other_cores": other / elapsed if elapsed > 0 else 0.0,
            "steal_cores": steal / elapsed if elapsed > 0 else 0.0,
        }


def wait_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait (at most ``max_wait`` s) until other processes use < ``threshold`` cores; returns the last reading."""
    import psutil

    deadline = time.perf_counter() + max_wait
    while True:
        cores = psutil.cpu_percent(interval=1.0) / 100 * (os.cpu_count() or 1)
        if cores < threshold or time.perf_counter() >= deadline:
            return cores
        time.sleep(2.0)


def peak_rss_mib() -> float:
    """This process's own peak resident memory, in MiB: VmHWM where Linux gives it. Not
    ru_maxrss: Linux carries the parent's high-water mark across fork and exec, so a fresh
    worker's ru_maxrss is at least its driver's (a bare child of a driver holding 104 MB read
    101 MiB, its own peak 13 MB)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_worker(
    cmd: list[str], base: dict[str, Any], is_ray: bool, out_dir: Path, tag: str, timeout: float
) -> dict[str, Any]:
    """Run a benchmark worker (``cmd``) in a fresh subprocess, its process tree sampled for
    memory and CPU; returns the record it wrote to ``out_dir/tag.json`` with the samples
    added, or ``base`` with an ``error``."""
    # A private Ray instance even when another one runs on this machine (`ray start`):
    # without an address, ray.init() would join it and reject num_cpus.
    env = dict(os.environ, RAY_ADDRESS="local")
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = TreeSampler(proc.pid, 0.05 if is_ray else 0.2)
    sampler.start()
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        return {**base, "error": f"timed out after {timeout:.0f} s (--timeout)", "timed_out": True}
    finally:
        sampler.stop.set()
        sampler.join()
    elapsed = time.perf_counter() - t
    path = out_dir / f"{tag}.json"
    if proc.returncode != 0 or not path.exists():
        tail = " | ".join(err.strip().splitlines()[-3:])
        return {**base, "error": f"exit {proc.returncode}: {tail}"}
    rec = json.loads(path.read_text())
    rec.update(sampler.cpu_report(rec.get("self_cpu_s")))
    rec["process_s"] = elapsed
    rec["tag"] = tag
    rec["tree_peak_mib"] = sampler.peak / 2**20
    rec["tree_peak_parts_mib"] = {k: v / 2**20 for k, v in sampler.peak_parts.items()}
    rec["tree_peak_pss_mib"] = sampler.peak_pss / 2**20
    if is_ray:
        rec["peak_mib"], rec["mem_method"] = rec["tree_peak_pss_mib"], "tree pss"
    else:
        rec["peak_mib"], rec["mem_method"] = rec["maxrss_mib"], "maxrss"
    return rec


def kill_tree(proc: subprocess.Popen) -> None:
    """Kill a timed-out run: its process and every descendant (Ray's included)."""
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        kids = []
    proc.kill()
    for p in kids:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeats of one (size, engine): the run with the median wall time stands for them."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[-1]
    by_wall = sorted(ok, key=lambda r: r["wall_s"])
    row = dict(by_wall[(len(by_wall) - 1) // 2])  # lower median
    row["wall_all"] = [r["wall_s"] for r in ok]
    row["wall_min"], row["wall_max"] = by_wall[0]["wall_s"], by_wall[-1]["wall_s"]
    row["peak_mib"] = max(r["peak_mib"] for r in ok)
    row["peak_all_mib"] = [r["peak_mib"] for r in ok]
    row["process_s"] = max(r["process_s"] for r in ok)
    row["repeats"] = len(ok)
    row["tags"] = [r["tag"] for r in ok]
    if len(ok) < len(runs):
        row["failed_repeats"] = [r["error"] for r in runs if "error" in r]
    return row


def fmt(x: Any, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def projected_too_slow(rows: list[dict[str, Any]], engine: str, n: int, timeout: float) -> str | None:
    """Skip a run whose time, extrapolated linearly from a smaller size, exceeds the timeout."""
    done = [r for r in rows if r["engine"] == engine and "process_s" in r and r["jobs"] < n]
    if not done:
        return None
    last = max(done, key=lambda r: r["jobs"])
    # The simulation scales with the jobs; imports and Ray start-up do not.
    projected = (last["process_s"] - last["wall_s"]) + last["wall_s"] * n / last["jobs"]
    if projected > timeout:
        return f"not run: ~{projected:.0f} s projected from {last['jobs']:,} jobs > --timeout {timeout:.0f} s"
    return None


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_before": os.getloadavg(),
    }
    from importlib import metadata

    for mod in ("ray", "simpy", "pandas"):
        try:
            info[mod] = metadata.version(mod)
        except metadata.PackageNotFoundError:
            info[mod] = None
    try:
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        info["memory_gib"] = None
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
        info["git"] = rev.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")
    except OSError:
        info["git"] = None
    info["summary"] = (
        f"{info['cpus']} CPUs, {info['memory_gib']} GiB, Python {info['python']}, numpy {info['numpy']}, ray "
        f"{info['ray']}, simpy {info['simpy']}, gridemu at {info['git']}, load average {info['load_before'][0]:.2f}"
    )
    return info
