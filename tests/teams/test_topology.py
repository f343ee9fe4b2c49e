"""MacNet topologies: every generated graph is a DAG from one input to one output, with the edge
counts each shape promises; small-world graphs cluster far more than random ones of the same size."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from daemon.teams.config import TOPOLOGIES
from daemon.teams.topology import Topology, TopologyError, clustering, make_topology


def _reach(topo: Topology, start: int, forward: bool) -> set[int]:
    step = topo.succs if forward else topo.preds
    seen, todo = {start}, [start]
    while todo:
        for v in step[todo.pop()]:
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


@pytest.mark.parametrize("kind", TOPOLOGIES)
@pytest.mark.parametrize("size", [1, 2, 3, 5, 17, 64])
def test_every_topology_is_acyclic_and_connects_input_to_output(kind: str, size: int) -> None:
    topo = make_topology(kind, size, seed=size)
    position = {node: i for i, node in enumerate(topo.order())}
    assert all(position[u] < position[v] for u, v in topo.edges)  # a topological order exists: acyclic
    assert len(set(topo.edges)) == len(topo.edges) and all(u != v for u, v in topo.edges)
    assert _reach(topo, topo.input, forward=True) == set(range(size))
    assert _reach(topo, topo.output, forward=False) == set(range(size))
    depth = topo.depths()
    assert all(depth[u] < depth[v] for u, v in topo.edges)  # layers respect every edge
    assert sorted(n for layer in topo.layers() for n in layer) == list(range(size))


@pytest.mark.parametrize("n", [3, 4, 10, 33])
def test_edge_counts_of_the_regular_shapes(n: int) -> None:
    assert len(make_topology("chain", n).edges) == n - 1
    assert len(make_topology("star", n).edges) == 2 * (n - 2)
    assert len(make_topology("mesh", n).edges) == n * (n - 1) // 2
    parents = {(i - 1) // 2 for i in range(1, n - 1)}  # a binary tree on nodes 0..n-2
    leaves = (n - 1) - len(parents)
    assert len(make_topology("tree", n, branching=2).edges) == (n - 2) + leaves
    layered = make_topology("layered", n, width=3)
    widths = [len(layer) for layer in layered.layers()]
    assert widths[0] == widths[-1] == 1 and all(w <= 3 for w in widths)
    assert len(layered.edges) == sum(a * b for a, b in pairwise(widths))


def test_small_world_keeps_its_lattice_edges_and_its_short_paths() -> None:
    n, k = 200, 4
    topo = make_topology("small-world", n, degree=k, rewire=0.1, seed=3)
    lattice_edges = n * k // 2
    assert lattice_edges <= len(topo.edges) <= lattice_edges + n // 4  # rewiring keeps the count; sinks join the output
    assert topo.max_depth < 40  # oriented by distance from the input, not by index (that would be ~n)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_world_clusters_more_than_a_random_graph_with_the_same_edge_count(seed: int) -> None:
    n = 300
    small_world = make_topology("small-world", n, seed=seed)
    m = len(small_world.edges)
    rng = random.Random(seed)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < m:
        u, v = sorted(rng.sample(range(n), 2))
        pairs.add((u, v))
    random_graph = Topology("random", n, sorted(pairs))
    assert clustering(small_world) > 0.25
    assert clustering(small_world) > 10 * clustering(random_graph)


def test_temperature_falls_from_one_at_the_input_to_zero_at_the_output() -> None:
    topo = make_topology("chain", 5)
    assert [topo.temperature(d) for d in range(5)] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert make_topology("chain", 1).temperature(0) == 1.0


def test_validation_names_what_is_wrong() -> None:
    with pytest.raises(TopologyError, match="cycle"):
        Topology("custom", 3, [(0, 1), (1, 2), (2, 1)]).validate()
    with pytest.raises(TopologyError, match=r"nodes \[2\] are not reachable from the input"):
        Topology("custom", 4, [(0, 1), (1, 3), (2, 3)]).validate()
    with pytest.raises(TopologyError, match="not able to reach the output"):
        Topology("custom", 4, [(0, 1), (0, 2), (1, 3)]).validate()
    with pytest.raises(TopologyError, match="unknown topology 'ring'"):
        make_topology("ring", 4)
    with pytest.raises(TopologyError, match="at least one agent"):
        make_topology("chain", 0)


def test_a_thousand_node_small_world_is_built_quickly_and_stays_sparse() -> None:
    topo = make_topology("small-world", 1000, seed=0)
    assert topo.size == 1000 and len(topo.edges) < 3 * 1000
    assert max(len(layer) for layer in topo.layers()) < 200
