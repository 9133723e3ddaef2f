"""Who talks to whom: the network topology of a scenario (``[network]``).

A topology is the set of links between sites; messages travel only along links, and an
agent's "broadcast" goes to its neighbors. ``full`` (every site linked to every other, the
default) is kept implicit: a 10,000-site full graph would be 10^8 entries for nothing.
Every random topology is drawn from the run's seed (``SeedSequence(seed, spawn_key=
(TOPOLOGY_KEY,))``), so a scenario and a seed always give the same graph.

Shapes (``network.topology``):

* ``full``: every pair of sites linked.
* ``ring``: site i linked to i - 1 and i + 1 (mod n).
* ``random:K``: the union of ⌊K/2⌋ random Hamiltonian cycles, plus a random perfect matching
  when K is odd (n even). Connected by construction (one cycle already is) and symmetric;
  every site has K neighbors except where two draws pick the same link (rare once n >> K).
* ``smallworld:K:P``: Watts-Strogatz: a ring lattice where each site is linked to its K
  nearest sites (K even), each lattice link i - (i + j) with j >= 2 rewired with
  probability P to a uniformly drawn site that is not yet a neighbor. The ring links
  (j = 1) are never rewired, so the graph stays connected whatever P.
* ``tree:F``: a hierarchy of fan-out F: site i's parent is (i - 1) // F (site 0 is the root).
* ``grid2d``: sites on a grid of r = ⌊√n⌋ rows filled row by row (the last row may be
  shorter), each linked to its 4 neighbors.
* ``network.topology_file = "edges.csv"``: a CSV with a header ``source,target`` and an
  optional ``latency`` column; sites by index or name; links are symmetric (one line per
  pair is enough; a pair listed twice must not disagree on its latency).

Checks (each a :class:`ScenarioError` naming the key or the file's line): unknown shapes and
bad parameters, self-loops, unknown sites, and a graph that is not connected (a protocol
could then never hear part of the grid).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gridemu.model.checks import duplicate, parse_int, parse_number
from gridemu.model.errors import ScenarioError, first_few
from gridemu.model.inputs import CsvProblem, check_allocation, check_input_file, csv_table
from gridemu.sites.spec import SiteSpec

TOPOLOGY_KEY = 0x544F504F  # "TOPO": the spawn key of the topology's random stream
SHAPES = ("full", "ring", "random:K", "smallworld:K:P", "tree:F", "grid2d")


@dataclass(frozen=True)
class Topology:
    """The links of a run: ``neighbors[i]`` is site i's sorted neighbor ids (None: full)."""

    name: str
    neighbors: tuple[tuple[int, ...], ...] | None
    #: Latency of each link read from a topology file, as {(i, j): latency} with i < j (None: not given there).
    link_latency: dict[tuple[int, int], float] | None = None

    @property
    def full(self) -> bool:
        return self.neighbors is None

    def degrees(self, n: int) -> np.ndarray:
        if self.neighbors is None:
            return np.full(n, n - 1)
        return np.array([len(nb) for nb in self.neighbors])


