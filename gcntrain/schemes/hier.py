"""SuperGCN hierarchical aggregation (Chen et al., SC'24 / arXiv 2024, sections 5-6, Algorithm 1).

Rows of S and H follow a vertex partition (METIS, hypergraph, a file; renumbered part by
part).  A remote entry ``M[i, j]`` of a product ``M @ X`` (M = S forward, S^T backward; i on
the receiving rank p, j on the sending rank q) is either

* *pre-aggregated*: q sums, for every destination i, ``M[i, j] X[j]`` over its own j and sends
  one partial row per destination (aggregation at the sender), or
* *post-aggregated*: q sends the raw row ``X[j]`` once and p multiplies it (aggregation at the
  receiver).

``--aggr pre`` / ``post`` use one kind for every remote entry; ``hybrid`` (the default) takes
a minimum vertex cover of every rank pair's cut entries (`partition.mvc.cover_modes`, König's
theorem): an entry is post-aggregated when its source is in the cover, else pre-aggregated
(then its destination is), so a pair moves ``|cover|`` = its maximum matching rows, at most
min(#sources, #destinations).

Setup: the receiver p computes the split of its cut entries (it holds them all) and routes
every cut entry with its mode to its source rank (one Alltoall of counts, three Alltoallv:
(i, j) pairs, values, modes).  Both ends then know, for every pair, the pre-aggregated
destinations and the post-aggregated sources in ascending id.

Each product: the sender gathers its post rows and computes its partial sums (one SpMM of a
matrix whose rows are the destinations), each part is posted as one non-blocking Alltoallv
(`Comm.ialltoallv`), the local block ``M_loc @ X`` is multiplied while they travel, then the
receiver adds ``R_post @ rows`` and scatter-adds the partial rows.

``--quant-bits 2|4|8`` quantizes the messages of training passes (`kernels.quant`):
stochastic rounding from the counter-based hash of (seed, stream, global row, global
column), values packed ``8 // bits`` per byte, a float32 zero point and scale per row or per
group of ``--quant-group`` rows (0: one pair per message); each message is ``[packed rows |
zero points | scales]`` bytes (`quantize_blocks`), so the parameters travel in the same
Alltoallv.  The stream names the epoch, layer, direction, part (pre / post) and sender, so a
run is reproducible for a seed.  Evaluation passes move unquantized rows (accuracy measures
the trained weights; their traffic is in ``eval.*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import Groups, Pairs, Uniform
from gcntrain.errors import InputError
from gcntrain.kernels.quant import BITS, block_bytes, dequantize_blocks, quantize_blocks
from gcntrain.kernels.rows import gather_rows, scatter_add_rows
from gcntrain.model.phase import Phase, phase_key
from gcntrain.partition.mvc import AGGR, PRE, cover_modes
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.base import (
    COUNT_BYTES,
    PAIR_BYTES,
    VALUE_BYTES,
    RowLayout,
    RowOps,
    RowScheme,
    as_dtype,
    csr_apply,
    row_setup,
)
from gcntrain.schemes.config import parse_choice
from gcntrain.schemes.device_rows import DeviceSums
from gcntrain.schemes.hier_device import HierDevice
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.protocol import OVERLAP_CALL, REORDER_OPTION, ConfigValue, SchemeOption

#: bytes of one entry's mode in the setup exchange (int8)
MODE_BYTES = 1


# -- who sends what (runtime: one receiver; plan: every receiver) -------------------------


def receiver_split(me: int, rows: np.ndarray, cols: np.ndarray, offsets: np.ndarray, aggr: str):
    """The cut entries of receiver `me` and their modes.

    Parameters
    ----------
    me : the receiving block (it holds rows ``offsets[me]:offsets[me+1]`` of M)
    rows, cols : global (new-numbering) row and column of every stored entry of its rows
    offsets : row blocks
    aggr : "pre", "post" or "hybrid"

    Returns
    -------
    (cut: bool mask of the entries whose column another block owns, their source blocks,
    their modes PRE / POST).
    """
    cols = np.asarray(cols, dtype=np.int64)
    own = owner_of(cols, offsets)
    cut = own != me
    src = own[cut]
    mode = cover_modes(
        np.asarray(rows, dtype=np.int64)[cut], cols[cut], src, len(offsets) - 1, aggr
    )
    return cut, src, mode


def pair_keys(peer, rows, cols, mode, n: int):
    """The rows exchanged per rank pair, as sorted keys: ``peer * n + destination row`` of
    the PRE entries (one partial sum per destination), ``peer * n + source column`` of the
    POST entries (one raw row per source); `peer` is the other rank of each entry's pair.
    Returns (PRE mask, pre keys, each PRE entry's key index, post keys, each POST entry's
    key index).  Sorted keys put the pairs in rank order and ids ascending inside a pair: the
    order both ends of a pair use for their buffers."""
    n = int(n)
    pre = mode == PRE
    kpre, ipre = unique_ints(peer[pre] * n + rows[pre], return_inverse=True)
    kpost, ipost = unique_ints(peer[~pre] * n + cols[~pre], return_inverse=True)
    return pre, kpre, ipre.reshape(-1), kpost, ipost.reshape(-1)


def key_counts(keys: np.ndarray, n: int, P: int) -> np.ndarray:
    """Rows per peer rank (P,) of `pair_keys` keys."""
    return np.bincount(keys // int(n), minlength=int(P)).astype(np.int64)


def pair_rows(src, rows, cols, mode, P: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(pre rows, post rows) per source block, int64 (P,), of one receiver's cut entries
    (`pair_keys` counted per source).  `n`: the number of nodes."""
    _, kpre, _, kpost, _ = pair_keys(src, rows, cols, mode, n)
    return key_counts(kpre, n, P), key_counts(kpost, n, P)


