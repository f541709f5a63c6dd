"""p2p's backward product by reverse exchange (the hypergraph paper's Algorithm 2).

Expected row counts are computed here from the matrix pattern and the partition with scipy:
the forward exchange (rows of X each part needs for its rows of S), the fetch exchange (the
same for S^T) and the backward product's choice per pair of ranks (the reverse exchange when
the forward rows between the two ranks, both directions, are fewer than the fetch rows).  The
MPI worker (tests/mpi/worker_p2p_reverse.py) reports what each rank measured, whether its
weights after 5 epochs equal serial training (float64, 1e-5) and whether every phase equals
the plan.  Its cases (`p2preverse`, `gemat11`) run in the one `tests/mpi/worker_fast.py`
launch of their rank count (tests/mpi/batch.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.partition_file import write_partition
from gcntrain.data.store import write_graph
from gcntrain.partition.result import PartitionResult
from tests.mpi import worker_p2p_reverse as W
from tests.mpi.batch import worker_case

NPROCS = [1, 2, 3, 4]


def rows_between(A: sp.csr_matrix, part: np.ndarray, P: int) -> np.ndarray:
    """(P, P) V with V[q, p] = the distinct rows j owned by q (q != p) that part p's rows of
    A have an entry in: the rows q sends p for ``A @ X``."""
    n = A.shape[0]
    pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    owner = sp.csr_matrix((np.ones(n), (part, np.arange(n))), shape=(P, n))
    touches = (owner @ pattern).tocsc() > 0  # [p, j]: a row of part p has column j
    V = np.asarray((touches @ owner.T).todense()).T  # [q, p]: columns of q touched by p
    np.fill_diagonal(V, 0)
    return V.astype(np.int64)


def expected(g, part: np.ndarray, P: int) -> dict:
    """Forward, fetch and backward rows per ordered pair of ranks, from the pattern."""
    A = sp.csr_matrix((np.ones(g.nnz), g.indices, g.indptr), shape=(g.n, g.n))
    V = rows_between(A, part, P)  # forward: V[q, p] rows q -> p
    T = rows_between(A.T.tocsr(), part, P)  # fetch: T[q, p] rows q -> p
    reverse = (V + V.T) < (T + T.T)
    B = np.where(reverse, V.T, T)  # backward: B[p, q] rows p -> q
    np.fill_diagonal(reverse, False)
    linked = (V + V.T) > 0
    mode = "fetch" if not reverse.any() else "reverse" if (reverse == linked).all() else "mixed"
    return {"fwd": V, "fetch": T, "bwd": B, "mode": mode}


def per_rank(M: np.ndarray) -> np.ndarray:
    """(P, 2): rows each rank sends and receives under pair matrix M[src, dst]."""
    return np.stack([M.sum(axis=1), M.sum(axis=0)], axis=1)


def launch(batches, nprocs: int, case: str) -> dict:
    """The verdict of worker case `case` at `nprocs` ranks (from the rank count's batch),
    asserting that every rank passed it."""
    verdict = batches.verdict(nprocs, case)
    bad = [d for d in verdict["details"] if d.get("plan_diffs") or d.get("rel_err", 0) > W.TOL]
    assert verdict["ok"], bad or verdict["details"]
    assert verdict["ranks"] == nprocs
    return verdict


def measured(details: list, graph: str, model: str, P: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, 2) rows sent / received per rank in the forward and the backward product."""
    fwd, bwd = np.zeros((P, 2), np.int64), np.zeros((P, 2), np.int64)
    for d in details:
        if d["graph"] == graph and d["model"] == model:
            fwd[d["rank"]], bwd[d["rank"]] = d["fwd"], d["bwd"]
    return fwd, bwd


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [3])
@worker_case("gemat11")
def test_gemat11_backward_moves_the_forward_rows(worker_batches, nprocs):
    """gemat11 with the authors' partition at np = 3: 1,846 rows per SpMM both ways (fetching
    S^T's rows would move 4,221), each rank sending back what it received, bytes as planned,
    weights equal to serial."""
    g, part = W.gemat11(), W.gemat11_partition()
    e = expected(g, part, 3)
    assert e["fwd"].sum() == 1846 and e["fetch"].sum() == 4221 and e["mode"] == "reverse"
    verdict = launch(worker_batches, 3, "gemat11")
    fwd, bwd = measured(verdict["details"], "gemat11", "gcn", 3)
    assert fwd.tolist() == per_rank(e["fwd"]).tolist()
    assert bwd.tolist() == fwd[:, ::-1].tolist()  # the forward pattern reversed
    assert fwd[:, 0].sum() == bwd[:, 0].sum() == 1846
    notes = verdict["details"][0]["notes"]
    assert notes["backward"] == "reverse"
    assert (notes["forward_rows"], notes["backward_rows"], notes["fetch_rows"]) == (
        1846,
        1846,
        4221,
    )


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("p2preverse")
def test_directed_graphs_equal_serial_and_plan(worker_batches, nprocs):
    """Directed R-MAT and hub graphs, GCN and GraphSAGE: weights after 5 epochs equal serial,
    every phase equals the plan, each rank's backward rows follow the per-pair choice; on an
    undirected graph the backward product keeps the S^T fetch (the bytes of before).  A
    product repeated gives the same sums through the same message buffers."""
    verdict = launch(worker_batches, nprocs, "p2preverse")
    cases = W.directed_cases(nprocs) + W.symmetric_cases(nprocs)
    modes = {}
    for label, g, part in cases:
        e = expected(g, part, nprocs)
        for model in ("gcn", "sage"):
            fwd, bwd = measured(verdict["details"], label, model, nprocs)
            assert fwd.tolist() == per_rank(e["fwd"]).tolist(), (label, model)
            assert bwd.tolist() == per_rank(e["bwd"]).tolist(), (label, model)
            notes = next(
                d["notes"]
                for d in verdict["details"]
                if d["graph"] == label and d["model"] == model
            )
            assert notes["backward"] == e["mode"], (label, model)
            assert notes["backward_rows"] == e["bwd"].sum()
            modes[label] = e["mode"]
    for d in verdict["details"]:  # repeated products: same sums, same message buffers
        assert d["repeat_identical"] and d["buffers_reused"], d["graph"]
        assert d["results_own_memory"], d["graph"]
        # one node here: node windows; message buffers only where S^T is not S (GCN on
        # the undirected graph multiplies by S both ways, through the windows)
        assert d["windowed"] == (nprocs > 1), d["graph"]
        both_ways = d["graph"] == "rmat-undirected-random" and d["model"] == "gcn"
        assert (d["buffers"] > 0) == (nprocs > 1 and not both_ways), (d["graph"], d["model"])
    # the undirected graph: the S^T fetch, which on a symmetric pattern is the forward pattern
    sym = W.symmetric_cases(nprocs)[0]
    e = expected(*sym[1:], nprocs)
    assert (e["bwd"] == e["fetch"]).all() and (e["fetch"] == e["fwd"]).all()
    if nprocs == 1:
        assert set(modes.values()) == {"fetch"}
        return
    assert modes["hubs-random"] == "reverse" and modes[sym[0]] == "fetch"
    if nprocs > 2:
        assert "mixed" in modes.values()
    for _, g, part in W.directed_cases(nprocs):  # never more rows than either exchange
        e = expected(g, part, nprocs)
        assert e["bwd"].sum() <= min(e["fwd"].sum(), e["fetch"].sum())
        assert e["bwd"].sum() < e["fetch"].sum() or e["mode"] == "fetch"