def build_topology(net: dict[str, Any], sites: Sequence[SiteSpec], seed: int, base: Path | None = None) -> Topology:  # noqa: C901
    """The topology a ``[network]`` table asks for (``topology`` or ``topology_file``)."""
    n = len(sites)
    if "topology_file" in net:
        if "topology" in net and net["topology"] != "file":
            raise ScenarioError(
                "network.topology_file", "give either network.topology or network.topology_file, not both"
            )
        path = Path(str(net["topology_file"]))
        if base is not None and not path.is_absolute() and not path.exists() and (base / path).exists():
            path = base / path
        return _from_file(path, sites)
    spec = net.get("topology", "full")
    if not isinstance(spec, str):
        raise ScenarioError("network.topology", f"must be a string, one of {', '.join(SHAPES)}; got {spec!r}")
    name, *args = spec.split(":")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TOPOLOGY_KEY,)))
    if name == "full" and not args:
        return Topology("full", None)
    if name == "ring" and not args:
        links = {(i, (i + 1) % n) for i in range(n)} if n > 2 else ({(0, 1)} if n == 2 else set())
    elif name == "random" and len(args) == 1:
        k = _int_arg(spec, args[0], "K", 1 if n <= 2 else 2, n - 1)  # a matching alone is not connected
        if k % 2 and n % 2:
            raise ScenarioError(
                "network.topology", f"{spec}: an odd K needs an even number of sites (a perfect matching), got {n}"
            )
        links = _random_links(n, k, rng)
    elif name == "smallworld" and len(args) == 2:
        k = _int_arg(spec, args[0], "K", 2, n - 1)
        if k % 2:
            raise ScenarioError(
                "network.topology", f"{spec}: K must be even (K/2 lattice neighbors on each side), got {k}"
            )
        try:
            p = float(args[1])
        except ValueError:
            p = math.nan
        if not 0 <= p <= 1:
            raise ScenarioError("network.topology", f"{spec}: P must be a probability in [0, 1], got {args[1]!r}")
        links = _small_world(n, k, p, rng)
    elif name == "tree" and len(args) == 1:
        f = _int_arg(spec, args[0], "F", 1, 1 << 30)
        links = {((i - 1) // f, i) for i in range(1, n)}
    elif name == "grid2d" and not args:
        rows = max(1, math.isqrt(n))
        cols = math.ceil(n / rows)
        links = set()
        for i in range(n):
            r, c = divmod(i, cols)
            if c + 1 < cols and i + 1 < n:
                links.add((i, i + 1))
            if i + cols < n:
                links.add((i, i + cols))
    else:
        raise ScenarioError(
            "network.topology", f"unknown topology {spec!r} (one of {', '.join(SHAPES)}, or network.topology_file)"
        )
    topo = _from_links(spec, n, links)
    if name != "random":  # random:K is connected by construction (one cycle already is; K = 1: n = 2)
        _check_connected(topo, sites, "network.topology")
    return topo


def _int_arg(spec: str, text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ScenarioError("network.topology", f"{spec}: {name} must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise ScenarioError(
            "network.topology", f"{spec}: {name} must be between {low} and {high} for this grid, got {value}"
        )
    return value


def _random_links(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """The links of ``random:K`` as rows (i, j), i < j, each once: the same permutations and
    links as one cycle after the other would give, drawn and deduplicated as arrays (a
    million sites' 4 million links as Python tuples took most of a 1M-site validation)."""
    parts = []
    for _ in range(k // 2):
        cycle = rng.permutation(n)
        parts.append(np.stack([cycle, np.roll(cycle, -1)], axis=1))
    if k % 2:
        order = rng.permutation(n)
        parts.append(np.stack([order[0::2], order[1::2]], axis=1))
    pairs = np.concatenate(parts).astype(np.int64)
    a, b = pairs[:, 0], pairs[:, 1]
    codes = np.sort((np.minimum(a, b) * n + np.maximum(a, b))[a != b])  # a link i < j as i n + j
    codes = codes[np.concatenate([[True], codes[1:] != codes[:-1]])]  # each once
    return np.stack([codes // n, codes % n], axis=1)


def _small_world(n: int, k: int, p: float, rng: np.random.Generator) -> set[tuple[int, int]]:
    adj = [set() for _ in range(n)]
    for i in range(n):
        for j in range(1, k // 2 + 1):
            adj[i].add((i + j) % n)
            adj[(i + j) % n].add(i)
    for j in range(2, k // 2 + 1):  # the ring links (j = 1) stay: the graph stays connected
        for i in range(n):
            t = (i + j) % n
            if t not in adj[i] or rng.random() >= p:
                continue
            if len(adj[i]) >= n - 1:
                continue
            # The new end: a uniform draw among the sites that are not i nor its neighbors
            # (drawn again while it is one: few draws, since K << n).
            new = int(rng.integers(n))
            while new == i or new in adj[i]:
                new = int(rng.integers(n))
            adj[i].discard(t)
            adj[t].discard(i)
            adj[i].add(new)
            adj[new].add(i)
    return {(min(i, j), max(i, j)) for i in range(n) for j in adj[i]}


def _from_links(name: str, n: int, links: "set[tuple[int, int]] | np.ndarray", latency: dict | None = None) -> Topology:
    """The topology of ``links`` (pairs of site ids, each link once): each site's neighbors sorted."""
    pairs = np.asarray(list(links) if isinstance(links, set) else links, dtype=np.int64).reshape(-1, 2)
    # Both ends of each link as one sorted code, site i n + neighbor: by site, then neighbor.
    ends = np.sort(np.concatenate([pairs[:, 0] * n + pairs[:, 1], pairs[:, 1] * n + pairs[:, 0]]))
    first = np.searchsorted(ends, np.arange(n + 1) * n).tolist()
    ids = list(range(n))  # one int object per site, shared by every tuple that names it
    flat = list(map(ids.__getitem__, (ends % n).tolist()))
    return Topology(name, tuple(tuple(flat[a:b]) for a, b in zip(first, first[1:])), latency)


def _check_connected(topo: Topology, sites: Sequence[SiteSpec], key: str) -> None:
    n = len(sites)
    if topo.neighbors is None or n <= 1:
        return
    seen = [False] * n
    seen[0] = True
    todo = deque([0])
    while todo:
        for j in topo.neighbors[todo.popleft()]:
            if not seen[j]:
                seen[j] = True
                todo.append(j)
    if not all(seen):
        cut = [sites[i].name for i in range(n) if not seen[i]]
        raise ScenarioError(key, f"the network is not connected: no path from {sites[0].name} to {first_few(cut)}")


def _edge_header(names: list[str], path: Path, key: str) -> None:
    """An edge file's columns: source and target, latency if given, nothing else (names
    trimmed: " source" is source here)."""
    fields = [f.strip() for f in names]
    twice = duplicate(fields)
    if twice is not None:
        raise ScenarioError(key, f"{path}, line 1: column {twice!r} is named twice in the header")
    if not {"source", "target"} <= set(fields):
        raise ScenarioError(
            key, f"{path}: the header must name source and target (and optionally latency), got {fields}"
        )
    unknown = sorted(set(fields) - {"source", "target", "latency"})
    if unknown:  # a "weight" column would read as latencies it never sets
        raise ScenarioError(key, f"{path}, line 1: unknown column {unknown[0]!r} (allowed: source, target, latency)")


def _from_file(path: Path, sites: Sequence[SiteSpec]) -> Topology:
    key = "network.topology_file"
    check_input_file(path, key, "an edge file")
    index = {s.name: s.site_id for s in sites}
    n = len(sites)

    def site_of(value: str, line: int, column: str) -> int:
        value = value.strip()
        if value in index:
            return index[value]
        where = f"{path}, line {line}, column {column}"
        if value.lstrip("+-")[:1].isdigit():  # a site index: ASCII digits only (parse_int says so)
            i = parse_int(value, where)
            if 0 <= i < n:
                return i
        raise ScenarioError(key, f"{path}, line {line}: {column} {value!r} is no site (a name or an index 0..{n - 1})")

    links: set[tuple[int, int]] = set()
    latency: dict[tuple[int, int], float] = {}
    try:
        names, rows = csv_table(path, lambda names: _edge_header(names, path, key), " source,target[,latency]")
    except CsvProblem as exc:
        where = f"{path}, line {exc.line}" if exc.line else str(path)
        raise ScenarioError(key, f"{where}: {exc.problem}") from None
    has_latency = "latency" in {f.strip() for f in names}
    for line, row in rows:
        row = {k.strip(): (v or "") for k, v in row.items()}
        a, b = site_of(row["source"], line, "source"), site_of(row["target"], line, "target")
        if a == b:
            raise ScenarioError(key, f"{path}, line {line}: a link from site {sites[a].name} to itself")
        pair = (min(a, b), max(a, b))
        if has_latency:
            lat = parse_number(row["latency"], f"{path}, line {line}, column latency")
            if not (lat > 0 and math.isfinite(lat)):
                raise ScenarioError(key, f"{path}, line {line}: latency must be a number > 0, got {row['latency']!r}")
            if pair in latency and latency[pair] != lat:
                raise ScenarioError(
                    key,
                    f"{path}, line {line}: the link {sites[a].name}-{sites[b].name} "
                    f"is listed before with latency {latency[pair]}",
                )
            latency[pair] = lat
        links.add(pair)
    if not links and n > 1:
        raise ScenarioError(key, f"{path}: no link listed")
    topo = _from_links("file", n, links, latency or None)
    _check_connected(topo, sites, key)
    return topo


def link_latency_matrix(topo: Topology, n: int, default: "float | np.ndarray") -> "float | np.ndarray":
    """The latency of every link: a topology file's own values where it gives them, else the
    ``[network]`` latency (a number or a matrix). Pairs that are not linked keep the default:
    no message ever travels between them."""
    if not topo.link_latency:
        return default
    check_allocation("network.topology", 8.0 * n * n, f"a {n:,} x {n:,} matrix of link latencies")
    mat = np.full((n, n), float(default)) if not isinstance(default, np.ndarray) else default.copy()
    for (a, b), lat in topo.link_latency.items():
        mat[a, b] = mat[b, a] = lat
    return mat


def smallest_link_latency(topo: Topology, latency: "float | np.ndarray") -> float:
    """The smallest latency over the links (the kernel's lookahead by default)."""
    if not isinstance(latency, np.ndarray):
        return float(latency)
    n = latency.shape[0]
    if n < 2:
        return float(latency[0, 0])
    if topo.neighbors is None:
        return float(latency[~np.eye(n, dtype=bool)].min())
    return float(min(latency[i, j] for i, nb in enumerate(topo.neighbors) for j in nb))