# -- runtime -------------------------------------------------------------------------------


class HierExchange:
    """The split of one product (M = S or S^T) on one rank.

    Receive side: the local block (`local`), the matrix applied to the received post rows
    (`recv_post`: local rows x received rows, the entries' values) and the local row each
    received partial row is added to (`pre_idx`); send side: the matrix whose rows are the
    partial sums to send (`send_pre`: destinations x local rows) and the local rows sent raw
    (`post_idx`).  Counts per rank: ``pre_send``, ``pre_recv``, ``post_send``, ``post_recv``
    (rows).  Buffers hold pairs in rank order and, inside a pair, ascending ids.
    """

    def __init__(self, comm, offsets, indptr, indices, data, aggr: str, phase: str = "setup"):
        me, P = comm.rank, comm.size
        lo, hi = int(offsets[me]), int(offsets[me + 1])
        n = int(offsets[-1])
        m = hi - lo
        cols = np.asarray(indices, dtype=np.int64)
        rloc = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
        vals = np.asarray(data, dtype=np.float64)
        cut, src, mode = receiver_split(me, rloc + lo, cols, offsets, aggr)
        loc = ~cut
        self.local = _csr(vals[loc], rloc[loc], cols[loc] - lo, (m, m))
        ci, cj, cv = rloc[cut] + lo, cols[cut], vals[cut]
        pre, kpre, _, kpost, ipost = pair_keys(src, ci, cj, mode, n)
        self.pre_idx = kpre % n - lo
        self.pre_recv = key_counts(kpre, n, P)
        self.post_recv = key_counts(kpost, n, P)
        self.recv_post = _csr(cv[~pre], ci[~pre] - lo, ipost, (m, kpost.size))
        # every cut entry, with its mode, to the rank that owns its column
        got, _, _, recv = comm.route(src, [np.stack([ci, cj], axis=1), cv, mode], phase)
        gi, gj = got[0][:, 0], got[0][:, 1]
        gdst = np.repeat(np.arange(P, dtype=np.int64), recv)
        gpre, ks, sinv, kp, _ = pair_keys(gdst, gi, gj, got[2], n)
        self.pre_ids = ks % n
        self.pre_send = key_counts(ks, n, P)
        self.send_pre = _csr(got[1][gpre], sinv, gj[gpre] - lo, (ks.size, m))
        self.post_idx = kp % n - lo
        self.post_ids = kp % n
        self.post_send = key_counts(kp, n, P)
        self._typed: dict = {}

    def typed(self, dtype):
        key = np.dtype(dtype).str
        if key not in self._typed:
            self._typed[key] = as_dtype([self.local, self.recv_post, self.send_pre], dtype)
        return self._typed[key]


def _csr(vals, rows, cols, shape) -> sp.csr_matrix:
    M = sp.csr_matrix((vals, (rows, cols)), shape=shape)
    M.sum_duplicates()
    M.sort_indices()
    return M


@dataclass(frozen=True)
class HierLayout(RowLayout):
    """A row layout plus the scheme's configuration (aggregation split, message bits)."""

    aggr: str = "hybrid"
    bits: int = 32
    group: int = 1
    seed: int = 0


