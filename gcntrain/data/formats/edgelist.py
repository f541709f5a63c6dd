"""Text edge lists: SNAP (whitespace, ``#`` comments) and CSV (``src,dst[,weight]``)."""

from __future__ import annotations

import re

import numpy as np

from gcntrain.data.formats.common import dataset_name, graph_from_coo, read_bytes
from gcntrain.data.formats.textparse import STATUS_TEXT, parse_edges
from gcntrain.data.graph import Graph
from gcntrain.data.memory import check_fits
from gcntrain.data.preprocess import relabel_compact
from gcntrain.errors import FormatError

_NUMERIC_CSV_ROW = re.compile(rb"^\s*[+-]?\d+\s*,\s*[+-]?\d")


def _edges_to_graph(
    path: str,
    src: np.ndarray,
    dst: np.ndarray,
    weights: np.ndarray | None,
    relabel: bool,
) -> Graph:
    if src.size == 0:
        raise FormatError("no edges found (empty edge list)", path)
    original = None
    if relabel:
        src, dst, original = relabel_compact(src, dst)
        n = int(original.size)
        if n and original[-1] == n - 1:
            original = None  # ids were already 0..n-1
    else:
        n = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        # row pointers, degrees and the sort of the entries all scale with n
        check_fits(
            24.0 * n + 32.0 * src.size,
            f"--no-relabel: the largest node id {n - 1} makes a graph of {n} nodes, which",
            hint="drop --no-relabel to number the nodes 0..n-1",
        )
    g = graph_from_coo(src, dst, weights, n, name=dataset_name(path), duplicates="max")
    if original is not None:
        g.extra["original_ids"] = original
    return g


def _check(path: str, status: int, line: int) -> None:
    if status:
        raise FormatError(f"{STATUS_TEXT[status]} at line {line}", path)


def load_snap(path: str, *, relabel: bool = True) -> Graph:
    """Read a SNAP-style edge list (plain or gzip): ``u v`` per line, ``#`` comments.

    Each line gives the directed entry (row u, column v); an optional third column is kept as
    the edge value.  Duplicate lines are merged (maximum value).  With `relabel`, sparse ids
    are mapped to ``0..n-1`` in increasing order (original ids in ``extra["original_ids"]``);
    otherwise ``n = max id + 1``.

    Raises
    ------
    InputError
        Missing file; `FormatError` for a bad line (with its line number) or negative id.
    """
    raw = read_bytes(path)
    src, dst, w, status, line = parse_edges(raw)
    _check(path, status, line)
    return _edges_to_graph(path, src, dst, w, relabel)


def load_csv(path: str, *, relabel: bool = True) -> Graph:
    """Read a CSV edge list ``src,dst[,weight]`` with an optional header line.

    The first non-comment line is a header when it does not start with two integers.
    Otherwise as `load_snap`.
    """
    raw = read_bytes(path)
    start, line_no = 0, 1
    # find the first line with content
    while start < len(raw):
        nl = raw.find(b"\n", start)
        stop = len(raw) if nl < 0 else nl
        text = raw[start:stop].strip()
        if text and not text.startswith((b"#", b"%")):
            if not _NUMERIC_CSV_ROW.match(text):  # header line
                start, line_no = stop + 1, line_no + 1
            break
        start, line_no = stop + 1, line_no + 1
    src, dst, w, status, line = parse_edges(
        raw, sep=",", start=min(start, len(raw)), first_line=line_no
    )
    _check(path, status, line)
    return _edges_to_graph(path, src, dst, w, relabel)
