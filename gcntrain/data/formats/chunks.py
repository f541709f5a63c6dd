"""A text file (plain, or gzip with one or several members) read as blocks of whole lines,
so that a parser holds one block at a time, whatever the file's size.

`line_blocks` yields ``(block, first_line)``: bytes that end with a newline (the file's last
line may lack one) and the 1-based number of the block's first line.  A block holds about
`CHUNK_BYTES` bytes (more only when one line is longer).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from gcntrain.data.formats.common import require_file
from gcntrain.errors import FormatError

#: bytes of text per block (decompressed); tests force tiny blocks through this constant
CHUNK_BYTES = 1 << 24

_GZIP_MAGIC = b"\x1f\x8b"


def _raw_pieces(path: str, size: int) -> Iterator[bytes]:
    """The file's bytes, gunzipped when it starts with the gzip magic bytes, in pieces of
    at most about `size` bytes."""
    with open(path, "rb") as f:
        head = f.read(2)
        if head != _GZIP_MAGIC:
            yield head
            while piece := f.read(size):
                yield piece
            return
        pending = head
        d = zlib.decompressobj(31)
        started = True  # a member was begun
        while True:
            if not pending:
                pending = f.read(size)
                if not pending:
                    break
            if not started:  # between members: padding zeros, then the next member
                pending = pending.lstrip(b"\x00")
                if not pending:
                    continue
                d = zlib.decompressobj(31)
                started = True
            try:
                out = d.decompress(pending, size)
            except zlib.error as e:
                raise FormatError(f"corrupt gzip data ({e})", path) from None
            pending = d.unconsumed_tail
            if out:
                yield out
            if d.eof:  # the rest of the input is in unused_data (unconsumed_tail: stale)
                pending = d.unused_data
                started = False
        if started and not d.eof:
            raise FormatError("corrupt gzip data (truncated gzip stream)", path)


def line_blocks(path: str, chunk_bytes: int | None = None) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines of the text file `path` (see the module docstring).

    Parameters
    ----------
    path : the file (plain or gzip, detected by its magic bytes)
    chunk_bytes : block size; default `CHUNK_BYTES` (read when called)

    Raises
    ------
    InputError
        Missing file; `FormatError` for corrupt gzip data.
    """
    require_file(path)
    size = max(int(chunk_bytes or CHUNK_BYTES), 1)
    carry = b""
    line = 1
    for piece in _raw_pieces(path, size):
        buf = carry + piece if carry else piece
        cut = buf.rfind(b"\n") + 1
        if cut == 0 or (cut < size // 2 and len(buf) < size):
            carry = buf  # no whole line yet, or too little: read on
            continue
        block, carry = buf[:cut], buf[cut:]
        yield block, line
        line += block.count(b"\n")
    if carry:
        yield carry, line