def message_bytes(rows, width: int, itemsize: int, bits: int, group: int):
    """(value bytes, parameter bytes) of messages of `rows` rows (array, one per message) of
    `width` columns: `itemsize` per value unquantized; quantized, packed values plus a float32
    zero point and scale per group of `group` rows (<= 0: one pair per message)."""
    rows = np.asarray(rows, dtype=np.int64)
    if bits >= 32:
        return rows * int(width) * int(itemsize), np.zeros_like(rows)
    return block_bytes(rows, width, bits, group)


class HierOps(RowOps):
    """One rank of the hier scheme (see the module docstring)."""

    def __init__(self, world, layout: HierLayout, fwd, bwd, rows):
        super().__init__(world, world, rows, int(layout.offsets[-1]))
        self.layout = layout
        self.bits, self.group, self.seed = layout.bits, layout.group, layout.seed
        ex = HierExchange(world, layout.offsets, *fwd, layout.aggr)
        self._ex = {
            "f": ex,
            "t": ex if bwd is None else HierExchange(world, layout.offsets, *bwd, layout.aggr),
        }
        self.epoch_stats: list[dict] = []
        self._stats: dict = {}

    # -- messages ------------------------------------------------------------------------
    def _quantized(self, phase: Phase) -> bool:
        return self.bits < 32 and phase.training

    def _stream(self, phase: Phase, part: int) -> int:
        e = max(int(phase.epoch), 0)
        layer = int(phase.layer or 0)
        code = (2 if phase.direction == "bwd" else 0) + part
        return ((e * 1024 + layer) * 4 + code) * 65536 + self.rank

    def _post(self, rows, ids, send, recv, phase: Phase, part: int, key: str):
        """Post one part's rows (`send` rows per destination, `recv` per source): raw, or
        quantized into one byte stream (`quantize_blocks`)."""
        if not self._quantized(phase):
            return self.world.ialltoallv(rows, send, recv, key)
        buf, nbytes = quantize_blocks(
            rows, ids, send, self.bits, self.group, seed=self.seed, stream=self._stream(phase, part)
        )
        vb, pb = block_bytes(recv, rows.shape[1], self.bits, self.group)
        return self.world.ialltoallv(buf, nbytes, vb + pb, key)

    def _received(self, pending, recv, width: int, dtype, phase: Phase, key: str) -> np.ndarray:
        got = self.world.wait(pending, key)
        if not self._quantized(phase):
            return got
        return dequantize_blocks(got, recv, width, self.bits, self.group, dtype)

    def _note(self, phase: Phase, part: str, counts, width: int, itemsize: int, t: float):
        if not phase.training:
            return
        pfx = f"L{phase.layer}.{phase.direction or 'fwd'}"
        vb, pb = message_bytes(counts, width, itemsize, self.bits, self.group)
        s = self._stats
        s[f"{pfx}.{part}_bytes"] = s.get(f"{pfx}.{part}_bytes", 0.0) + float(vb.sum())
        s[f"{pfx}.{part}_param_bytes"] = s.get(f"{pfx}.{part}_param_bytes", 0.0) + float(pb.sum())
        s[f"{pfx}.t_{part}"] = s.get(f"{pfx}.t_{part}", 0.0) + t

    # -- the product ---------------------------------------------------------------------
    def _run(self, which: str, X: np.ndarray, phase: Phase) -> np.ndarray:
        ex: HierExchange = self._ex[which]
        key = phase_key(phase)
        local, recv_post, send_pre = ex.typed(X.dtype)
        f = X.shape[1]
        t0 = perf_counter()
        rows = gather_rows(X, ex.post_idx, np.empty((ex.post_idx.size, f), dtype=X.dtype))
        post = self._post(rows, ex.post_ids, ex.post_send, ex.post_recv, phase, 0, key)
        t_post = perf_counter() - t0
        t0 = perf_counter()
        sums = csr_apply(send_pre, X)
        pre = self._post(sums, ex.pre_ids, ex.pre_send, ex.pre_recv, phase, 1, key)
        t_pre = perf_counter() - t0
        out = csr_apply(local, X)
        t0 = perf_counter()
        got = self._received(post, ex.post_recv, f, X.dtype, phase, key)
        csr_apply(recv_post, got, out, accumulate=True)
        t_post += perf_counter() - t0
        t0 = perf_counter()
        got = self._received(pre, ex.pre_recv, f, X.dtype, phase, key)
        scatter_add_rows(got, ex.pre_idx, out)
        t_pre += perf_counter() - t0
        self._note(phase, "post", ex.post_send, f, X.itemsize, t_post)
        self._note(phase, "pre", ex.pre_send, f, X.itemsize, t_pre)
        return out

    # the operand contiguous where it lives: NumPy on the host, the device's module there
    def aggregate(self, X, *, phase):
        return self._run("f", self.compute.xp.ascontiguousarray(X), phase)

    def aggregate_t(self, X, *, phase):
        return self._run("t", self.compute.xp.ascontiguousarray(X), phase)

    def begin_epoch(self, *, phase):
        self._stats = {}

    def end_epoch(self, *, phase):
        self.epoch_stats.append(dict(self._stats))


