"""Convert external graph files (Planetoid, SNAP, Matrix Market, npz, CSV) to a `Graph`.

`convert_source` picks the reader (given or inferred from the file name), then applies the
structural options (symmetrize, self-loops) from `gcntrain.data.preprocess`; the edge-list
formats (snap, csv, mtx) are parsed block by block and apply them while the CSR is built
(`convert_edges`, which also returns the structure's counts).
"""

from __future__ import annotations

import os

from gcntrain.data import preprocess
from gcntrain.data.formats.common import dataset_name
from gcntrain.data.formats.edgelist import load_csv, load_snap, read_edge_text
from gcntrain.data.formats.edgestream import assemble_edges
from gcntrain.data.formats.mtx import load_mtx, read_mtx
from gcntrain.data.formats.npz import load_npz
from gcntrain.data.formats.planetoid import load_planetoid, resolve_prefix
from gcntrain.data.graph import Graph
from gcntrain.errors import InputError

__all__ = [
    "EDGE_FORMATS",
    "FORMATS",
    "convert_edges",
    "convert_source",
    "infer_format",
    "load_csv",
    "load_mtx",
    "load_npz",
    "load_planetoid",
    "load_snap",
]

#: known converter formats, in the order listed in messages
FORMATS = ("planetoid", "snap", "mtx", "npz", "csv")
#: the formats `convert_edges` reads (edge lists: parsed block by block)
EDGE_FORMATS = ("snap", "mtx", "csv")

_SUFFIXES = (
    (".mtx", "mtx"),
    (".mtx.gz", "mtx"),
    (".npz", "npz"),
    (".csv", "csv"),
    (".csv.gz", "csv"),
    (".txt", "snap"),
    (".txt.gz", "snap"),
    (".edges", "snap"),
    (".edges.gz", "snap"),
    (".el", "snap"),
    (".gz", "snap"),
)


def _known() -> str:
    return ", ".join(FORMATS)


def infer_format(source: str) -> str:
    """The converter format for `source`, from Planetoid files beside it or its suffix.

    Raises
    ------
    InputError
        No format matches (or `source` does not exist and is not a Planetoid prefix).
    """
    if resolve_prefix(source) is not None:
        return "planetoid"
    lower = source.lower()
    for suffix, fmt in sorted(_SUFFIXES, key=lambda s: -len(s[0])):
        if lower.endswith(suffix):
            return fmt
    if not os.path.exists(source):
        raise InputError("no such file", source)
    ext = os.path.splitext(source)[1].lstrip(".") or os.path.basename(source)
    raise InputError(
        f"unknown converter format '{ext}' (known: {_known()}); give one with --format", source
    )


def convert_source(
    source: str,
    fmt: str | None = None,
    *,
    symmetrize: bool = False,
    self_loops: str = "keep",
    relabel: bool = True,
    split: int = 0,
) -> Graph:
    """Read `source` and return it as a CSR `Graph`.

    Parameters
    ----------
    source : file path, or a Planetoid prefix such as ``data/ind.cora``
    fmt : one of `FORMATS`; inferred from `source` when None
    symmetrize : replace A by the pattern of A + A^T (values: the larger of the two)
    self_loops : "keep", "add" (every node gets one) or "drop"
    relabel : map sparse edge-list ids to 0..n-1 (snap and csv only)
    split : which split to use from 2-D npz mask arrays

    Returns
    -------
    Graph
        Sorted, duplicate-free CSR; ``directed`` is False exactly when the result is
        symmetric; ``extra`` records ``source`` and ``format``.

    Raises
    ------
    InputError
        Unknown format, missing file, bad option; `FormatError` for malformed content.
    """
    fmt = _check_options(source, fmt, self_loops, split)
    if fmt in EDGE_FORMATS:
        return convert_edges(
            source, fmt, symmetrize=symmetrize, self_loops=self_loops, relabel=relabel
        )[0]
    if fmt == "planetoid":
        g = load_planetoid(source)
    else:
        g = load_npz(source, split=split)
    return apply_options(
        g, symmetrize=symmetrize, self_loops=self_loops, extra={"source": source, "format": fmt}
    )


def _check_options(source: str, fmt: str | None, self_loops: str, split: int = 0) -> str:
    """The format (inferred when None), after checking it and the options."""
    if fmt is None:
        fmt = infer_format(source)
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise InputError(f"unknown converter format '{fmt}' (known: {_known()})")
    if self_loops not in preprocess.SELF_LOOP_MODES:
        raise InputError(
            f"unknown self-loop mode '{self_loops}' "
            f"(known: {', '.join(preprocess.SELF_LOOP_MODES)})"
        )
    if split < 0:
        raise InputError(f"split must be >= 0, got {split}")
    return fmt


def convert_edges(
    source: str,
    fmt: str | None = None,
    *,
    symmetrize: bool = False,
    self_loops: str = "keep",
    relabel: bool = True,
) -> tuple[Graph, dict]:
    """Read an edge-list file (snap, csv or mtx) block by block; `convert_source`'s graph.

    Memory is the parsed edges (int32 ids while they fit, float32 values) plus the stored
    entries and one block of text (`gcntrain.data.formats.chunks.CHUNK_BYTES`), with edge
    values or without (`gcntrain.data.formats.weighted`).

    Returns
    -------
    graph : Graph
        As `convert_source` returns it.
    counts : dict
        ``self_loops`` and ``undirected_edges`` of the graph (`Graph.self_loop_count`,
        `Graph.num_undirected_edges`), counted during the build.
    """
    fmt = _check_options(source, fmt, self_loops)
    if fmt not in EDGE_FORMATS:
        raise InputError(f"'{fmt}' is not an edge-list format ({', '.join(EDGE_FORMATS)})")
    options = {"symmetrize": symmetrize, "self_loops": self_loops}
    if fmt == "mtx":
        g, counts = read_mtx(source, **options)
    else:
        chunks = read_edge_text(source, "," if fmt == "csv" else None)
        g, counts = assemble_edges(source, chunks, relabel=relabel, **options)
        g.name = dataset_name(source)
    extra = {"source": source, "format": fmt}
    if counts is None:  # a dense Matrix Market file, read whole
        g = apply_options(g, **options, extra=extra)
        return g, {"self_loops": g.self_loop_count(), "undirected_edges": g.num_undirected_edges()}
    g.extra.update(extra)
    g.extra["symmetrized"] = bool(symmetrize)
    g.extra["self_loops"] = self_loops
    return g, counts


def apply_options(
    g: Graph, *, symmetrize: bool = False, self_loops: str = "keep", extra: dict | None = None
) -> Graph:
    """Apply the structural conversion options to `g` in place and return it."""
    indptr, indices, data = g.indptr, g.indices, g.data
    if symmetrize:
        indptr, indices, data = preprocess.symmetrize(indptr, indices, data)
    indptr, indices, data = preprocess.set_self_loops(indptr, indices, data, self_loops)
    g.indptr, g.indices, g.data = indptr, indices, data
    # symmetrize (and adding/dropping diagonal entries after it) gives a symmetric matrix
    g.directed = not (symmetrize or preprocess.is_symmetric(indptr, indices, data))
    if extra:
        g.extra.update(extra)
    g.extra["symmetrized"] = bool(symmetrize)
    g.extra["self_loops"] = self_loops
    return g
