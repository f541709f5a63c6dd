"""Planning under ``simulate --max-memory`` (`gcntrain.simulate.planmemory`): a store of many
small shards is read in blocks that span shards (the same arrays), the budget counts the
priced plan's phase and the scheme's tables as well as the support's construction, and
``--reorder`` on a store that the plan renumbers is one line naming the real problem."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.cli.main import run as main
from gcntrain.data.generate import rmat
from gcntrain.data.shards import write_row_shards
from gcntrain.data.shards.manifest_check import open_manifest
from gcntrain.data.store import write_graph
from gcntrain.data.store_rows import row_store_blocks, row_store_summary
from gcntrain.errors import InputError
from gcntrain.schemes.registry import SCHEMES
from gcntrain.simulate import planmemory as pm


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("budget")
    g = rmat(7, edge_factor=4, seed=3, num_features=4, num_classes=3)
    write_graph(d / "g.h5", g)
    part = np.random.default_rng(1).integers(0, 9, g.n)
    write_row_shards(g, part, d / "st9", num_parts=9)
    return g, d


@pytest.mark.parametrize("limit", [1, 23, 1 << 20])
def test_blocks_span_shards_and_hold_the_store_rows(store, limit):
    g, d = store
    man = open_manifest(d / "st9")
    s = row_store_summary(man)
    got = list(row_store_blocks(man, s.indptr, limit))
    # the store's rows in order, every block's pointers from 0 over its own entries
    assert [b[0] for b in got] == [0] + [b[1] for b in got[:-1]] and got[-1][1] == g.n
    ix = np.concatenate([b[3] for b in got])
    ptr = np.concatenate([[0]] + [b[2][1:] + s.indptr[b[0]] for b in got])
    assert np.array_equal(ptr, s.indptr)
    order = s.order if s.order is not None else np.arange(g.n)
    where = np.empty_like(order)
    where[order] = np.arange(g.n)
    for r in (0, 17, g.n - 1):  # a row of the store is the graph's row of its original id
        want = np.sort(where[g.indices[g.indptr[order[r]] : g.indptr[order[r] + 1]]])
        assert np.array_equal(np.sort(ix[ptr[r] : ptr[r + 1]]), want)
    if limit == 1 << 20:
        assert len(got) == 1  # one block over all nine shards


def test_budget_counts_the_priced_phase_and_the_schemes_tables():
    n, nnz, P = 1 << 20, 31 << 20, 8192
    base = pm.block_entries(n, nnz, 1 << 30, "g")
    assert pm.block_entries(n, nnz, 1 << 30, "g", tables=SCHEMES["p2p"].plan_table_bytes(P, n, nnz))
    assert base >= pm.MIN_BLOCK
    routes = SCHEMES["plexus"].plan_table_bytes(P, n, nnz)
    with pytest.raises(InputError, match="Plexus' loading routes among 8,192 ranks"):
        pm.block_entries(n, nnz, 1 << 30, "g", tables=routes)
    assert pm.block_entries(n, nnz, 3 << 30, "g", tables=routes)
    # a small graph: the passes over S, not the support's construction, set the need
    with pytest.raises(InputError, match="the support's pattern and the passes over it"):
        pm.block_entries(1 << 16, 1 << 22, 600 << 20, "g")
    with pytest.raises(InputError, match="the support matrix of"):
        pm.block_entries(1 << 20, 1 << 27, 1 << 30, "g")


def test_reorder_on_a_renumbered_store_is_one_line_exit_2(store, capsys):
    _, d = store
    argv = ["simulate", str(d / "st9"), "-P", "4", "--scheme", "1d", "--reorder", "rcm"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reorder rcm needs the whole graph" in err[0], err
    assert "is a directory" not in err[0]
    assert main([*argv[:-2], "--json"]) == 0  # the same plan without --reorder
