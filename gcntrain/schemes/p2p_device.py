"""One rank of the point-to-point scheme on a device (issue 37, docs/gpu.md):
`P2pDeviceOps`.

Every product is the CPU path's one-node form (`gcntrain.schemes.p2p.P2POps._one_pass`) on
device arrays: the same Isend/Irecv pairs (`Pairs.run_p2p`) through the backend's staged
communicator (``backend.staged``: pinned host buffers around the counted one, so the
counters see a host run's messages and measured bytes equal the plan), every message
received into its slice of one kept device operand after a device copy of the local rows,
then one device SpMM over the operand with a matrix made resident once per dtype.  No node
windows on the device: on one node the messages a window stands for are sent (the same
counted bytes and messages, `Pairs.count_shared`).

``S @ X`` (and ``S^T @ X`` on a symmetric S) multiplies `_Exchange.combined`: the local
rows of S over [local rows; each source's rows in source order], the matrix whose sums the
CPU path's window, one-pass and per-source products all give.  The backward product of a
non-symmetric S (`_Backward`: per pair of ranks the fetch or the reverse exchange) is one
product too (`backward_matrix`): after the local rows of S^T's local block, each received
message in pair order is either a block of S^T's rows (fetch) or a block of partial sums
added through a unit entry in the row it belongs to (reverse), so every output row is
summed in the order `P2POps._backward` adds its terms (``1 * x`` is ``x``): bit for bit on
the emulation, whose SpMM is the host kernel.  On a GPU cuSPARSE sums a row in its own
order, so the products equal the CPU run's to rounding only.  The reverse exchange's
partial sums are a device SpMM at the sender; the rows a rank packs for others are
gathered on the device by index arrays copied there once.

The backend is duck-typed: this module imports no device code.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.model.compute import compute_for
from gcntrain.schemes.base import RowLayout, RowOps, as_dtype
from gcntrain.schemes.device_rows import DeviceSums


def received(pairs, me: int) -> np.ndarray:
    """The pairs that bring rank `me` a message, in pair order (as `Pairs.run_p2p`
    consumes them)."""
    live = (pairs.src != pairs.dst) & (pairs.nbytes > 0)
    return np.flatnonzero(live & (pairs.dst == me))


def backward_matrix(bw, me: int, m: int) -> tuple[sp.csr_matrix, dict]:
    """The backward product of a non-symmetric S on rank `me` (`m` local rows) as one
    matrix over [the local rows of G; every received message in pair order].

    Parameters
    ----------
    bw : the rank's `gcntrain.schemes.p2p._Backward`.
    me : the rank.
    m : its rows.

    Returns
    -------
    (M, slots)
        M (float64 CSR, m rows, sorted indices): the fetch exchange's local block, then per
        received pair k either the rows of S^T in the sender's columns (fetch) or, for a
        message of partial sums (reverse), a unit entry at (the row it is added to, its
        position); slots: pair k -> (first, end) rows of its message in the operand.
    """
    pairs, rev = bw.pairs, bw.reverse
    blocks = [bw.fetch.local]
    slots = {}
    start = m
    for k in received(pairs, me):
        p, n = int(pairs.src[k]), int(pairs.nbytes[k])
        if rev[k]:
            rows = np.asarray(bw.forward.send[p], dtype=np.int64)
            B = sp.csr_matrix((np.ones(n), (rows, np.arange(n))), shape=(m, n))
        else:
            B = bw.fetch.remote[p]
        if B.shape[1] != n:
            raise ValueError(f"rank {me}: {B.shape[1]} columns for {n} rows from rank {p}")
        blocks.append(B)
        slots[int(k)] = (start, start + n)
        start += n
    M = sp.hstack(blocks, format="csr")
    M.sort_indices()
    return M, slots


class _Product:
    """One product's exchange on the device: its pairs, where each received message lands
    in the operand, its matrix per dtype (host, made resident by the Ops) and how a rank
    fills the message of pair k (``send(k, X)``)."""

    def __init__(self, name: str, pairs, slots: dict, matrix, send):
        self.name = name
        self.pairs = pairs
        self.slots = slots
        self.matrix = matrix
        self.send = send


class P2pDeviceOps(DeviceSums, RowOps):
    """The point-to-point scheme's Ops on the device of `backend` (module docstring).

    Parameters
    ----------
    world : Comm (the counted communicator; staged here).
    layout : RowLayout (one rank per part).
    exchange : the rank's forward `gcntrain.schemes.p2p._Exchange`.
    backward : its `gcntrain.schemes.p2p._Backward`, or None when S is symmetric.
    rows : original ids of the local rows.
    backend : the run's device backend.
    """

    def __init__(self, world, layout: RowLayout, exchange, backward, rows, backend):
        comm = backend.staged(world)
        super().__init__(comm, comm, rows, int(layout.offsets[-1]))
        self.compute = compute_for(backend)
        self.backend = backend
        self.layout = layout
        me = comm.rank
        ex = exchange
        send_f = self._indices(ex.send)
        fwd = _Product(
            "f",
            ex.pairs,
            ex.operand_rows,
            ex.combined,
            lambda k, X: self.compute.gather_rows(X, send_f[int(ex.pairs.dst[k])]),
        )
        self._products = {"f": fwd, "t": fwd}
        if backward is not None:
            self._products["t"] = self._backward_product(backward, me, layout.sizes[me])
        self._resident: dict = {}
        self._operands: dict = {}

    def _indices(self, send: dict) -> dict:
        """The send lists (rank -> local row ids) copied to the device once."""
        to = self.backend.to_device
        return {int(q): to(np.ascontiguousarray(ids, dtype=np.int64)) for q, ids in send.items()}

    def _backward_product(self, bw, me: int, m: int) -> _Product:
        """The backward product of a non-symmetric S (`backward_matrix`): a fetch message
        gathers rows of G, a reverse one is this rank's partial sums for its destination
        (``S_q^T``-block times G, a device SpMM)."""
        M, slots = backward_matrix(bw, me, int(m))
        typed: dict = {}

        def matrix(dtype):
            key = np.dtype(dtype).str
            if key not in typed:
                typed[key] = as_dtype([M], dtype)[0]
            return typed[key]

        pairs, rev = bw.pairs, bw.reverse
        fetch = self._indices(bw.fetch.send)

        def send(k: int, G):
            q = int(pairs.dst[k])
            if rev[k]:
                partial = bw.typed_partial(G.dtype)[q]
                return self.backend.spmm(self._matrix(("partial", q), partial), G)
            return self.compute.gather_rows(G, fetch[q])

        return _Product("t", pairs, slots, matrix, send)

    def _matrix(self, key, M):
        """The host CSR `M` resident on the device under (`key`, its dtype), made once."""
        full = (key, M.dtype.str)
        if full not in self._resident:
            self._resident[full] = self.backend.csr(M.indptr, M.indices, M.data, M.shape)
        return self._resident[full]

    def _product(self, which: str, X, phase: str):
        """Local rows of ``S @ X`` ("f") or ``S^T @ X`` ("t"): the pairs' messages into one
        kept device operand beside the local rows, then one device SpMM (module
        docstring)."""
        prod = self._products[which]
        M = self._matrix(prod.name, prod.matrix(X.dtype))
        m, f = X.shape
        key = (prod.name, int(f), X.dtype.str)
        operand = self._operands.get(key)
        if operand is None:
            operand = self._operands[key] = self.backend.empty((M.shape[1], f), X.dtype)

        def recv_buf(k: int):
            lo, hi = prod.slots[k]
            return operand[lo:hi]

        def local_work() -> None:
            operand[:m] = X

        result: list = []
        prod.pairs.run_p2p(
            self.world,
            self.world.rank,
            send_buf=lambda k: prod.send(k, X),
            recv_buf=recv_buf,
            local_work=local_work,
            consume=lambda k, buf: None,
            phase=phase,
            finish=lambda: result.append(self.backend.spmm(M, operand)),
        )
        return result[0]
