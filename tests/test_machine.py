"""Machine profiles (shipped and user files, one-line errors) and the α-β costs of the
collective algorithms against their closed forms."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gcntrain.errors import InputError
from gcntrain.simulate import collectives as C
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.machine import Link, parse_machine, shipped

GOOD = """
name = "mine"
sources = ["measured"]
[node]
cores = 8
ranks = 2
memory_bandwidth_gbs = 50
[network.intra]
latency_us = 1.5
bandwidth_gbs = 5
[network.inter]
latency_us = 3
bandwidth_gbs = 10
injection_gbs = 12
[compute]
spmm_gflops = { 16 = 2.0, 4 = 1.0, 64 = 4.0 }
gemm_gflops = 30
quant_gelems = 0.5
other_gelems = 0.2
call_overhead_us = 15
"""


@pytest.mark.parametrize("name", ["fugaku", "abci"])
def test_shipped_profiles_load_and_state_their_sources(name):
    m = load_machine(name)
    assert m.name == name and len(m.sources) >= 2 and name in shipped()
    assert m.inter.alpha > 0 and m.intra.beta > 0 and m.ranks_per_node >= 1
    assert np.all(np.diff(m.spmm_rate([1, 8, 64, 1024])) >= 0)
    # each names its topology, and its thread scaling is derived (no bench was run there)
    assert m.topology.kind in ("torus", "fattree") and "roofline" in m.threads_source


def test_local_is_this_machine_not_a_shipped_stand_in():
    """``local`` is this host's cached profile (the suite's: tests/golden/local-profile.toml),
    with the host's core count and measured thread scaling; no file ships under that name."""
    from gcntrain.comm.env import host_cores

    m = load_machine("local")
    assert "local" not in shipped() and m.name == "local"
    assert m.cores == host_cores() and m.path.endswith(".toml")


def test_user_profile_file_units_interpolation_and_injection_share(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    m = load_machine(str(path))
    assert m.intra == Link(1.5e-6, 1 / 5e9) and m.inter.alpha == 3e-6
    assert m.spmm_widths == (4, 16, 64)
    np.testing.assert_allclose(m.spmm_rate([2, 4, 8, 16, 1000]), [5e8, 1e9, 1.5e9, 2e9, 4e9])
    # below the narrowest width a stored entry costs what it costs there (index-bound)
    t = 2 * np.array([1.0, 2.0, 4.0]) / m.spmm_rate([1, 2, 4])
    np.testing.assert_allclose(t, t[-1])
    # 2 ranks share 12 GB/s of injection: 6 GB/s each, below the 10 GB/s pair bandwidth
    assert m.inter_link(2).beta == pytest.approx(2 / 12e9)
    assert m.inter_link(1).beta == pytest.approx(1 / 10e9)


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda s: s.replace("[compute]", "[compute"), "malformed machine profile"),
        (lambda s: s.replace("latency_us = 3", "latency_us = -3"), "network.inter.latency_us"),
        (lambda s: s.replace("cores = 8", "cores = 8.5"), "node.cores must be an integer"),
        (lambda s: s.replace("gemm_gflops = 30", ""), "lacks compute.gemm_gflops"),
        (lambda s: s.replace("[network.intra]", "[network.other]"), "[network.intra]"),
        (lambda s: s.replace("16 = 2.0", "x = 2.0"), "keys must be widths"),
        (lambda s: s.replace("gemm_gflops = 30", "gemm_gflops = { kn = 3 }"), "keys must be k"),
        (lambda s: s.replace("gemm_gflops = 30", "gemm_gflops = { 16 = -1 }"), "gflops.16"),
        (lambda s: s.replace("gemm_gflops = 30", "gemm_gflops = { 0 = 1 }"), "keys must be >= 1"),
        (lambda s: s.replace("ranks = 2", "ranks = 2\nbusy_compute_factor = 0"), "busy_compute"),
        (lambda s: s + "[compute.threads]\nspmm = { 1 = 1, 4 = 3 }\n", "threads.gemm"),
        (
            lambda s: (
                s
                + "[compute.threads]\n"
                + "".join(f"{k} = {{ 1 = 1, 16 = 9 }}\n" for k in ("spmm", "gemm", "other"))
            ),
            "16 threads, more than node.cores = 8",
        ),
        (lambda s: s + '[network.topology]\nkind = "ring"\n', "topology.kind must be one"),
        (lambda s: s + '[network.topology]\nkind = "torus"\n', "topology.link_gbs"),
        (
            lambda s: s + '[network.topology]\nkind = "fattree"\ntaper = 0.5\n',
            "taper must be >= 1",
        ),
        (lambda s: s.replace('name = "mine"', "name = 3"), "name must be a string"),
    ],
)
def test_bad_profiles_are_one_line_errors(tmp_path, edit, needle):
    path = tmp_path / "bad.toml"
    path.write_text(edit(GOOD))
    with pytest.raises(InputError, match=needle.replace("[", r"\[").replace("]", r"\]")) as e:
        load_machine(str(path))
    assert "\n" not in str(e.value)


def test_unknown_keys_are_errors_with_the_closest_names(tmp_path):
    """A key the parser never asks for is a typo or an invention: one line naming it and
    the closest keys of its table (issue 51, item 6)."""
    from gcntrain.simulate.machine import MACHINES_DIR

    text = (MACHINES_DIR / "fugaku.toml").read_text()
    assert "\nwraparound" in text
    cases = [
        (text.replace("\nwraparound", "\nwrap_around"), "network.topology.wrap_around"),
        (text.replace("[node]", "warp_speed = 9\n[node]", 1), "warp_speed"),
        (text.replace("[node]", "[node]\ncorez = 48", 1), "node.corez (closest: cores"),
    ]
    for i, (bad, needle) in enumerate(cases):
        path = tmp_path / f"bad{i}.toml"
        path.write_text(bad)
        with pytest.raises(InputError, match=re.escape(f"unknown key {needle}")):
            load_machine(str(path))
    assert "wraparound" in str(
        pytest.raises(InputError, load_machine, str(tmp_path / "bad0.toml")).value
    )


