"""MacNet topologies: directed acyclic graphs of agents with one input node and one output node.

    topo = make_topology("small-world", 32, seed=7)
    topo.layers()        # [[0], [1, 5, 9], ...]: the order the network runs in
    topo.temperature(d)  # 1 - d / max depth, the sampling temperature of layer d

Every generator returns a validated graph: acyclic, every node reachable from the input (node
``input``) and reaching the output (node ``output``). Node numbers are 0..n-1; edges point from
the agent whose solution travels to the agent that improves it. Edge counts, for n >= 3:

- ``chain``: n-1;  ``star``: 2(n-2) (the input fans out to n-2 agents, the output collects them);
- ``tree``: a b-ary out-tree on n-1 nodes, its leaves joined to the output: (n-2) + leaves;
- ``mesh``: the complete DAG, n(n-1)/2;
- ``layered``: input -> layers of ``width`` agents, complete between neighbouring layers -> output;
- ``small-world``: a Watts-Strogatz graph (ring lattice of degree k, each edge rewired with
  probability p) oriented by breadth-first distance from the input, so its short paths stay
  short; nodes left without a successor are joined to the output (the farthest node);
- ``random``: each pair i < j an edge with probability p (default 4 / n), then nodes without a
  predecessor are fed by the input and nodes without a successor feed the output.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise

from daemon.teams.config import TOPOLOGIES


class TopologyError(ValueError):
    """The graph is not a usable network (a cycle, an unreachable node, a bad size)."""


@dataclass
class Topology:
    kind: str
    size: int
    edges: list[tuple[int, int]]
    input: int = 0
    output: int = -1
    _preds: list[list[int]] | None = field(default=None, repr=False)
    _succs: list[list[int]] | None = field(default=None, repr=False)
    _depth: list[int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.output < 0:
            self.output = self.size - 1

    @property
    def preds(self) -> list[list[int]]:
        if self._preds is None:
            self._preds = [[] for _ in range(self.size)]
            for u, v in self.edges:
                self._preds[v].append(u)
        return self._preds

    @property
    def succs(self) -> list[list[int]]:
        if self._succs is None:
            self._succs = [[] for _ in range(self.size)]
            for u, v in self.edges:
                self._succs[u].append(v)
        return self._succs

    def order(self) -> list[int]:
        """A topological order (Kahn); raises TopologyError on a cycle."""
        indegree = [len(p) for p in self.preds]
        ready = deque(v for v in range(self.size) if indegree[v] == 0)
        out: list[int] = []
        while ready:
            u = ready.popleft()
            out.append(u)
            for v in self.succs[u]:
                indegree[v] -= 1
                if indegree[v] == 0:
                    ready.append(v)
        if len(out) != self.size:
            stuck = sorted(v for v in range(self.size) if indegree[v] > 0)[:5]
            raise TopologyError(f"{self.kind} graph has a cycle through nodes {stuck}")
        return out

    def depths(self) -> list[int]:
        """Each node's layer: the length of the longest path from the input to it."""
        if self._depth is None:
            depth = [0] * self.size
            for u in self.order():
                for v in self.succs[u]:
                    depth[v] = max(depth[v], depth[u] + 1)
            self._depth = depth
        return self._depth

    @property
    def max_depth(self) -> int:
        return max(self.depths(), default=0)

    def layers(self) -> list[list[int]]:
        """Nodes grouped by depth; every predecessor of a node sits in an earlier layer."""
        out: list[list[int]] = [[] for _ in range(self.max_depth + 1)]
        for node, d in enumerate(self.depths()):
            out[d].append(node)
        return out

    def temperature(self, depth: int) -> float:
        """MacNet's per-layer temperature: 1 - depth / max depth (1.0 for a single node)."""
        return 1.0 if self.max_depth == 0 else round(1.0 - depth / self.max_depth, 4)

    def validate(self) -> Topology:
        """Raise TopologyError unless the graph is a DAG from ``input`` to ``output``; returns self."""
        if self.size < 1:
            raise TopologyError(f"a {self.kind} network needs at least one agent, got {self.size}")
        seen: set[tuple[int, int]] = set()
        for u, v in self.edges:
            if not (0 <= u < self.size and 0 <= v < self.size) or u == v:
                raise TopologyError(f"{self.kind} graph has a bad edge {u}->{v} (size {self.size})")
            if (u, v) in seen:
                raise TopologyError(f"{self.kind} graph repeats the edge {u}->{v}")
            seen.add((u, v))
        self.order()
        for start, step, what in ((self.input, self.succs, "reachable from the input"),
                                  (self.output, self.preds, "able to reach the output")):
            reached = _reach(start, step)
            if len(reached) != self.size:
                missing = sorted(set(range(self.size)) - reached)[:5]
                raise TopologyError(f"{self.kind} graph: nodes {missing} are not {what}")
        return self


def _reach(start: int, step: list[list[int]]) -> set[int]:
    seen, todo = {start}, [start]
    while todo:
        for v in step[todo.pop()]:
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


def _close(size: int, edges: list[tuple[int, int]], source: int, sink: int) -> list[tuple[int, int]]:
    """Feed every node without a predecessor from ``source``; join every node without a successor
    to ``sink``. Edges must already follow an order with ``source`` first and ``sink`` last, so
    the added ones keep the graph acyclic."""
    has_pred, has_succ = [False] * size, [False] * size
    for u, v in edges:
        has_succ[u], has_pred[v] = True, True
    extra = []
    for v in range(size):
        if v != source and not has_pred[v]:
            extra.append((source, v))
            has_succ[source] = True
    extra += [(v, sink) for v in range(size) if v != sink and not has_succ[v]]
    return edges + list(dict.fromkeys(extra))


