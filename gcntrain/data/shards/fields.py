"""Typed access to the fields of a parsed JSON manifest; each failure is one `FormatError`."""

from __future__ import annotations

from gcntrain.errors import FormatError


def is_int(value: object) -> bool:
    """Whether `value` is a JSON integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def get_field(
    d: dict,
    key: str,
    types: type | tuple,
    where: str,
    *,
    nullable: bool = False,
    what: str = "manifest",
):
    """Field `key` of `d`, checked to be of `types` (None allowed when `nullable`).

    `what` names the object in messages ("manifest", "shard 2", ...); `int` excludes booleans.
    """
    if key not in d:
        raise FormatError(f"{what} has no '{key}' field", where)
    value = d[key]
    if value is None and nullable:
        return None
    ok = isinstance(value, types) and not (isinstance(value, bool) and types is int)
    if not ok:
        raise FormatError(f"{what} field '{key}' has a wrong type ({value!r})", where)
    return value


def get_count(d: dict, key: str, where: str, what: str = "manifest") -> int:
    """Integer field `key` of `d` that must not be negative."""
    value = get_field(d, key, int, where, what=what)
    if value < 0:
        raise FormatError(f"{what} field '{key}' is negative ({value})", where)
    return value


def check_ranges(ranges: list, n: int, label: str, where: str) -> list[list[int]]:
    """Contiguous ``[start, stop)`` ranges covering ``[0, n)`` in order."""
    out = []
    prev = 0
    for idx, rg in enumerate(ranges):
        if not isinstance(rg, list) or len(rg) != 2 or not all(is_int(v) for v in rg):
            raise FormatError(
                f"inconsistent {label} ranges: entry {idx} is not [start, stop]", where
            )
        s, e = rg
        if s != prev:
            raise FormatError(
                f"inconsistent {label} ranges: range {idx} starts at {s} but the "
                f"previous one stops at {prev}",
                where,
            )
        if e < s:
            raise FormatError(f"inconsistent {label} ranges: range {idx} is [{s}, {e})", where)
        out.append([s, e])
        prev = e
    if prev != n:
        raise FormatError(
            f"inconsistent {label} ranges: they end at {prev}, expected n = {n}", where
        )
    return out
