"""The MPI libraries' collective selection (`gcntrain.simulate.mpi_rules`) and the costs of
the algorithms they select (`gcntrain.simulate.collectives.plan`)."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.errors import InputError
from gcntrain.simulate import collectives as C
from gcntrain.simulate import mpi_rules as R
from gcntrain.simulate.machine import MACHINES_DIR, Link, parse_machine

LINKS = (Link(2e-6, 1e-9), Link(1e-6, 2e-10, eager=16384, rendezvous=3e-6))


def pick(rules, collective, p, n):
    return str(R.select(rules, collective, p, n).item())


# -- selection tables at their thresholds --------------------------------------------------
@pytest.mark.parametrize("collective", sorted(R.OMPI))
def test_openmpi_rows_switch_at_each_bound(collective):
    """One byte below a bound the row's earlier algorithm, at and above it the next; at
    both ends of every row's communicator range (`select` agrees where Open MPI has no
    fall-back for the communicator: Allgather(v) are checked below)."""
    rows = R.OMPI[collective]

    def raw(p, n):
        return R.rows_choice(rows, np.array([float(p)]), np.array([float(n)]))[0]

    low = 2
    for below_p, cuts, above in rows:
        names = [a for _, a in cuts] + [above]
        for p in {low, int(min(below_p, 1 << 14)) - 1}:
            for i, (bound, _) in enumerate(cuts):
                for n, want in (
                    (bound - 1, names[i]),
                    (bound, names[i + 1]),
                    (bound + 1, names[i + 1]),
                ):
                    assert raw(p, n) == want, (p, n)
                    if collective not in ("allgather", "allgatherv"):
                        assert pick("openmpi", collective, p, n) == want
            assert raw(p, 1e12) == above
        low = below_p


def test_openmpi_allgather_rows_raw_and_fallbacks():
    rows = R.OMPI["allgather"]
    for p in (32, 63):
        got = [R.rows_choice(rows, np.array([p]), np.array([n]))[0] for n in (1023, 1024, 65536)]
        assert got == ["recursive_doubling", "neighbor", "ring"]
    # recursive doubling needs a power of two, neighbour exchange an even p
    assert pick("openmpi", "allgather", 32, 100) == "recursive_doubling"
    assert pick("openmpi", "allgather", 33, 100) == "bruck"
    assert pick("openmpi", "allgather", 34, 2000) == "neighbor"
    assert pick("openmpi", "allgather", 35, 2000) == "ring"
    assert pick("openmpi", "allgather", 2, 10**9) == "two_proc"
    assert pick("openmpi", "allgatherv", 1025, 4095) == "bruck"
    assert pick("openmpi", "allgatherv", 1025, 4096) == "ring"  # neighbour on odd p
    assert pick("openmpi", "allgatherv", 1026, 4096) == "neighbor"


def test_openmpi_spot_values_from_the_source():
    """Literal cells of coll_tuned_decision_fixed.c (not derived from the tables here)."""
    assert [pick("openmpi", "alltoallv", p, 0) for p in (3, 4, 63, 64, 127, 128)] == [
        "pairwise",
        "linear",
        "linear",
        "pairwise",
        "pairwise",
        "linear",
    ]
    assert [pick("openmpi", "alltoallv", p, 0) for p in (255, 256, 1023, 1024, 2048)] == [
        "linear",
        "pairwise",
        "pairwise",
        "linear",
        "linear",
    ]
    assert pick("openmpi", "ialltoallv", 2048, 0) == "linear"
    assert pick("openmpi", "allreduce", 2048, 16383) == "recursive_doubling"
    assert pick("openmpi", "allreduce", 2048, 16384) == "rabenseifner"
    assert pick("openmpi", "allreduce", 1024, 2047) == "nonoverlapping"
    assert pick("openmpi", "bcast", 1000, 20000) == "split_binary_tree"
    assert pick("openmpi", "bcast", 2048, 1 << 20) == "scatter_allgather"
    assert pick("openmpi", "alltoall", 2048, 460_000) == "linear"
    assert pick("openmpi", "alltoall", 1023, 262144) == "pairwise"
    assert pick("openmpi", "alltoall", 1024, 262144) == "linear_sync"
    assert pick("openmpi", "reduce_scatter", 600, 100_000) == "butterfly"


def test_mpich_thresholds():
    m = "mpich"
    # Bcast: binomial below 8 ranks or up to 12288 bytes; powers of two scatter +
    # recursive doubling up to 524288; else scatter + ring
    assert pick(m, "bcast", 7, 10**8) == "binomial"
    for p, big in ((16, "scatter_allgather"), (12, "scatter_ring_allgather")):
        assert pick(m, "bcast", p, 12287) == "binomial"
        assert pick(m, "bcast", p, 12288) == "binomial"
        assert pick(m, "bcast", p, 12289) == big
    assert pick(m, "bcast", 16, 524288) == "scatter_allgather"
    assert pick(m, "bcast", 16, 524289) == "scatter_ring_allgather"
    # Allreduce: recursive doubling up to 8 bytes or while count < the largest 2^k <= p
    assert pick(m, "allreduce", 8, 8) == "recursive_doubling"
    assert pick(m, "allreduce", 8, 31) == "recursive_doubling"  # 7.75 float32 < 8
    assert pick(m, "allreduce", 8, 32) == "rabenseifner"
    assert pick(m, "allreduce", 12, 32) == "rabenseifner"  # 2^k <= 12 is 8
    assert pick(m, "allreduce", 2, 9) == "rabenseifner"
    # Allgather(v) on p x block: 524288 (powers of two), 81920 (others)
    for coll in ("allgather", "allgatherv"):
        assert pick(m, coll, 16, (524288 - 1) / 16) == "recursive_doubling"
        assert pick(m, coll, 16, 524288 / 16) == "ring"
        assert pick(m, coll, 10, 8191.9) == "bruck"
        assert pick(m, coll, 10, 8192) == "ring"
    assert pick(m, "reduce_scatter", 4, 524287) == "recursive_halving"
    assert pick(m, "reduce_scatter", 4, 524288) == "pairwise"
    # Alltoall per destination: Bruck from 8 ranks up to 256, scattered to 32768
    assert pick(m, "alltoall", 8, 256) == "bruck"
    assert pick(m, "alltoall", 8, 257) == "scattered"
    assert pick(m, "alltoall", 7, 256) == "scattered"
    assert pick(m, "alltoall", 8, 32768) == "scattered"
    assert pick(m, "alltoall", 8, 32769) == "pairwise"
    assert pick(m, "alltoallv", 2048, 0) == "scattered"
    assert pick(m, "ialltoallv", 2048, 0) == "blocked"


def test_select_is_vectorised_and_min_names_nothing():
    got = R.select("mpich", "bcast", np.array([4, 16, 16]), np.array([1e6, 1e3, 1e6]))
    assert got.tolist() == ["binomial", "binomial", "scatter_ring_allgather"]
    assert set(R.select("min", "allreduce", [2, 4], 8).tolist()) == {"min"}
    with pytest.raises(ValueError):
        R.select("intel", "bcast", 4, 8)
    with pytest.raises(ValueError):
        R.select("mpich", "scan", 4, 8)


def test_one_way():
    assert R.one_way("min", "alltoallv", 2048)
    assert not R.one_way("openmpi", "alltoallv", 2048)  # basic linear: all at once
    assert R.one_way("openmpi", "alltoallv", 512)  # pairwise
    assert not R.one_way("openmpi", "ialltoallv", 512)  # libnbc linear
    assert R.one_way("mpich", "alltoallv", 2048)  # blocks of 32 consecutive shifts
    assert R.one_way("mpich", "ialltoallv", 34)
    assert not R.one_way("mpich", "alltoallv", 33)  # one block: every shift at once
    assert R.one_way("mpich", "alltoall", 64, 100)  # Bruck
    assert R.one_way("mpich", "alltoall", 64, 10**6)  # pairwise


# -- "min" is today's model ---------------------------------------------------------------
def _lat(count, size, link):
    return np.asarray(count, float) * link.latency(size)


def _today(name, p, n, link):
    """The collectives' α-β minimum as the model priced them before the rules."""
    lg = np.ceil(np.log2(np.maximum(p, 1.0)))
    part = n / np.maximum(p, 1)
    frac = (p - 1) / np.maximum(p, 1)
    if name == "allreduce":
        t = np.minimum(
            _lat(lg, n, link) + lg * n * link.beta,
            _lat(2 * lg, part, link) + 2 * frac * n * link.beta,
        )
    elif name == "allgather":
        t = np.minimum(
            _lat(lg, n, link) + (p - 1) * n * link.beta,
            _lat(p - 1, n, link) + (p - 1) * n * link.beta,
        )
    elif name == "reduce_scatter":
        t = np.minimum(_lat(lg, part, link), _lat(p - 1, part, link)) + frac * n * link.beta
    elif name == "bcast":
        t = np.minimum(
            _lat(lg, n, link) + lg * n * link.beta,
            _lat(lg + p - 1, part, link) + 2 * frac * n * link.beta,
        )
    else:  # alltoall: pairwise, (p - 1) peers of n
        b = (p - 1) * n
        t = np.where(p - 1 <= 0, 0.0, _lat(p - 1, b / np.maximum(p - 1, 1), link) + b * link.beta)
    return np.where(p <= 1, 0.0, t)


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("name", ["allreduce", "allgather", "reduce_scatter", "bcast", "alltoall"])
def test_min_is_todays_model(name, link):
    p, n = np.meshgrid(
        np.array([1, 2, 3, 4, 7, 8, 16, 100, 1024, 2048.0]), np.geomspace(1, 1e9, 19)
    )
    p, n = p.ravel(), n.ravel()
    fn = getattr(C, name)
    want = _today(name, p, n, link)
    np.testing.assert_array_equal(fn(p, n, link), want)
    np.testing.assert_array_equal(fn(p, n, link, rules="min"), want)