def chain(n: int) -> Topology:
    return Topology("chain", n, [(i, i + 1) for i in range(n - 1)])


def star(n: int) -> Topology:
    if n <= 2:
        return Topology("star", n, [(0, 1)] if n == 2 else [])
    spokes = range(1, n - 1)
    return Topology("star", n, [(0, s) for s in spokes] + [(s, n - 1) for s in spokes])


def tree(n: int, branching: int = 2) -> Topology:
    if n <= 2:
        return Topology("tree", n, [(0, 1)] if n == 2 else [])
    inner = n - 1  # nodes 0..n-2 form the tree; n-1 collects its leaves
    edges = [((i - 1) // branching, i) for i in range(1, inner)]
    parents = {u for u, _ in edges}
    edges += [(leaf, n - 1) for leaf in range(inner) if leaf not in parents]
    return Topology("tree", n, edges)


def mesh(n: int) -> Topology:
    return Topology("mesh", n, [(i, j) for i in range(n) for j in range(i + 1, n)])


def layered(n: int, width: int | None = None) -> Topology:
    if n <= 2:
        return Topology("layered", n, [(0, 1)] if n == 2 else [])
    hidden = list(range(1, n - 1))
    width = width or max(1, round((n - 2) ** 0.5))
    layers = [[0]] + [hidden[i:i + width] for i in range(0, len(hidden), width)] + [[n - 1]]
    edges = [(u, v) for a, b in pairwise(layers) for u in a for v in b]
    return Topology("layered", n, edges)


def watts_strogatz(n: int, k: int, p: float, rng: random.Random) -> list[set[int]]:
    """An undirected Watts-Strogatz graph as adjacency sets (ring lattice of degree k, rewired with p)."""
    adjacency: list[set[int]] = [set() for _ in range(n)]
    for u in range(n):
        for j in range(1, k // 2 + 1):
            v = (u + j) % n
            adjacency[u].add(v)
            adjacency[v].add(u)
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            if rng.random() >= p or v not in adjacency[u] or len(adjacency[u]) >= n - 1:
                continue
            w = rng.randrange(n)
            while w == u or w in adjacency[u]:
                w = rng.randrange(n)
            adjacency[u].discard(v)
            adjacency[v].discard(u)
            adjacency[u].add(w)
            adjacency[w].add(u)
    return adjacency


def small_world(n: int, k: int = 4, p: float = 0.1, seed: int = 0) -> Topology:
    if n <= 3:
        return Topology("small-world", n, chain(n).edges)
    k = max(2, min(k, n - 1))
    k -= k % 2
    rng = random.Random(seed)
    for _ in range(50):
        adjacency = watts_strogatz(n, k, p, rng)
        distance = _bfs_distances(adjacency, 0)
        if len(distance) == n:
            break
    else:
        raise TopologyError(f"no connected small-world graph with n={n}, k={k}, p={p} after 50 tries")
    key = {v: (distance[v], v) for v in range(n)}
    edges = sorted((u, v) for u in range(n) for v in adjacency[u] if key[u] < key[v])
    output = max(range(n), key=key.__getitem__)
    return Topology("small-world", n, _close(n, edges, 0, output), output=output)


def _bfs_distances(adjacency: list[set[int]], start: int) -> dict[int, int]:
    distance, todo = {start: 0}, deque([start])
    while todo:
        u = todo.popleft()
        for v in adjacency[u]:
            if v not in distance:
                distance[v] = distance[u] + 1
                todo.append(v)
    return distance


def random_dag(n: int, p: float | None = None, seed: int = 0) -> Topology:
    rng = random.Random(seed)
    p = min(1.0, 4.0 / n) if p is None else p
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    return Topology("random", n, _close(n, edges, 0, n - 1))


def make_topology(kind: str, agents: int, *, seed: int = 0, width: int | None = None, branching: int = 2,
                  degree: int = 4, rewire: float = 0.1, p: float | None = None) -> Topology:
    """A validated topology of ``agents`` nodes; ``kind`` is one of :data:`TOPOLOGIES`."""
    if agents < 1:
        raise TopologyError(f"a network needs at least one agent, got {agents}")
    builders = {"chain": lambda: chain(agents), "star": lambda: star(agents), "mesh": lambda: mesh(agents),
                "tree": lambda: tree(agents, branching), "layered": lambda: layered(agents, width),
                "small-world": lambda: small_world(agents, degree, rewire, seed),
                "random": lambda: random_dag(agents, p, seed)}
    if kind not in builders:
        raise TopologyError(f"unknown topology {kind!r} (known: {', '.join(TOPOLOGIES)})")
    return builders[kind]().validate()


def clustering(topology: Topology) -> float:
    """The average local clustering coefficient of the graph with its edges undirected."""
    neighbours: list[set[int]] = [set() for _ in range(topology.size)]
    for u, v in topology.edges:
        neighbours[u].add(v)
        neighbours[v].add(u)
    total = 0.0
    for node in range(topology.size):
        near = neighbours[node]
        if len(near) < 2:
            continue
        links = sum(1 for a in near for b in neighbours[a] if b in near) / 2
        total += links / (len(near) * (len(near) - 1) / 2)
    return total / topology.size if topology.size else 0.0