def simulate_json(capsys, graph, extra: list[str]) -> dict:
    args = ["simulate", str(graph), "--ranks", "3", "--scheme", "p2p", "--epochs", "2"]
    code = run([*args, "--json", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_simulate_json_shows_the_backward_exchange(tmp_path, capsys):
    """`simulate --json` names the backward exchange and its rows: reverse on gemat11 with
    the authors' partition, fetch on an undirected graph (GCN) and on its GraphSAGE support
    (unsymmetric values, symmetric pattern)."""
    g, part = W.gemat11(), W.gemat11_partition()
    write_graph(tmp_path / "g.h5", g)
    res = PartitionResult("hypergraph", 3, part=part, graph_content_hash=g.content_hash())
    write_partition(tmp_path / "p.h5", res)
    d = simulate_json(capsys, tmp_path / "g.h5", ["--partition", str(tmp_path / "p.h5")])
    e = expected(g, part, 3)
    assert d["plan_notes"] == {
        "backward": "reverse",
        "backward_rows": int(e["bwd"].sum()),
        "forward_rows": int(e["fwd"].sum()),
        "fetch_rows": int(e["fetch"].sum()),
        "rank_pairs": 3,
        "reverse_rank_pairs": 3,
    }
    u = rmat(7, edge_factor=4, seed=2, num_features=6, num_classes=3)
    write_graph(tmp_path / "u.h5", u)
    for model in ("gcn", "sage"):
        d = simulate_json(capsys, tmp_path / "u.h5", ["--model", model])
        assert d["plan_notes"]["backward"] == "fetch"
        assert d["plan_notes"]["reverse_rank_pairs"] == 0
        assert d["symmetric"] == (model == "gcn")
