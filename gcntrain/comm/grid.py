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
