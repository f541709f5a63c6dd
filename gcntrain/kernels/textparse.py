"""Edge-list text parsing: one Numba pass over raw bytes (a whole file or a block of whole
lines of it).

`parse_edges_bytes` reads lines ``u v`` or ``u v w`` (whitespace separated) or ``u,v[,w]``
(comma separated), skipping blank lines and lines starting with ``#`` or ``%``; CRLF endings
are accepted.  It reports the first bad line by number instead of raising, so the caller can
name the file in its error.  The Python side is `gcntrain.data.formats.textparse`.
"""

from __future__ import annotations

from numba import njit

#: status codes returned by `parse_edges_bytes`
OK, BAD_SYNTAX, NEGATIVE_ID, BAD_COLUMNS, ID_TOO_LARGE = 0, 1, 2, 3, 4

STATUS_TEXT = {
    BAD_SYNTAX: "unparsable line",
    NEGATIVE_ID: "negative node id",
    BAD_COLUMNS: "wrong number of columns",
    ID_TOO_LARGE: "node id too large",
}

_SPACE, _TAB, _CR, _LF, _COMMA = 32, 9, 13, 10, 44
_HASH, _PERCENT, _MINUS, _PLUS, _DOT = 35, 37, 45, 43, 46


@njit(nogil=True, cache=True)
def _is_blank(b):  # pragma: no cover - jitted
    return b == _SPACE or b == _TAB or b == _CR


@njit(nogil=True, cache=True)
def _skip_blanks(buf, i, end):  # pragma: no cover - jitted
    while i < end and _is_blank(buf[i]):
        i += 1
    return i


@njit(nogil=True, cache=True)
def _parse_uint(buf, i, end):  # pragma: no cover - jitted
    """Return (value, next position, status) for a non-negative decimal integer at i."""
    if i < end and buf[i] == _MINUS:
        return 0, i, NEGATIVE_ID
    if i < end and buf[i] == _PLUS:
        i += 1
    start = i
    v = 0
    while i < end and 48 <= buf[i] <= 57:
        if i - start >= 18:
            return 0, i, ID_TOO_LARGE
        v = v * 10 + (buf[i] - 48)
        i += 1
    if i == start:
        return 0, i, BAD_SYNTAX
    return v, i, OK


@njit(nogil=True, cache=True)
def _parse_float(buf, i, end):  # pragma: no cover - jitted
    """Return (value, next position, status) for a decimal float (sign, fraction, exponent)."""
    neg = False
    if i < end and (buf[i] == _MINUS or buf[i] == _PLUS):
        neg = buf[i] == _MINUS
        i += 1
    mant = 0
    scale = 0
    digits = 0
    while i < end and 48 <= buf[i] <= 57:
        if digits < 18:
            mant = mant * 10 + (buf[i] - 48)
        else:
            scale += 1
        digits += 1
        i += 1
    if i < end and buf[i] == _DOT:
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            if digits < 18:
                mant = mant * 10 + (buf[i] - 48)
                scale -= 1
            digits += 1
            i += 1
    if digits == 0:
        return 0.0, i, BAD_SYNTAX
    if i < end and (buf[i] == 101 or buf[i] == 69):  # e / E
        i += 1
        eneg = False
        if i < end and (buf[i] == _MINUS or buf[i] == _PLUS):
            eneg = buf[i] == _MINUS
            i += 1
        e = 0
        ed = 0
        while i < end and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            ed += 1
            i += 1
        if ed == 0:
            return 0.0, i, BAD_SYNTAX
        scale += -e if eneg else e
    v = float(mant) * 10.0**scale
    return (-v if neg else v), i, OK


@njit(nogil=True, cache=True)
def _field_end(buf, i, end, sep):  # pragma: no cover - jitted
    """After a field: skip blanks (and one separator when sep is a comma).

    Returns (position, 1 if another field follows, 0 at end of line, -1 on junk).
    """
    j = _skip_blanks(buf, i, end)
    if j >= end or buf[j] == _LF:
        return j, 0
    if sep == _COMMA:
        if buf[j] != _COMMA:
            return j, -1
        return _skip_blanks(buf, j + 1, end), 1
    if j == i:  # whitespace-separated fields need at least one blank between them
        return j, -1
    return j, 1


@njit(nogil=True, cache=True)
def parse_edges_bytes(
    buf, start, first_line, sep, ncols, src, dst, wgt
):  # pragma: no cover - jitted
    """Parse an edge list held in `buf` (uint8) from byte offset `start`.

    Parameters
    ----------
    buf : uint8 array, the (decompressed) file or a block of whole lines of it
    start : byte offset where parsing begins (after a header line, for example)
    first_line : 1-based number of the line at `start`
    sep : 0 for whitespace-separated fields, ord(",") for comma-separated fields
    ncols : columns the data lines must have (2 or 3), or 0 to take them from the first
        data line (a block of a longer file passes what the blocks before it had)
    src, dst : int64 outputs, capacity >= number of data lines
    wgt : float64 output (same capacity); filled when lines have three columns

    Returns
    -------
    count : number of edges written
    ncols : 2 or 3 (columns of the data lines; 0 when there are none)
    status : OK or an error code
    line : 1-based line number of the error (0 when OK)
    """
    end = buf.shape[0]
    i = start
    line = first_line
    count = 0
    while i < end:
        i = _skip_blanks(buf, i, end)
        if i >= end:
            break
        b = buf[i]
        if b == _LF:
            i += 1
            line += 1
            continue
        if b == _HASH or b == _PERCENT:
            while i < end and buf[i] != _LF:
                i += 1
            continue
        u, i, st = _parse_uint(buf, i, end)
        if st != OK:
            return count, ncols, st, line
        i, more = _field_end(buf, i, end, sep)
        if more != 1:
            return count, ncols, (BAD_COLUMNS if more == 0 else BAD_SYNTAX), line
        v, i, st = _parse_uint(buf, i, end)
        if st != OK:
            return count, ncols, st, line
        i, more = _field_end(buf, i, end, sep)
        if more == -1:
            return count, ncols, BAD_SYNTAX, line
        cols = 2
        if more == 1:
            w, i, st = _parse_float(buf, i, end)
            if st != OK:
                return count, ncols, st, line
            i, more = _field_end(buf, i, end, sep)
            if more != 0:
                return count, ncols, (BAD_COLUMNS if more == 1 else BAD_SYNTAX), line
            wgt[count] = w
            cols = 3
        if ncols == 0:
            ncols = cols
        elif cols != ncols:
            return count, ncols, BAD_COLUMNS, line
        src[count] = u
        dst[count] = v
        count += 1
    return count, ncols, OK, 0
