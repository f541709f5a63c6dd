"""Matrix Market (``.mtx``, ``.mtx.gz``) reader: coordinate files parsed block by block with
the edge-list parser, array (dense) files through ``scipy.io.mmread``."""

from __future__ import annotations

import numpy as np

from gcntrain.data.formats.chunks import line_blocks
from gcntrain.data.formats.common import dataset_name, graph_from_coo, require_file
from gcntrain.data.formats.edgestream import EdgeChunks, assemble_edges
from gcntrain.data.formats.textparse import STATUS_TEXT, EdgeBlockParser
from gcntrain.data.graph import Graph
from gcntrain.errors import FormatError

_FIELDS = ("real", "double", "integer", "pattern", "complex")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


def _invalid(path: str, why: str) -> FormatError:
    return FormatError(f"not a valid Matrix Market file ({why})", path)


class _Header:
    """The banner and size line, read from the first lines of the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.banner: list[str] | None = None
        self.size: list[int] | None = None

    def feed(self, block: bytes, line: int) -> tuple[int, int]:
        """Consume header lines of `block`; returns (byte offset, line number) where the
        entries begin (the end of the block while the size line is still to come)."""
        start = 0
        while self.size is None and start < len(block):
            nl = block.find(b"\n", start)
            stop = len(block) if nl < 0 else nl
            text = block[start:stop].decode("latin1").strip()
            if self.banner is None:
                words = text.lower().split()
                if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
                    raise _invalid(self.path, "no %%MatrixMarket matrix banner on line 1")
                if words[2] not in ("coordinate", "array") or words[3] not in _FIELDS:
                    raise _invalid(self.path, f"unknown format '{words[2]} {words[3]}'")
                if words[4] not in _SYMMETRIES:
                    raise _invalid(self.path, f"unknown symmetry '{words[4]}'")
                self.banner = words
            elif text and not text.startswith("%"):
                try:
                    self.size = [int(t) for t in text.split()]
                except ValueError:
                    raise _invalid(self.path, f"bad size line {line}") from None
                if len(self.size) != (3 if self.banner[2] == "coordinate" else 2):
                    raise _invalid(self.path, f"bad size line {line}")
            start, line = stop + 1, line + 1
        return min(start, len(block)), line


def load_mtx(path: str) -> Graph:
    """Read a square Matrix Market matrix as a graph (row i -> column j entries).

    Real and integer values become float32 ``data``; a ``pattern`` matrix has no data.
    Symmetric/skew storage is expanded to both triangles (as ``scipy.io.mmread`` does).
    Duplicate coordinates are summed, the Matrix Market convention; explicitly stored
    zeros are kept as entries.  (``directed`` is True: `convert_source` decides it.)

    Raises
    ------
    InputError
        Missing file; `FormatError` when the file does not parse, is complex or not square.
    """
    g, _ = read_mtx(path)
    g.directed = True
    return g


def read_mtx(
    path: str, *, symmetrize: bool = False, self_loops: str = "keep"
) -> tuple[Graph, dict | None]:
    """`load_mtx` with the conversion options applied while the graph is built.

    Returns
    -------
    graph : Graph (``directed`` False exactly when the result is symmetric)
    counts : ``self_loops`` and ``undirected_edges``, or None for an array (dense) file
    """
    require_file(path)
    head = _Header(path)
    parser = EdgeBlockParser()
    chunks = EdgeChunks()
    blocks = line_blocks(path)
    n = entries = 0
    for block, line in blocks:
        start = 0
        if head.size is None:
            start, line = head.feed(block, line)
            if head.size is None:
                continue
            _fmt, field, symmetry = head.banner[2:]
            if field == "complex" or symmetry == "hermitian":
                raise FormatError("complex matrices are not supported", path)
            rows, cols = head.size[:2]
            if rows != cols:
                raise FormatError(f"matrix is not square ({rows} x {cols})", path)
            if head.banner[2] == "array":
                blocks.close()
                return _load_array(path), None
            n, entries = rows, head.size[2]
            mirror = symmetry != "general"
            chunks.negate_mirror = symmetry == "skew-symmetric"
            want = 2 if field == "pattern" else 3
        src, dst, w, status, bad = parser.parse(block, line, start)
        if status:
            raise _invalid(path, f"{STATUS_TEXT[status]} at line {bad}")
        if parser.ncols and parser.ncols != want:
            raise _invalid(path, f"entries of {parser.ncols} columns in a {field} file")
        if src.size and (min(src.min(), dst.min()) < 1 or max(src.max(), dst.max()) > n):
            raise _invalid(path, f"an entry's index lies outside 1..{n}")
        src -= 1
        dst -= 1
        chunks.add(src, dst, w, mirror)
    if head.size is None:
        raise _invalid(path, "no size line")
    if chunks.count != entries:
        raise _invalid(path, f"{chunks.count} entries where the size line says {entries}")
    g, counts = assemble_edges(
        path, chunks, n=n, duplicates="sum", symmetrize=symmetrize, self_loops=self_loops
    )
    g.name = dataset_name(path)
    return g, counts


def _load_array(path: str) -> Graph:
    """A dense (array) Matrix Market file: its nonzeros are the entries."""
    import scipy.io
    import scipy.sparse as sp

    try:
        _rows, _cols, _entries, _fmt, field, _symm = scipy.io.mminfo(path)
        m = scipy.io.mmread(path)
    except (ValueError, OSError, IndexError, TypeError, EOFError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _invalid(path, msg) from None
    m = sp.coo_matrix(np.asarray(m))
    data = None if field == "pattern" else m.data.astype(np.float32)
    return graph_from_coo(m.row, m.col, data, m.shape[0], name=dataset_name(path), duplicates="sum")
