"""Matrix Market (``.mtx``, ``.mtx.gz``) reader."""

from __future__ import annotations

import numpy as np
import scipy.io
import scipy.sparse as sp

from gcntrain.data.formats.common import dataset_name, graph_from_coo, require_file
from gcntrain.data.graph import Graph
from gcntrain.errors import FormatError


def load_mtx(path: str) -> Graph:
    """Read a square Matrix Market matrix as a graph (row i -> column j entries).

    Real and integer values become float32 ``data``; a ``pattern`` matrix has no data.
    Symmetric/skew/hermitian storage is expanded to both triangles (as ``scipy.io.mmread``
    does).  Duplicate coordinates are summed, the Matrix Market convention; explicitly stored
    zeros are kept as entries.

    Raises
    ------
    InputError
        Missing file; `FormatError` when the file does not parse, is complex or not square.
    """
    require_file(path)
    try:
        rows, cols, _entries, fmt, field, _symm = scipy.io.mminfo(path)
        m = scipy.io.mmread(path)
    except (ValueError, OSError, IndexError, TypeError, EOFError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FormatError(f"not a valid Matrix Market file ({msg})", path) from None
    if field == "complex":
        raise FormatError("complex matrices are not supported", path)
    if rows != cols:
        raise FormatError(f"matrix is not square ({rows} x {cols})", path)
    if fmt == "array":  # dense storage: its nonzeros are the entries
        m = sp.coo_matrix(np.asarray(m))
    m = sp.coo_matrix(m)
    data = None if field == "pattern" else m.data.astype(np.float32)
    return graph_from_coo(m.row, m.col, data, int(rows), name=dataset_name(path), duplicates="sum")
