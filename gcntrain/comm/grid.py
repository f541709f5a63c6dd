"""Process grids (1D, Pr x Pc, X x Y x Z): coordinate math (pure) and sub-communicators.

Ranks are laid out row-major: in a Pr x Pc grid rank r sits at (r // Pc, r % Pc); in an
X x Y x Z grid at (r // (Y*Z), (r // Z) % Y, r % Z).  The math is pure so layouts and the
simulator can place any rank without MPI.
"""

from __future__ import annotations

from dataclasses import dataclass

from gcntrain.errors import InputError


def check_grid(size: int, dims: tuple[int, ...], what: str = "grid") -> None:
    """Raise InputError unless `dims` are positive and multiply to `size`."""
    prod = 1
    for d in dims:
        if int(d) < 1:
            raise InputError(f"{what} dimensions must be >= 1, got {'x'.join(map(str, dims))}")
        prod *= int(d)
    if prod != size:
        raise InputError(
            f"{what} {'x'.join(map(str, dims))} needs {prod} ranks, but the job has {size}"
        )


def factorizations(P: int, ndim: int) -> list[tuple[int, ...]]:
    """Every ordered factorisation of `P` into `ndim` positive factors, lexicographic."""
    if ndim == 1:
        return [(int(P),)]
    out = []
    for d in range(1, P + 1):
        if P % d == 0:
            out += [(d, *rest) for rest in factorizations(P // d, ndim - 1)]
    return out


def balanced_grid(P: int, ndim: int) -> tuple[int, ...]:
    """The factorisation of `P` into `ndim` factors closest to equal (least largest factor,
    then least spread), in increasing order; for 2 dims the most nearly square ``r <= c``."""
    cands = [f for f in factorizations(P, ndim) if list(f) == sorted(f)]
    return min(cands, key=lambda f: (max(f), max(f) - min(f)))


def parse_dims(text, size: int, ndim: int, scheme: str) -> tuple[int, ...]:
    """``"AxB[xC]"`` -> its `ndim` dimensions, checked against the number of ranks (None:
    `balanced_grid`)."""
    if text is None:
        return balanced_grid(size, ndim)
    try:
        dims = tuple(int(p) for p in str(text).lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) != ndim:
        form, example = ("RxC", "2x4") if ndim == 2 else ("XxYxZ", "2x2x2")
        raise InputError(
            f"--grid must look like {form} (e.g. {example}) for the {scheme} scheme, got {text!r}"
        )
    check_grid(size, dims, "process grid")
    return dims


def coords(rank: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major coordinates of `rank` in a grid of shape `dims`."""
    out = []
    for d in reversed(dims):
        out.append(rank % d)
        rank //= d
    return tuple(reversed(out))


def rank_of(c: tuple[int, ...], dims: tuple[int, ...]) -> int:
    r = 0
    for x, d in zip(c, dims):
        r = r * d + x
    return r


@dataclass
class Grid2D:
    """A Pr x Pc grid: `row` spans a process row (Pc ranks), `col` a process column (Pr)."""

    world: object
    pr: int
    pc: int
    i: int
    j: int
    row: object
    col: object


def grid_2d(comm, pr: int, pc: int) -> Grid2D:
    """Split `comm` (a counted Comm) into process rows and columns of a pr x pc grid."""
    check_grid(comm.size, (pr, pc), "process grid")
    i, j = coords(comm.rank, (pr, pc))
    row = comm.split(color=i, key=j)
    col = comm.split(color=j, key=i)
    return Grid2D(comm, pr, pc, i, j, row, col)


@dataclass
class Grid3D:
    world: object
    dims: tuple[int, int, int]
    coord: tuple[int, int, int]
    #: sub-communicators along each axis (ranks differing only in that coordinate)
    axis: tuple[object, object, object]


def grid_3d(comm, x: int, y: int, z: int) -> Grid3D:
    dims = (x, y, z)
    check_grid(comm.size, dims, "process grid")
    c = coords(comm.rank, dims)
    axes = []
    for a in range(3):
        rest = tuple(c[b] for b in range(3) if b != a)
        others = tuple(dims[b] for b in range(3) if b != a)
        axes.append(comm.split(color=rank_of(rest, others), key=c[a]))
    return Grid3D(comm, dims, c, tuple(axes))