class HierDeviceOps(HierDevice, DeviceSums, HierOps):
    """`HierOps` with every array of the loop on the device of `backend` (docs/gpu.md):
    the products, the Int2/4/8 quantization and the sums on device arrays
    (`gcntrain.schemes.hier_device`), every message through ``backend.staged(world)``."""

    def __init__(self, world, layout: HierLayout, fwd, bwd, rows, backend):
        super().__init__(backend.staged(world), layout, fwd, bwd, rows)
        self._on_device(backend)


# -- the scheme ----------------------------------------------------------------------------


def _opt_int(value, flag: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"{flag} must be an integer, got {value!r}") from None


def parse_aggr(value, size: int = 0, scheme=None) -> str:
    """``--aggr`` (None: hybrid), one of `AGGR`."""
    return parse_choice(value, "--aggr", AGGR, "hybrid")


def parse_bits(value, size: int = 0, scheme=None) -> int:
    """``--quant-bits`` (None: 32, unquantized), one of `BITS` or 32."""
    bits = _opt_int(value, "--quant-bits")
    bits = 32 if bits is None else bits
    if bits not in (*BITS, 32):
        raise InputError(f"--quant-bits must be 2, 4, 8 or 32 (off), got {bits}")
    return bits


def parse_group(value, size: int = 0, scheme=None) -> int:
    """``--quant-group`` (None: 1, per row), at least 0."""
    group = _opt_int(value, "--quant-group")
    if group is not None and group < 0:
        raise InputError(f"--quant-group must be >= 0, got {group}")
    return 1 if group is None else group


