"""What every figure of `gcntrain plot` shares: lines that stay visible when their data are
equal, legends beside the axes (never over the data), log2 rank axes with plain integer
ticks, configuration labels and the writing of a figure file.

Series with equal data (or closer than a line is wide) would hide each other.
`coinciding` finds them, and `nested` gives each member of such a group its own width and
marker size: the first drawn is the widest, each later one is drawn inside it, so all of
them show as concentric bands and markers (each series also has its own marker shape,
`marker`), and its legend entry says "(equal to X)" (or "(overlaps X)" where the data
differ by less than a line's width).
"""

from __future__ import annotations

import math
from pathlib import Path

from gcntrain.errors import InputError

#: one marker shape per series, in drawing order
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "h")

#: the line width and marker size of a series that equals no other
BASE_WIDTH = 1.5
BASE_MARKER = 5.0


def figure_class():
    """matplotlib's Figure (no pyplot state), or one line naming the extra to install."""
    try:
        import matplotlib  # noqa: F401  (first: a cached submodule would not check it)
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("gcntrain plot needs matplotlib: pip install 'gcntrain[plot]'") from None
    return Figure


def new_figure(width: float, height: float):
    """A figure with constrained layout, which keeps legends beside the axes in the image."""
    return figure_class()(figsize=(width, height), layout="constrained")


def marker(i: int) -> str:
    """The marker shape of the `i`-th series."""
    return MARKERS[i % len(MARKERS)]


def _value(y: float, log: bool) -> float:
    return math.log10(y) if log and y > 0 else float(y)


#: a line's width as a share of the axes' height (a 1.5-point line on axes about 300 points
#: high): two series closer than this hide one another
LINE_SHARE = 5e-3


def coinciding(series: list, tol: float = LINE_SHARE, log: bool = False) -> tuple[list, list]:
    """(first, exact): for each series (a list of (x, y) points), the index of the first
    earlier series it would hide under, or None, and whether their data are exactly equal.
    Two series coincide where their x are the same and their y differ by at most `tol` of
    the span of all y (of log10 y on a log axis, `log`): closer than a line is wide (1d and
    1.5d 0.3 % apart on one decade of a log axis: 0.13 % of it, drawn as one line)."""
    ys = [_value(y, log) for s in series for _, y in s]
    span = (max(ys) - min(ys)) if ys else 0.0
    limit = tol * (span or 1.0)

    def close(a, b) -> bool:
        if [x for x, _ in a] != [x for x, _ in b]:
            return False
        return all(abs(_value(u, log) - _value(v, log)) <= limit for (_, u), (_, v) in zip(a, b))

    first: list[int | None] = []
    exact: list[bool] = []
    for i, s in enumerate(series):
        j = next((j for j in range(i) if first[j] is None and close(series[j], s)), None)
        first.append(j)
        exact.append(j is not None and list(series[j]) == list(s))
    return first, exact


def nested(first: list[int | None]) -> list[tuple[float, float]]:
    """(line width, marker size) of each series, `first` being `coinciding`'s: a group
    of k equal series is drawn from the widest (its first member) to the narrowest, each
    step 1.5 points of width and 2.5 of marker size, so every member stays visible."""
    size = {}
    for i, f in enumerate(first):
        head = i if f is None else f
        size[head] = size.get(head, 0) + 1
    seen: dict[int, int] = {}
    out = []
    for i, f in enumerate(first):
        head = i if f is None else f
        k = seen.get(head, 0)
        seen[head] = k + 1
        outer = size[head] - 1 - k  # members drawn after this one
        out.append((BASE_WIDTH + 1.5 * outer, BASE_MARKER + 2.5 * outer))
    return out


def equal_label(label: str, first: int | None, exact: bool, names: list[str]) -> str:
    """`label`, with "(equal to X)" where the series equals the earlier series `first`
    exactly, "(overlaps X)" where it only comes closer to it than a line is wide; X is that
    series' name in `names`."""
    if first is None:
        return label
    return f"{label} ({'equal to' if exact else 'overlaps'} {names[first]})"


def legend_beside(ax, handles=None, labels=None, **kw):
    """The axes' legend outside it, on its right, so that it covers no data."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    kw.setdefault("fontsize", 7)
    return ax.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw
    )


def rank_axis(ax, ranks) -> None:
    """A log2 x axis of rank counts, ticked at `ranks` with plain integers (4, 16, 64)."""
    from matplotlib.ticker import NullLocator

    ranks = sorted({int(p) for p in ranks})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks, [str(p) for p in ranks])
    ax.xaxis.set_minor_locator(NullLocator())
    if len(ranks) == 1:  # one point: some room on either side
        ax.set_xlim(ranks[0] / 2, ranks[0] * 2)
    ax.set_xlabel("ranks")


def plain_log_y(ax) -> None:
    """A log y axis labelled with plain numbers (20, 50, 100, not 2x10^1): round values
    where it spans under a decade, 1-2-5 steps under three decades, powers of ten beyond.
    Call it after the data are drawn."""
    from matplotlib.ticker import (
        FixedLocator,
        FuncFormatter,
        LogLocator,
        MaxNLocator,
        NullFormatter,
    )

    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ratio = hi / lo if lo > 0 else math.inf
    if ratio < 10:
        ticks = [v for v in MaxNLocator(nbins=6).tick_values(lo, hi) if lo <= v <= hi]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
    elif ratio < 1000:
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def options_text(options: dict) -> str:
    """Scheme options in words: ``grid 2x4, replication 2``."""
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in options.items())


def config_label(scheme: str, confs: list) -> str:
    """A scheme's label over several rank counts, ``2d: grid 1x2/2x2/2x4, block partition``:
    its options (a value per rank count, in order, where it changes) and its partition,
    from `confs` ([P, `figures.configuration` dict or None] per rank count)."""
    got = [c for _, c in confs if c]
    if not got:
        return scheme
    words = []
    for key in got[0]["options"]:
        vals = [str(c["options"].get(key)) for c in got]
        shown = vals[0] if len(set(vals)) == 1 else "/".join(vals)
        words.append(f"{key.replace('_', ' ')} {shown}")
    parts = sorted({c["partition"] for c in got})
    words.append("/".join(parts) + " partition")
    return f"{scheme}: {', '.join(words)}"


def save(fig, out: str, metadata: dict | None = None) -> None:
    """Write `fig` whole under a temporary name and rename it (or write nothing); PNG
    `metadata` (text keys) are stored in the file."""
    from gcntrain.data.atomic import write_named

    fmt = Path(out).suffix.lstrip(".").lower() or "png"
    if fmt not in fig.canvas.get_supported_filetypes():
        raise InputError(f"--out: unknown image format {fmt!r} (png, pdf, svg, ...)", out)
    meta = metadata if fmt == "png" else None
    try:
        write_named(Path(out), lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, metadata=meta))
    except OSError as e:
        raise InputError(f"cannot write the figure: {e.strerror or e}", out) from None
