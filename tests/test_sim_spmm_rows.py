"""The SpMM kernel's cost per row it sweeps (issue 33): a kernel reads every row's pointers
and writes (or reads back) its output row whatever its entries, so a product over sparse
rows, as 2D's SUMMA stages at a few entries per row, costs more than its entries at the
rate measured on denser graphs.  `gcntrain bench` separates the two over two edge factors
(`split_row_cost`); the profile's ``spmm_row_ns`` prices them; each scheme says how many
rows its kernels sweep (`Scheme.spmm_rows`), checked here against the runtime's calls."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.measure import split_row_cost
from gcntrain.simulate.placement import Placement
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import compute_seconds
from tests.mpi.launch import REPO, run_mpi
from tests.test_machine import GOOD

ROWS = "spmm_row_ns = { 4 = 10.0, 64 = 40.0 }\n"


def _with_rows(text: str = GOOD) -> str:
    return text.replace("[compute]\n", "[compute]\n" + ROWS, 1)


def test_split_recovers_a_known_row_cost_and_rate():
    t_row, t_flop = 7e-9, 2.5e-10  # 4 GFLOP/s per entry
    times = {
        w: [(r, e, r * t_row + 2 * e * w * t_flop) for r, e in ((1000, 4000), (1000, 15000))]
        for w in (4, 16)
    }
    rates, rows = split_row_cost(times, 2)
    assert rows == pytest.approx({4: 7.0, 16: 7.0})
    assert rates == pytest.approx({4: 4.0, 16: 4.0})
    # one graph cannot separate them: the rates of rows and entries together, no row cost
    one = {w: v[:1] for w, v in times.items()}
    rates1, rows1 = split_row_cost(one, 1)
    assert rows1 is None
    want = 2 * 4000 * 4 / (1000 * t_row + 2 * 4000 * 4 * t_flop) / 1e9
    assert rates1[4] == pytest.approx(want)
    # a fit that is not positive (noise: denser took less) is not a cost
    bad = {4: [(1000, 4000, 2e-5), (1000, 15000, 1e-5)]}
    assert split_row_cost(bad, 2)[1] is None


def test_profile_row_costs_are_optional_interpolated_and_checked():
    old = parse_machine(GOOD, "old")
    np.testing.assert_allclose(old.spmm_row_cost([1, 16, 4096]), 0.0)
    m = parse_machine(_with_rows(), "new")
    np.testing.assert_allclose(
        m.spmm_row_cost([2, 4, 16, 64, 4096]), [1e-8, 1e-8, 2.5e-8, 4e-8, 4e-8]
    )
    with pytest.raises(InputError, match="spmm_row_ns"):
        parse_machine(_with_rows().replace("4 = 10.0", "4 = -1"), "bad")
    with pytest.raises(InputError, match="spmm_row_ns"):
        parse_machine(GOOD.replace("[compute]\n", "[compute]\nspmm_row_ns = 3\n", 1), "bad")


def test_compute_prices_each_swept_row_at_the_products_width():
    m = parse_machine(_with_rows(), "new")
    place = Placement(2, 1, m)
    work = np.array([[100, 2 * 100 * 4, 0, 0], [0, 0, 0, 0]])  # rank 1: no product
    rows = np.array([50, 50])
    base = compute_seconds(work, np.zeros(2), place)["spmm"]
    got = compute_seconds(work, np.zeros(2), place, rows=rows)["spmm"]
    speed = place.speed("spmm")
    np.testing.assert_allclose(got - base, [50 * 1e-8 / speed, 0.0], rtol=1e-12)
    # an older profile prices no rows
    old = Placement(2, 1, parse_machine(GOOD, "old"))
    a = compute_seconds(work, np.zeros(2), old)["spmm"]
    np.testing.assert_allclose(compute_seconds(work, np.zeros(2), old, rows=rows)["spmm"], a)


@pytest.fixture(scope="module")
def cora_like(tmp_path_factory):
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph

    path = tmp_path_factory.mktemp("rows") / "g.h5"
    write_graph(path, rmat(9, edge_factor=2, seed=5, num_features=12, num_classes=3))
    return str(path)


@pytest.mark.mpi
@pytest.mark.parametrize("grid", ["1x2", "2x1"])
def test_2d_rows_swept_per_product_are_the_runtimes(cora_like, grid):
    """Each rank's kernels in one aggregate (and transposed) product sweep as many rows as
    `spmm_rows` prices: one kernel per SUMMA stage with entries, over the block's rows."""
    worker = str(REPO / "tests" / "mpi" / "rows_worker.py")
    res = run_mpi(2, [sys.executable, worker, cora_like, "2d", grid], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0
    sim = plan_training(PlanTarget(cora_like, TrainConfig(epochs=1), "2d", 2, {"grid": grid}))
    for method in ("aggregate", "aggregate_t"):
        call = next(c for c in sim.calls if c.method == method)
        want = sim.scheme.spmm_rows(sim.ctx, call)
        assert want.min() > 0
        assert [r[method] for r in got["rows_per_call"]] == want.tolist()


def test_a_2d_product_costs_its_swept_rows_more(cora_like):
    """The whole time model: a 2D plan priced with row costs spends exactly its swept rows x
    the cost per row more in SpMM than without, per rank."""
    from gcntrain.simulate.timing import call_compute

    sim = plan_training(PlanTarget(cora_like, TrainConfig(epochs=1), "2d", 2, {"grid": "1x2"}))
    call = next(c for c in sim.calls if c.method == "aggregate")
    old = Placement(2, 1, parse_machine(GOOD, "old"))
    new = Placement(2, 1, parse_machine(_with_rows(), "new"))
    a = call_compute(sim.scheme, sim.ctx, call, old)["spmm"]
    b = call_compute(sim.scheme, sim.ctx, call, new)["spmm"]
    width = call.shape(0)[1] / 2  # the rank's column chunk
    rows = sim.scheme.spmm_rows(sim.ctx, call)
    cost = new.machine.spmm_row_cost(width) / new.speed("spmm")
    np.testing.assert_allclose(b - a, rows * cost, rtol=1e-9)
