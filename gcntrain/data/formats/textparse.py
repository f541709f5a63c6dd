"""Edge-list text parsing, whole or block by block (the kernel: `gcntrain.kernels.textparse`).

`parse_edges` parses a whole text; `EdgeBlockParser` parses the blocks of whole lines that
`gcntrain.data.formats.chunks.line_blocks` yields, with a buffer reused from block to block,
checking that every block has the columns of the first.
"""

from __future__ import annotations

import numpy as np

from gcntrain.kernels.textparse import (
    BAD_COLUMNS,
    BAD_SYNTAX,
    ID_TOO_LARGE,
    NEGATIVE_ID,
    OK,
    STATUS_TEXT,
    parse_edges_bytes,
)

__all__ = [
    "BAD_COLUMNS",
    "BAD_SYNTAX",
    "ID_TOO_LARGE",
    "NEGATIVE_ID",
    "OK",
    "STATUS_TEXT",
    "EdgeBlockParser",
    "parse_edges",
    "parse_edges_bytes",
]

_LF = 10


def parse_edges(
    raw: bytes, sep: str | None = None, start: int = 0, first_line: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, int]:
    """Parse edge-list bytes; return (src, dst, weights or None, status, error line).

    Parameters
    ----------
    raw : the file contents (already decompressed)
    sep : None for whitespace, "," for CSV
    start, first_line : where to begin (byte offset) and that line's number
    """
    buf = np.frombuffer(raw, dtype=np.uint8)
    cap = int(np.count_nonzero(buf[start:] == _LF)) + 1
    src = np.empty(cap, dtype=np.int64)
    dst = np.empty(cap, dtype=np.int64)
    wgt = np.empty(cap, dtype=np.float64)
    code = 0 if sep is None else ord(sep)
    count, ncols, status, line = parse_edges_bytes(buf, start, first_line, code, 0, src, dst, wgt)
    weights = wgt[:count].astype(np.float32) if ncols == 3 else None
    return src[:count].copy(), dst[:count].copy(), weights, int(status), int(line)


class EdgeBlockParser:
    """Parses blocks of whole lines into reused buffers.

    Parameters
    ----------
    sep : None for whitespace, "," for CSV

    Attributes
    ----------
    ncols : 2 or 3 once a data line was read (0 before)
    """

    def __init__(self, sep: str | None = None) -> None:
        self.sep = 0 if sep is None else ord(sep)
        self.ncols = 0
        self._cap = 0
        self._src = self._dst = self._wgt = np.empty(0, dtype=np.int64)

    def parse(
        self, block: bytes | memoryview, first_line: int, start: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, int]:
        """Parse one block (from byte `start`, whose line is `first_line`).

        Returns
        -------
        src, dst : int64 views of the reused buffers (valid until the next call)
        weights : float64 view, or None for two columns
        status, line : as `parse_edges_bytes` (line 0 when OK)
        """
        buf = np.frombuffer(block, dtype=np.uint8)
        cap = int(np.count_nonzero(buf[start:] == _LF)) + 1
        if cap > self._cap:
            self._cap = max(cap, self._cap + self._cap // 2)
            self._src = np.empty(self._cap, dtype=np.int64)
            self._dst = np.empty(self._cap, dtype=np.int64)
            self._wgt = np.empty(self._cap, dtype=np.float64)
        count, ncols, status, line = parse_edges_bytes(
            buf, start, first_line, self.sep, self.ncols, self._src, self._dst, self._wgt
        )
        if ncols:
            self.ncols = int(ncols)
        w = self._wgt[:count] if self.ncols == 3 else None
        return self._src[:count], self._dst[:count], w, int(status), int(line)