@pytest.mark.parametrize("link", LINKS)
def test_min_alltoallv_is_todays_model(link):
    rng = np.random.default_rng(0)
    peers = rng.integers(0, 50, 200).astype(float)
    sent, recv = rng.uniform(0, 1e7, 200), rng.uniform(0, 1e7, 200)
    vol = np.maximum(sent, recv)
    want = np.where(
        peers <= 0, 0.0, _lat(peers, vol / np.maximum(peers, 1), link) + vol * link.beta
    )
    np.testing.assert_array_equal(C.alltoallv(peers, sent, recv, link), want)
    got = C.alltoallv(peers, sent, recv, link, "min", p=2048, nonblocking=True, idle=9)
    np.testing.assert_array_equal(got, want)


# -- each algorithm's messages and bytes at small p ----------------------------------------
def counts(collective, alg, p, n=1.0):
    steps, nbytes = C.plan(collective, alg, p, n)
    return float(sum(np.asarray(c, float) for c, _ in steps)), float(nbytes)


@pytest.mark.parametrize("p", [2, 3, 4, 7, 8])
def test_textbook_messages_and_bytes(p):
    lg = int(np.ceil(np.log2(p)))
    n = 840.0  # divisible by 2..8
    frac = (p - 1) / p
    want = {
        ("allreduce", "recursive_doubling"): (lg, lg * n),
        ("allreduce", "rabenseifner"): (2 * lg, 2 * frac * n),
        ("allreduce", "ring"): (2 * (p - 1), 2 * frac * n),
        ("allreduce", "segmented_ring"): (2 * (p - 1), 2 * frac * n),
        ("allreduce", "nonoverlapping"): (2 * lg, 2 * lg * n),
        ("bcast", "binomial"): (lg, lg * n),
        ("bcast", "scatter_allgather"): (2 * lg, 2 * frac * n),
        ("bcast", "scatter_ring_allgather"): (lg + p - 1, 2 * frac * n),
        ("bcast", "linear"): (p - 1, (p - 1) * n),
        ("bcast", "pipeline"): (p - 1, (p - 1) * n),
        ("allgather", "recursive_doubling"): (lg, (p - 1) * n),
        ("allgather", "bruck"): (lg, (p - 1) * n),
        ("allgather", "ring"): (p - 1, (p - 1) * n),
        ("allgatherv", "ring"): (p - 1, (p - 1) * n),
        ("allgatherv", "default"): (p - 1 + lg, (p - 1) * n + lg * p * n),
        ("reduce_scatter", "recursive_halving"): (lg, frac * n),
        ("reduce_scatter", "butterfly"): (lg, frac * n),
        ("reduce_scatter", "pairwise"): (p - 1, frac * n),
        ("reduce_scatter", "ring"): (p - 1, frac * n),
        ("reduce_scatter", "nonoverlapping"): (lg + p - 1, lg * n + frac * n),
        ("alltoall", "pairwise"): (p - 1, (p - 1) * n),
        ("alltoall", "linear"): (p - 1, (p - 1) * n),
        ("alltoall", "scattered"): (p - 1, (p - 1) * n),
    }
    for (coll, alg), (msgs, nbytes) in want.items():
        got = counts(coll, alg, p, n)
        assert got == pytest.approx((msgs, nbytes)), (coll, alg, p)
    # Bruck's Alltoall: ceil(log2 p) steps; step k sends the blocks whose index has bit k
    blocks = sum(sum(1 for j in range(p) if j >> k & 1) for k in range(lg))
    assert counts("alltoall", "bruck", p, n) == pytest.approx((lg, blocks * n))
    # trees: the root's message to the farthest rank
    assert counts("bcast", "chain", p)[0] == min(4, p - 1) - 1 + np.ceil((p - 1) / min(4, p - 1))
    assert counts("bcast", "binary_tree", p)[0] == min(2 * np.floor(np.log2(p)), p - 1)
    assert counts("bcast", "knomial", p)[0] == min(
        3 * np.ceil(np.log(p) / np.log(4) - 1e-12), p - 1
    )
    if p % 2 == 0:
        assert counts("allgather", "neighbor", p, n) == pytest.approx((p / 2, (p - 1) * n))
    assert counts("allgather", "two_proc", 2, n) == (1.0, n)


