"""How much memory there is, and one-line refusals of work that cannot fit.

`available_bytes` reads the kernel's estimate of memory available without swapping
(``MemAvailable``), lowered to a cgroup limit where one applies; `check_fits` turns an
estimate of what a step will allocate into an `InputError` naming both figures, before the
step starts, instead of a MemoryError (exit 1) or the kernel's out-of-memory killer (no
message at all).
"""

from __future__ import annotations

import os
from pathlib import Path

from gcntrain.errors import InputError


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_free() -> int | None:
    """Room left under a cgroup v2 memory limit (None: no limit or not readable)."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        # the page cache counts in memory.current but is given back on demand
        for line in Path("/sys/fs/cgroup/memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "inactive_file":
                used -= int(value)
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None


def available_bytes() -> int | None:
    """Bytes this process can still allocate without swapping (None: unknown)."""
    got = [v for v in (_meminfo_available(), _cgroup_free()) if v is not None]
    if not got and hasattr(os, "sysconf"):
        try:
            got = [os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
        except (ValueError, OSError):
            return None
    return min(got) if got else None


def fmt_bytes(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def check_fits(
    need: float,
    what: str,
    limit: float | None = None,
    hint: str = "",
    source: str = "available memory",
) -> None:
    """Raise `InputError` when `need` bytes exceed `limit` (default: `available_bytes`;
    `source` says where the limit comes from)."""
    have = available_bytes() if limit is None else limit
    if have is None or need <= have:
        return
    msg = f"{what} needs about {fmt_bytes(need)}, more than the {fmt_bytes(have)} of {source}"
    raise InputError(msg + (f"; {hint}" if hint else ""))


def parse_size(text: str) -> float:
    """``--max-memory`` values: bytes, or a number with K, M, G or T (powers of 1024)."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = 1
    if t and t[-1] in "KMGT":
        scale = 1024 ** ("KMGT".index(t[-1]) + 1)
        t = t[:-1]
    try:
        v = float(t) * scale
    except ValueError:
        v = -1.0
    if not (v > 0 and v < float("inf")):
        raise InputError(f"--max-memory must be a size such as 4G or 512M, got {text!r}")
    return v