class Hier(RowScheme):
    name = "hier"
    summary = (
        "SuperGCN: pre/post aggregation split by minimum vertex cover over Alltoallv, "
        "Int2/4/8 messages"
    )
    options = (
        SchemeOption(
            "aggr",
            ("--aggr",),
            None,
            "Hier: remote entries aggregated at the sender (pre), at the receiver (post), or "
            "split by a minimum vertex cover of each rank pair (hybrid)  [default: hybrid].",
            metavar="pre|post|hybrid",
            parse=parse_aggr,
        ),
        SchemeOption(
            "quant_bits",
            ("--quant-bits",),
            None,
            "Hier: bits per value of training messages, stochastic rounding (32 = off) "
            "[default: 32].",
            metavar="2|4|8|32",
            parse=parse_bits,
        ),
        SchemeOption(
            "quant_group",
            ("--quant-group",),
            None,
            "Hier: rows sharing one quantization zero point and scale (0 = all rows of a "
            "message) [default: 1: per row].",
            metavar="N",
            parse=parse_group,
        ),
        REORDER_OPTION,
    )
    #: the stochastic rounding's seed: the run's (`check_training`)
    config_values = (ConfigValue("seed", 0),)
    #: measured: 35 ms with --aggr pre or post (the price forms the peer tables), 90 ms
    #: with hybrid (and a vertex cover per rank pair)
    plan_cost = 1.2

    def sweep_options(self, size: int) -> list[dict]:
        """SuperGCN's comparisons: the three aggregation splits unquantized, and hybrid at
        each message width."""
        return [{"aggr": a} for a in AGGR] + [
            {"aggr": "hybrid", "quant_bits": b} for b in sorted(BITS, reverse=True)
        ]

    def is_exact(self, config) -> bool:
        return config.quant_bits == 32

    def configure(self, size: int, values: dict):
        config = super().configure(size, values)
        if config.quant_group != 1 and config.quant_bits == 32:  # 1: the default
            raise InputError("--quant-group needs --quant-bits 2, 4 or 8")
        return config

    def plan_weight(self, config) -> float:
        return 3.0 if config.aggr == "hybrid" else self.plan_cost

    def check_training(self, config, train):
        """The rounding seed is the run's seed."""
        return config.replace(seed=int(train.seed))

    def layout(self, numbering, meta, size, config, model=None) -> HierLayout:
        return HierLayout(
            numbering,
            1,
            config.aggr,
            config.quant_bits,
            config.quant_group,
            config.seed,
        )

    def setup(self, world, layout: HierLayout, local, kind: str, backend=None):
        """The row setup, then `HierOps` on the host (`backend` None or the host's) or
        `HierDeviceOps` on the device of `backend` (every option value)."""
        fwd, bwd = row_setup(world, world, layout, local, kind)
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return HierOps(world, layout, fwd, bwd, local.orig_ids)
        return HierDeviceOps(world, layout, fwd, bwd, local.orig_ids, backend)

    # -- exchange description ------------------------------------------------------------
    def split(self, ctx, which: str):
        """(src, dst, pre rows, post rows, cut entries) of every rank pair of the product
        with S ("f") or S^T ("t"): `receiver_split` and `pair_rows` evaluated for every
        receiver, as each rank evaluates them on its own rows (cached)."""
        lay: HierLayout = ctx.layout

        def make():
            M = ctx.support if which == "f" else ctx.transpose()
            off = lay.offsets
            P, n = ctx.P, int(off[-1])
            rows = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
            cols = M.indices.astype(np.int64)
            out = [[], [], [], [], []]
            for p in range(P):
                a, b = int(M.indptr[off[p]]), int(M.indptr[off[p + 1]])
                cut, src, mode = receiver_split(p, rows[a:b], cols[a:b], off, lay.aggr)
                npre, npost = pair_rows(src, rows[a:b][cut], cols[a:b][cut], mode, P, n)
                ncut = np.bincount(src, minlength=P)
                q = np.flatnonzero(ncut)
                for lst, v in zip(out, (q, np.full(q.size, p), npre[q], npost[q], ncut[q])):
                    lst.append(np.asarray(v, dtype=np.int64))
            return tuple(np.concatenate(v) if v else np.zeros(0, np.int64) for v in out)

        key = "hier_f" if which == "f" or ctx.symmetric else "hier_t"
        return ctx.cached(key, make)

    def overlaps(self, ctx, call) -> str:
        """The local block is multiplied while the Ialltoallv travel."""
        return OVERLAP_CALL

    def quant_elements(self, ctx, call) -> np.ndarray:
        """Quantized training aggregations: each rank quantizes the rows it sends and
        dequantizes the rows it receives."""
        lay: HierLayout = ctx.layout
        agg = call.method in ("aggregate", "aggregate_t")
        if not agg or lay.bits >= 32 or not call.phase.training:
            return super().quant_elements(ctx, call)
        src, dst, pre, post, _ = self.split(ctx, "f" if call.method == "aggregate" else "t")
        elems = (pre + post) * call.shape(0)[1]
        out = np.bincount(src, weights=elems, minlength=ctx.P)
        out += np.bincount(dst, weights=elems, minlength=ctx.P)
        return out.astype(np.int64)

    def price_key(self, ctx, call) -> tuple:
        """Quantized messages: aggregations are priced by pass (training quantizes)."""
        if call.method in ("aggregate", "aggregate_t") and ctx.layout.bits < 32:
            return (*call.key, bool(call.phase.training))
        return call.key

    def _product_steps(self, ctx, call, which: str) -> list:
        lay: HierLayout = ctx.layout
        src, dst, pre, post, _ = self.split(ctx, which)
        bits = lay.bits if call.phase.training else 32
        f, item = call.shape(0)[1], call.itemsize(0)
        return [
            Pairs(ctx.P, src, dst, sum(message_bytes(n, f, item, bits, lay.group)))
            for n in (post, pre)
        ]

    def steps_aggregate(self, ctx, call) -> list:
        return self._product_steps(ctx, call, "f")

    def steps_aggregate_t(self, ctx, call) -> list:
        return self._product_steps(ctx, call, "t")

    def setup_steps(self, ctx) -> list:
        """Row setup, then per product (S, and S^T when it differs) the cut entries routed
        from their receivers to their sources: an Alltoall of counts and Alltoallv of the
        (i, j) pairs, the values and the modes."""
        out = super().setup_steps(ctx)
        P = ctx.P
        for which in ("f",) if ctx.symmetric else ("f", "t"):
            src, dst, _, _, cut = self.split(ctx, which)
            out.append(("setup", Uniform(Groups.world(P), COUNT_BYTES)))
            for size in (PAIR_BYTES, VALUE_BYTES, MODE_BYTES):
                out.append(("setup", Pairs(P, dst, src, cut * size)))
        return out

    def buffer_rows(self, ctx) -> np.ndarray:
        """Rows received from other ranks in one product (pre and post)."""
        out = np.zeros(ctx.P, dtype=np.int64)
        for which in ("f",) if ctx.symmetric else ("f", "t"):
            _, dst, pre, post, _ = self.split(ctx, which)
            out = np.maximum(out, np.bincount(dst, weights=pre + post, minlength=ctx.P))
        return out.astype(np.int64)