def test_unknown_profile():
    want = "unknown machine profile 'summit'.*local.*abci, abci-gpu, fugaku"
    with pytest.raises(InputError, match=want):
        load_machine("summit")


def test_parse_reports_the_path():
    with pytest.raises(InputError) as e:
        parse_machine("name = 1", "/x/p.toml")
    assert "/x/p.toml" in str(e.value)


L = Link(2e-6, 1e-9)


def test_collectives_closed_forms():
    n = 1e6
    # p = 1: free; p = 2: one exchange
    for f in (C.allreduce, C.allgather, C.reduce_scatter, C.bcast):
        assert f(1, n, L) == 0.0
    assert C.allreduce(2, n, L) == pytest.approx(min(2e-6 + 1e-3, 4e-6 + 1e-3))
    # p = 8: recursive doubling 3 (α + nβ) = 3.006e-3 vs Rabenseifner 6α + 1.75 nβ
    assert C.allreduce(8, n, L) == pytest.approx(6 * 2e-6 + 1.75e-3)
    assert C.allreduce(8, 8.0, L) == pytest.approx(3 * (2e-6 + 8e-9))  # small: doubling
    assert C.allgather(8, n, L) == pytest.approx(3 * 2e-6 + 7e-3)
    assert C.reduce_scatter(8, n, L) == pytest.approx(3 * 2e-6 + 0.875e-3)
    assert C.bcast(8, 8.0, L) == pytest.approx(3 * (2e-6 + 8e-9))  # binomial
    assert C.bcast(8, 1e8, L) == pytest.approx(10 * 2e-6 + 1.75e-1)  # scatter + allgather
    assert C.alltoallv(3, 5e5, 2e5, L) == pytest.approx(6e-6 + 5e-4)
    assert C.alltoallv(0, 0, 0, L) == 0.0
    assert C.point_to_point(4, 1e3, L) == pytest.approx(8e-6 + 1e-6)


def test_collectives_are_vectorised_and_monotone():
    p = np.array([1, 2, 3, 4, 64, 1000])
    for f in (C.allreduce, C.allgather, C.reduce_scatter, C.bcast):
        t = f(p, 4096, L)
        assert t.shape == p.shape and t[0] == 0 and np.all(np.diff(t) >= 0)
        assert np.all(f(64, np.array([1e2, 1e4, 1e6]), L) > 0)
        assert np.all(np.diff(f(64, np.array([1e2, 1e4, 1e6]), L)) > 0)


def test_gemm_rate_follows_the_products_short_dimensions():
    """The same dense flops over more rows (narrower k x n) take longer with a table of GEMM
    rates, and exactly as long with one rate; work without dense rows prices at the top."""
    from gcntrain.simulate.timing import Placement, compute_seconds

    table = parse_machine(GOOD.replace("gemm_gflops = 30", "gemm_gflops = { 16 = 10, 1024 = 40 }"))
    flat = parse_machine(GOOD)
    flops = 2 * 1000 * 1024
    # 1000 rows at k n = 1024, 64000 rows at k n = 16, unknown rows
    work = np.array([[0, 0, flops, 1000], [0, 0, flops, 64000], [0, 0, flops, 0]])
    q = np.zeros(3)
    t = compute_seconds(work, q, Placement(3, 3, table))["gemm"]
    assert t[0] == pytest.approx(flops / (40e9 * table.cores_per_rank(3)))
    assert t[1] == pytest.approx(4 * t[0]) and t[2] == pytest.approx(t[0])
    f = compute_seconds(work, q, Placement(3, 3, flat))["gemm"]
    assert f[0] == pytest.approx(f[1]) == pytest.approx(f[2])


def test_an_older_benchs_busy_factor_still_prices_as_it_did():
    """A profile written by an older `gcntrain bench` (``busy_compute_factor`` f, no thread
    tables) loads, and its derived scaling prices compute as the older model did: f times
    the one-core rates when every core of the node computes, linearly between; the per-call
    cost is not scaled."""
    from gcntrain.simulate.timing import Placement, compute_seconds, other_seconds

    text = GOOD.replace("[network.intra]", "busy_compute_factor = 1.4\n[network.intra]")
    m, flat = parse_machine(text), parse_machine(GOOD)
    assert "busy_compute_factor" in m.threads_source and m.cores == 8
    work = np.array([[1000, 2 * 1000 * 16, 2 * 500 * 256, 500]])
    fp = {"rows": np.array([100]), "col_fraction": np.array([1.0])}
    calls = 10 * flat.call_overhead
    for P, k, slow_by in ((1, 1, 1.4), (8, 8, 1.4), (3, 3, 1 + 0.4 * 5 / 7)):
        work_p = np.repeat(work, P, axis=0)
        fast = compute_seconds(work_p, np.zeros(P), Placement(P, k, flat))
        slow = compute_seconds(work_p, np.zeros(P), Placement(P, k, m))
        for kind in ("spmm", "gemm"):
            np.testing.assert_allclose(slow[kind], slow_by * fast[kind])
        fp_p = {key: np.repeat(v, P) for key, v in fp.items()}
        a = other_seconds(fp_p, [8, 4], 10, Placement(P, k, flat))
        b = other_seconds(fp_p, [8, 4], 10, Placement(P, k, m))
        np.testing.assert_allclose(b - calls, slow_by * (a - calls))
