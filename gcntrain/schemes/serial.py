"""The serial scheme: one process, the whole graph, `SerialOps`, no MPI (the reference)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.communicator import SelfComm
from gcntrain.data import setup_phases
from gcntrain.errors import InputError
from gcntrain.model.normalize import degrees, support_rows
from gcntrain.model.ops import SerialOps
from gcntrain.schemes.base import RowLayout, RowScheme
from gcntrain.schemes.protocol import LoadRequest


@dataclass(frozen=True)
class SerialLayout(RowLayout):
    """One block holding the whole graph, read whole (content hash checked)."""

    def request(self, rank: int) -> LoadRequest:
        return LoadRequest((0, int(self.numbering.offsets[-1])), whole=True)


def support_of(local, kind: str) -> sp.csr_matrix:
    """The whole support matrix of a whole-graph `LocalGraph` (its numbering), its values
    in the training dtype (``local.values_dtype``: float64 values rounded once)."""
    ids = local.new_ids
    deg = degrees(local.indptr, local.indices, local.data, kind, rows=ids)
    # int32 column ids where they fit: the dtype scipy would copy them to
    small = local.n < 2**31 - 1 and local.indices.shape[0] + local.n < 2**31 - 1
    ip, ix, dv = support_rows(
        local.indptr,
        local.indices,
        local.data,
        ids,
        deg,
        kind,
        index_dtype=np.int32 if small else np.int64,
        value_dtype=np.dtype(local.values_dtype),
    )
    if small:
        ip = ip.astype(np.int32)
    return sp.csr_matrix((dv, ix, ip), shape=(local.n, local.n))


class Serial(RowScheme):
    name = "serial"
    summary = "one process, no communication: the reference every scheme must equal"
    uses_mpi = False
    #: one process: its products move nothing either
    silent = RowScheme.silent | {"aggregate", "aggregate_t"}

    def configure(self, size: int, values: dict):
        if size > 1:
            raise InputError(
                f"--scheme serial under {size} ranks would train the whole graph on every "
                "rank; choose a distributed scheme"
            )
        return super().configure(size, values)

    def row_parts(self, size: int, config) -> int:
        return 1

    def test_configurations(self, size: int) -> list[tuple[dict, str | None]]:
        return [({}, None)] if size == 1 else []

    def world(self, comm=None):
        return comm if comm is not None and comm.size == 1 else SelfComm()

    def layout(self, numbering, meta, size, config, model=None) -> SerialLayout:
        return SerialLayout(numbering)

    def setup(self, world, layout, local, kind: str, backend=None) -> SerialOps:
        """The Ops over the whole support; `backend` (None: the host) is the run's device
        backend (`gcntrain.device.backend`), chosen once: on a device, S is made resident
        there and the training loop computes there (`gcntrain.model.compute`)."""
        with setup_phases.phase("normalise"):
            S = support_of(local, kind)
        with setup_phases.phase("transpose"):
            ops = SerialOps(S, backend)  # S^T by one counting-sort pass, in S's dtype
        ops.rows = np.asarray(local.orig_ids, dtype=np.int64)
        return ops

    def setup_steps(self, ctx) -> list:
        return []

    def buffer_rows(self, ctx) -> np.ndarray:
        return np.zeros(1, dtype=np.int64)
