"""Communication metrics of vertex partitions vs brute-force Python loops on small graphs."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.partition.basic import random_partition
from gcntrain.partition.hypergraph import column_nets, km1
from gcntrain.partition.metrics import comm_volume, edge_cut, send_lists, vertex_cut_comm


def random_matrix(n: int, density: float, seed: int, symmetric: bool, loops: bool):
    a = sp.random(n, n, density=density, random_state=seed, format="csr")
    if symmetric:
        a = a + a.T
    if loops:
        a = a + sp.eye(n)
    else:
        a.setdiag(0)
        a.eliminate_zeros()
    a = sp.csr_matrix(a)
    a.sort_indices()
    return a


CASES = [
    (40, 0.08, 0, True, True, 3),
    (40, 0.08, 1, False, False, 4),
    (55, 0.05, 2, True, False, 7),
    (30, 0.2, 3, False, True, 2),
    (25, 0.1, 4, True, True, 25),
]


def rows_of(A):
    return [list(A.indices[A.indptr[i] : A.indptr[i + 1]]) for i in range(A.shape[0])]


def brute_pairs(A, part):
    """{(q, p): set of j} that q must send to p, by plain loops."""
    need = defaultdict(set)
    for i, cols in enumerate(rows_of(A)):
        p = part[i]
        for j in cols:
            if part[j] != p:
                need[(int(part[j]), int(p))].add(int(j))
    return need


@pytest.mark.parametrize("n,dens,seed,sym,loops,P", CASES)
def test_comm_volume_matches_brute_force(n, dens, seed, sym, loops, P):
    A = random_matrix(n, dens, seed, sym, loops)
    part = np.random.default_rng(seed).integers(0, P, n)
    vol = comm_volume(A.indptr, A.indices, part, P)
    need = brute_pairs(A, part)
    send = [0] * P
    recv = [0] * P
    msend = [0] * P
    mrecv = [0] * P
    for (q, p), js in need.items():
        send[q] += len(js)
        recv[p] += len(js)
        msend[q] += 1
        mrecv[p] += 1
    assert vol["send"].tolist() == send
    assert vol["recv"].tolist() == recv
    assert vol["volume_total"] == sum(len(s) for s in need.values())
    assert vol["volume_max_send"] == max(send)
    assert vol["volume_max_recv"] == max(recv)
    pairs = {
        (int(q), int(p)): int(v)
        for q, p, v in zip(vol["pair_src"], vol["pair_dst"], vol["pair_volume"])
    }
    assert pairs == {k: len(s) for k, s in need.items()}
    assert vol["messages_total"] == len(need)
    assert vol["messages_max_send"] == max(msend)
    assert vol["messages_max_recv"] == max(mrecv)
    assert vol["messages_max"] == max(max(msend), max(mrecv))
    nnz = [0] * P
    size = [0] * P
    for i, cols in enumerate(rows_of(A)):
        nnz[part[i]] += len(cols)
        size[part[i]] += 1
    assert vol["nnz_per_part"].tolist() == nnz
    assert vol["nnz_imbalance"] == pytest.approx(max(nnz) / (sum(nnz) / P))
    assert vol["size_imbalance"] == pytest.approx(max(size) / (n / P))


@pytest.mark.parametrize("n,dens,seed,sym,loops,P", CASES)
def test_edge_cut_matches_brute_force(n, dens, seed, sym, loops, P):
    A = random_matrix(n, dens, seed, sym, loops)
    part = np.random.default_rng(seed + 10).integers(0, P, n)
    cut = set()
    for i, cols in enumerate(rows_of(A)):
        for j in cols:
            if part[i] != part[j]:
                cut.add(frozenset((i, j)) if sym else (i, j))
    assert edge_cut(A.indptr, A.indices, part) == len(cut)
    assert comm_volume(A.indptr, A.indices, part, P)["symmetric"] == sym


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8, 16])
@pytest.mark.parametrize(
    "seed,sym,loops", [(0, True, True), (1, False, False), (2, True, False), (3, False, True)]
)
def test_km1_of_column_nets_equals_total_volume(P, seed, sym, loops):
    A = random_matrix(80, 0.05, seed, sym, loops)
    part = np.random.default_rng(seed).integers(0, P, 80)
    net_ptr, pins = column_nets(A.indptr, A.indices)
    assert km1(net_ptr, pins, part) == comm_volume(A.indptr, A.indices, part, P)["volume_total"]
    # and the nets are the columns plus the owner itself
    cols = A.T.tocsr()
    for j in range(80):
        expect = set(cols.indices[cols.indptr[j] : cols.indptr[j + 1]].tolist()) | {j}
        assert set(pins[net_ptr[j] : net_ptr[j + 1]].tolist()) == expect


def test_km1_brute_force_connectivity():
    A = random_matrix(30, 0.15, 7, False, False)
    part = np.random.default_rng(7).integers(0, 4, 30)
    net_ptr, pins = column_nets(A.indptr, A.indices)
    brute = 0
    for j in range(30):
        parts = {int(part[i]) for i in range(30) if A[i, j] != 0} | {int(part[j])}
        brute += len(parts) - 1
    assert km1(net_ptr, pins, part) == brute


@pytest.mark.parametrize("n,dens,seed,sym,loops,P", CASES)
def test_send_lists_are_exact(n, dens, seed, sym, loops, P):
    A = random_matrix(n, dens, seed, sym, loops)
    part = np.random.default_rng(seed + 1).integers(0, P, n)
    sl = send_lists(A.indptr, A.indices, part, P)
    vol = comm_volume(A.indptr, A.indices, part, P)
    need = brute_pairs(A, part)
    got = sl.as_dict()
    assert set(got) == set(need)
    for (q, p), ids in got.items():
        assert ids.tolist() == sorted(need[(q, p)])
        assert np.array_equal(sl.get(q, p), ids)
        assert np.all(part[ids] == q)
    assert sum(len(v) for v in got.values()) == vol["volume_total"]
    assert np.array_equal(sl.src, vol["pair_src"]) and np.array_equal(sl.dst, vol["pair_dst"])
    assert np.array_equal(np.diff(sl.ptr), vol["pair_volume"])
    assert sl.get(0, 0).size == 0


def test_empty_parts_and_single_part():
    A = random_matrix(20, 0.2, 5, True, True)
    part = np.zeros(20, dtype=np.int64)
    v1 = comm_volume(A.indptr, A.indices, part, 1)
    assert v1["volume_total"] == 0 and v1["messages_total"] == 0 and v1["edge_cut"] == 0
    v3 = comm_volume(A.indptr, A.indices, part, 3)  # parts 1 and 2 empty
    assert v3["volume_total"] == 0 and v3["part_sizes"].tolist() == [20, 0, 0]
    assert v3["size_imbalance"] == pytest.approx(3.0)


def test_bad_partition_raises_input_error():
    A = random_matrix(10, 0.3, 0, True, True)
    with pytest.raises(InputError, match="10 vertices"):
        comm_volume(A.indptr, A.indices, np.zeros(9, dtype=np.int64), 2)
    with pytest.raises(InputError, match="part ids"):
        comm_volume(A.indptr, A.indices, np.full(10, 5), 2)


def test_random_partition_volume_close_to_expectation():
    """Balanced random partition: column j is needed by part p with probability
    1 - prod over its pins ...; compare the measured total with the exact expectation
    under iid uniform assignment (close for a balanced random partition)."""
    A = random_matrix(400, 0.02, 9, True, True)
    P = 4
    vols = [
        comm_volume(A.indptr, A.indices, random_partition(400, P, s), P)["volume_total"]
        for s in range(20)
    ]
    # iid expectation: for column j with d other pins (excluding j itself), each of the P-1
    # other parts is hit with probability 1 - (1 - 1/P)^d
    T = A.T.tocsr()
    d = np.array(
        [np.count_nonzero(T.indices[T.indptr[j] : T.indptr[j + 1]] != j) for j in range(400)]
    )
    expect = float(np.sum((P - 1) * (1 - (1 - 1 / P) ** d)))
    assert abs(np.mean(vols) - expect) / expect < 0.05


def test_vertex_cut_comm_brute_force():
    rng = np.random.default_rng(3)
    n, P = 30, 5
    reps = [
        sorted(rng.choice(P, size=rng.integers(0, 4), replace=False).tolist()) for _ in range(n)
    ]
    ptr = np.r_[0, np.cumsum([len(r) for r in reps])]
    flat = np.array([x for r in reps for x in r], dtype=np.int64)
    root = np.array([r[rng.integers(len(r))] if r else -1 for r in reps])
    c = vertex_cut_comm(ptr, flat, root, P)
    send, recv = [0] * P, [0] * P
    pairs = set()
    for v, r in enumerate(reps):
        for x in r:
            if x != root[v]:
                send[x] += 1
                recv[root[v]] += 1
                send[root[v]] += 1
                recv[x] += 1
                pairs |= {(x, int(root[v])), (int(root[v]), x)}
    assert c["send"].tolist() == send and c["recv"].tolist() == recv
    assert c["volume_total"] == sum(send) == 2 * sum(max(len(r) - 1, 0) for r in reps)
    assert c["messages_total"] == len(pairs)
