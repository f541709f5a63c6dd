"""Text edge lists: SNAP (whitespace, ``#`` comments) and CSV (``src,dst[,weight]``),
parsed block by block (`gcntrain.data.formats.chunks`) into compact edge blocks."""

from __future__ import annotations

import re

from gcntrain.data.formats.chunks import line_blocks
from gcntrain.data.formats.common import dataset_name
from gcntrain.data.formats.edgestream import EdgeChunks, assemble_edges
from gcntrain.data.formats.textparse import STATUS_TEXT, EdgeBlockParser
from gcntrain.data.graph import Graph
from gcntrain.errors import FormatError

_NUMERIC_CSV_ROW = re.compile(rb"^\s*[+-]?\d+\s*,\s*[+-]?\d")


def check_status(path: str, status: int, line: int) -> None:
    """Raise the `FormatError` of a parser status (naming the file and the line)."""
    if status:
        raise FormatError(f"{STATUS_TEXT[status]} at line {line}", path)


def _header_end(block: bytes) -> tuple[int, int, bool]:
    """Where a CSV file's data begin within its first block(s): (byte offset, lines
    passed, found), skipping comment and blank lines and one header line (the first content
    line when it does not start with two integers)."""
    start, lines = 0, 0
    while start < len(block):
        nl = block.find(b"\n", start)
        stop = len(block) if nl < 0 else nl
        text = block[start:stop].strip()
        if text and not text.startswith((b"#", b"%")):
            if not _NUMERIC_CSV_ROW.match(text):  # header line
                return stop + 1, lines + 1, True
            return start, lines, True
        start, lines = stop + 1, lines + 1
    return len(block), lines, False


def read_edge_text(path: str, sep: str | None = None) -> EdgeChunks:
    """Parse a SNAP (`sep` None) or CSV (`sep` ",") edge list block by block.

    Raises
    ------
    InputError
        Missing file; `FormatError` for a bad line (with its number) or corrupt gzip data.
    """
    parser = EdgeBlockParser(sep)
    chunks = EdgeChunks()
    header = sep is not None  # CSV: look for the header line first
    for block, line in line_blocks(path):
        start = 0
        if header:
            start, skipped, header_found = _header_end(block)
            header = not header_found
            line += skipped
        src, dst, w, status, bad = parser.parse(block, line, start)
        check_status(path, status, bad)
        chunks.add(src, dst, w)
    return chunks


def _load(path: str, sep: str | None, relabel: bool) -> Graph:
    g, _ = assemble_edges(path, read_edge_text(path, sep), relabel=relabel)
    g.name, g.directed = dataset_name(path), True
    return g


def load_snap(path: str, *, relabel: bool = True) -> Graph:
    """Read a SNAP-style edge list (plain or gzip): ``u v`` per line, ``#`` comments.

    Each line gives the directed entry (row u, column v); an optional third column is kept as
    the edge value.  Duplicate lines are merged (maximum value).  With `relabel`, sparse ids
    are mapped to ``0..n-1`` in increasing order (original ids in ``extra["original_ids"]``);
    otherwise ``n = max id + 1``.  (``directed`` is True: `convert_source` decides it.)

    Raises
    ------
    InputError
        Missing file; `FormatError` for a bad line (with its line number) or negative id.
    """
    return _load(path, None, relabel)


def load_csv(path: str, *, relabel: bool = True) -> Graph:
    """Read a CSV edge list ``src,dst[,weight]`` with an optional header line.

    The first non-comment line is a header when it does not start with two integers.
    Otherwise as `load_snap`.
    """
    return _load(path, ",", relabel)
