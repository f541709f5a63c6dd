"""Software prefetch of a dense row from jitted code (an LLVM ``llvm.prefetch`` intrinsic).

Sparse-times-dense kernels gather rows ``X[indices[k], :]`` in random order; the hardware
prefetchers cannot guess the next row, so each gathered row is a cache miss.  Prefetching the
row needed ``d`` nonzeros ahead overlaps those misses (measured in docs/kernels.md).

A prefetch is a hint: it never faults and never changes results.
"""

from __future__ import annotations

import os

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


def cache_line_bytes() -> int:
    """Bytes per L1 data-cache line of this CPU (64 on x86 Xeon/EPYC, 256 on A64FX), from
    ``sysconf`` or sysfs; 64 when neither says.

    Read once at import and compiled into the kernels as a constant.  Numba's on-disk cache
    is keyed by the CPU model, so a cached kernel always carries its own CPU's line size.
    """
    try:
        size = int(os.sysconf("SC_LEVEL1_DCACHE_LINESIZE"))
    except (ValueError, OSError, AttributeError):
        size = 0
    if size <= 0:
        path = "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"
        try:
            with open(path) as fh:
                size = int(fh.read().strip())
        except (OSError, ValueError):
            size = 0
    return size if size > 0 and size & (size - 1) == 0 else 64


def last_level_cache_bytes() -> int:
    """Bytes of this CPU's largest (last-level) data or unified cache, 0 when unknown.

    Read from sysfs (``/sys/devices/system/cpu/cpu0/cache/index*/``: the highest level that
    is not an instruction cache), the figure ``lscpu`` shows; ``sysconf`` only when sysfs has
    none, because on virtual machines it can disagree with sysfs by 10x (320 MiB against
    32 MiB on the 2-core EPYC VM of issue 52).  One instance of the cache is meant: cores
    sharing it share its size.
    """
    best_level, best = 0, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    for name in entries:
        if not name.startswith("index"):
            continue
        try:
            with open(f"{base}/{name}/type") as fh:
                kind = fh.read().strip()
            with open(f"{base}/{name}/level") as fh:
                level = int(fh.read().strip())
            with open(f"{base}/{name}/size") as fh:
                text = fh.read().strip().upper()
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            size = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
        if kind != "Instruction" and level >= best_level and size > 0:
            best_level, best = level, size
    if best > 0:
        return best
    for key in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = int(os.sysconf(key))
        except (ValueError, OSError, AttributeError):
            size = 0
        if size > 0:
            return size
    return 0


#: bytes per cache line when stepping through a row (detected: `cache_line_bytes`)
CACHE_LINE = cache_line_bytes()
#: bytes of the last-level cache (detected: `last_level_cache_bytes`; 32 MiB when unknown),
#: compiled into the kernels as a constant like `CACHE_LINE`
LLC_BYTES = last_level_cache_bytes() or 32 << 20
#: at most this many cache lines of one row are prefetched (hardware streams the rest)
MAX_LINES = 8
#: a gathering kernel prefetches about this many cache lines ahead of the row it reads ...
LINES_AHEAD = 128
#: ... but never fewer nor more than these many nonzeros ahead
MIN_DISTANCE, MAX_DISTANCE = 8, 64


def _make_prefetch(rw: int):
    """Build an intrinsic ``f(arr, row, col)`` prefetching ``arr[row, col]`` (rw: 0 read, 1 write).

    LLVM requires the read/write flag to be an immediate, hence one intrinsic per flag.
    """

    @intrinsic
    def _prefetch(typingctx, arr, row, col):
        if not (isinstance(arr, types.Array) and arr.ndim == 2):
            return None
        sig = types.void(arr, row, col)

        def codegen(context, builder, signature, args):
            aty = signature.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            r = context.cast(builder, args[1], signature.args[1], types.intp)
            c = context.cast(builder, args[2], signature.args[2], types.intp)
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [r, c], wraparound=False)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
            # locality 3 = keep in all cache levels; cache type 1 = data cache
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(rw), i32(3), i32(1)])
            return context.get_dummy_value()

        return sig, codegen

    return _prefetch


#: ``prefetch_read(arr, row, col)``: hint a coming read of ``arr[row, col]`` (2-D arrays)
prefetch_read = _make_prefetch(0)
#: ``prefetch_write(arr, row, col)``: hint a coming write of ``arr[row, col]`` (2-D arrays)
prefetch_write = _make_prefetch(1)


@njit(nogil=True, cache=True)
def line_step(itemsize):  # pragma: no cover - jitted
    """Elements per cache line (at least 1).  A kernel computes it once, outside its loops:
    ``X.itemsize`` is a run-time value in Numba, so this is an integer division (measured:
    the epoch 8 % slower with it inside the per-nonzero prefetch, issue 52)."""
    return max(1, CACHE_LINE // itemsize)


@njit(nogil=True, cache=True)
def prefetch_span(j0, j1, step):  # pragma: no cover - jitted
    """(lines, last) for prefetching columns ``j0:j1`` of a row: the number of lines from
    `j0` on (at most `MAX_LINES`) and the last column in range, as `prefetch_lines_read`
    takes them (``j1 > j0``).  Computed once per kernel call."""
    stop = min(j1, j0 + MAX_LINES * step)
    return (stop - j0 + step - 1) // step, stop - 1


@njit(nogil=True, cache=True)
def prefetch_lines_read(X, r, j0, lines, step, last):  # pragma: no cover - jitted
    """Prefetch for reading `lines` cache lines of row ``r`` of X from column `j0` on, every
    `step` columns, and column `last` (a row rarely starts on a line boundary); the counts
    come from `prefetch_span` so that no division runs per call."""
    for t in range(lines):
        prefetch_read(X, r, j0 + t * step)
    prefetch_read(X, r, last)


@njit(nogil=True, cache=True)
def prefetch_lines_write(X, r, j0, lines, step, last):  # pragma: no cover - jitted
    """`prefetch_lines_read` for a coming write."""
    for t in range(lines):
        prefetch_write(X, r, j0 + t * step)
    prefetch_write(X, r, last)


@njit(nogil=True, cache=True)
def prefetch_distance(f, itemsize):  # pragma: no cover - jitted
    """Nonzeros ahead at which to prefetch gathered rows of `f` values of `itemsize` bytes:
    `LINES_AHEAD` cache lines in flight, i.e. 64 nonzeros for one-line rows (width 16
    float32 on a 64-byte line), 32 for width 64, 16 for width 128 (measured best at each
    width in docs/kernels.md), within [`MIN_DISTANCE`, `MAX_DISTANCE`]."""
    lines = max(1, (f * itemsize + CACHE_LINE - 1) // CACHE_LINE)
    return max(MIN_DISTANCE, min(MAX_DISTANCE, LINES_AHEAD // lines))