def test_message_sizes_halve_and_double():
    steps, _ = C.plan("allreduce", "rabenseifner", 8, 800.0)
    assert [float(s) for _, s in steps] == [400.0, 200.0, 100.0] * 2
    steps, _ = C.plan("allgather", "recursive_doubling", 8, 10.0)
    assert [float(s) for _, s in steps] == [10.0, 20.0, 40.0]
    with pytest.raises(ValueError):
        C.plan("bcast", "teleport", 4, 1.0)


def test_priced_uses_the_selected_algorithm():
    link = LINKS[1]
    p, n = np.array([16.0, 12.0]), np.array([5e5, 5e5])
    got = C.bcast(p, n, link, rules="mpich")
    for i, alg in enumerate(("scatter_allgather", "scatter_ring_allgather")):
        steps, nbytes = C.plan("bcast", alg, p[i], n[i])
        assert got[i] == pytest.approx(float(C.plan_seconds(steps, nbytes, link)))
    assert C.allreduce(np.array([1.0]), np.array([1e6]), link, rules="openmpi")[0] == 0.0


def test_pairwise_alltoallv_pays_its_empty_steps():
    link = LINKS[0]
    kw = {"p": 512, "idle": 500}  # Open MPI: pairwise at 256-1023 ranks
    base = C.alltoallv(11.0, 1e6, 2e6, link, "openmpi", **kw)
    assert base == pytest.approx(11 * link.alpha + 2e6 * link.beta + 500 * link.alpha)
    lin = C.alltoallv(11.0, 1e6, 2e6, link, "openmpi", p=2048, idle=500)  # basic linear
    assert lin == pytest.approx(11 * link.alpha + 2e6 * link.beta)
    nb = C.alltoallv(11.0, 1e6, 2e6, link, "openmpi", p=512, nonblocking=True, idle=500)
    assert nb == pytest.approx(lin)


