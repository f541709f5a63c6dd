"""Scheme names -> modules, and the pure global layout/plan used by tests and the simulator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.errors import InputError
from gcntrain.schemes import one_d, one_five_d, p2p
from gcntrain.schemes.layout import owner_of, renumber

SCHEMES = ("1d", "1.5d", "p2p")


def num_blocks(scheme: str, size: int, replication: int = 1) -> int:
    """Number of row blocks (= parts of the partition) a scheme uses on `size` ranks."""
    if scheme not in SCHEMES:
        raise InputError(f"unknown scheme {scheme!r} (known: {', '.join(SCHEMES)})")
    if scheme == "1.5d":
        return one_five_d.check_replication(size, replication)
    if replication != 1:
        raise InputError(
            f"--replication applies to the 1.5d scheme only (got {replication} with {scheme})"
        )
    return size


def block_of(scheme: str, rank: int, replication: int = 1) -> int:
    """Row block held by `rank`."""
    return rank // replication if scheme == "1.5d" else rank


@dataclass
class GlobalLayout:
    """Everything a plan needs, computed from the whole graph without MPI."""

    scheme: str
    size: int
    replication: int
    offsets: np.ndarray
    support: sp.csr_matrix  # S in the new numbering
    symmetric: bool

    def scheme_layout(self):
        if self.scheme == "1d":
            return one_d.Layout1D(self.offsets, self.symmetric)
        if self.scheme == "1.5d":
            return one_five_d.Layout15D(self.offsets, self.replication, self.symmetric)
        S = self.support
        halo_f = p2p.halo_matrix(S.indptr, S.indices, self.offsets)
        halo_b = None
        if not self.symmetric:
            T = S.T.tocsr()
            halo_b = p2p.halo_matrix(T.indptr, T.indices, self.offsets)
        return p2p.LayoutP2P(self.offsets, halo_f, halo_b)


def global_layout(
    scheme: str, support_orig: sp.csr_matrix, part: np.ndarray, size: int, replication: int = 1
) -> GlobalLayout:
    """Layout of `scheme` for the support matrix (original numbering) and partition vector."""
    B = num_blocks(scheme, size, replication)
    perm, _, offsets = renumber(part, B)
    S = sp.csr_matrix(support_orig)[perm][:, perm].tocsr()
    S.sort_indices()
    diff = abs(S - S.T)
    symmetric = bool(diff.nnz == 0 or diff.max() <= 1e-12 * max(abs(S).max(), 1.0))
    return GlobalLayout(scheme, size, replication, offsets, S, symmetric)


def _block_pair_nnz(S: sp.csr_matrix, offsets: np.ndarray) -> np.ndarray:
    B = offsets.shape[0] - 1
    rows = np.repeat(np.arange(S.shape[0], dtype=np.int64), np.diff(S.indptr))
    p = owner_of(rows, offsets)
    q = owner_of(S.indices.astype(np.int64), offsets)
    out = np.zeros((B, B), dtype=np.int64)
    np.add.at(out, (p, q), 1)
    return out


def setup_plan(gl: GlobalLayout, rank: int) -> Tally:
    """Setup and load-agreement traffic of `rank` (phases "setup" and "control").

    Mirrors `gcntrain.schemes.driver.setup_ops`: one load agreement on the world; on the
    block communicator (one rank per block): degree Allgatherv, transposition Alltoall(v)s,
    symmetry check Allreduce; for p2p the request exchanges.
    """
    t = Tally()
    P = gl.size
    t.add("control", V.allreduce(2, 8, rank, P))
    b = block_of(gl.scheme, rank, gl.replication)
    B = gl.offsets.shape[0] - 1
    sizes = np.diff(gl.offsets)
    t.add("setup", V.allgatherv(sizes * 8, b))
    nnz = _block_pair_nnz(gl.support, gl.offsets)
    ones = np.full(B, 8, dtype=np.int64)
    t.add("setup", V.alltoallv(ones, ones, b))
    t.add("setup", V.alltoallv(nnz[b, :] * 16, nnz[:, b] * 16, b))
    t.add("setup", V.alltoallv(nnz[b, :] * 8, nnz[:, b] * 8, b))
    t.add("setup", V.allreduce(1, 8, rank, P))
    if gl.scheme == "p2p":
        lay = gl.scheme_layout()
        halos = [lay.halo_fwd] + ([] if lay.halo_bwd is None else [lay.halo_bwd])
        for H in halos:
            Hd = H.toarray()
            t.add("setup", V.alltoallv(ones, ones, b))
            # requests travel from the needing block p to the owner q: p sends Hd[q, p] ids
            t.add("setup", V.alltoallv(Hd[:, b] * 8, Hd[b, :] * 8, b))
    return t


def training_plan(gl: GlobalLayout, rank: int, calls) -> Tally:
    mod = {"1d": one_d, "1.5d": one_five_d, "p2p": p2p}[gl.scheme]
    return mod.plan(gl.scheme_layout(), rank, calls)