# -- the profile key ----------------------------------------------------------------------
def _fugaku(extra: str) -> str:
    text = (MACHINES_DIR / "fugaku.toml").read_text(encoding="utf-8")
    return text.replace("[network.intra]", f"[network]\n{extra}\n\n[network.intra]")


def test_profile_key():
    assert parse_machine(_fugaku("")).mpi_rules == "min"
    for rules in R.RULES:
        assert parse_machine(_fugaku(f'mpi_rules = "{rules}"')).mpi_rules == rules
    with pytest.raises(InputError, match="mpi_rules must be one of"):
        parse_machine(_fugaku('mpi_rules = "intel"'))
    with pytest.raises(InputError, match="unknown key network.mpi_rule "):
        parse_machine(_fugaku('mpi_rule = "mpich"'))


def test_uniform_world_alltoall_direction_follows_the_rules():
    """A world Alltoall of large blocks on the 8x8x8 torus: Open MPI's linear algorithm at
    2048 ranks uses both directions of the cut, half the one-way time."""
    from gcntrain.comm.exchange import Groups, Uniform
    from gcntrain.simulate.timing import _uniform_bisection, placement

    step = Uniform(Groups.world(2048), 460_000)
    secs = {}
    for rules in R.RULES:
        m = parse_machine(_fugaku(f'mpi_rules = "{rules}"'))
        secs[rules] = _uniform_bisection(step, placement(m, 2048, None, 4))
    assert secs["mpich"] == secs["min"]  # pairwise above 32768 bytes per destination
    assert secs["openmpi"] == pytest.approx(secs["min"] / 2)
