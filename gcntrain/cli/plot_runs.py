"""The data and the figure of `gcntrain plot RUN_DIR...`: finished `train -o DIR` runs.

A run directory holds ``config.json`` (the resolved run) and ``metrics.jsonl`` (one record per
epoch).  Each run is summarised by its *median steady epoch*: among epochs 2..N (epoch 1, which
includes Numba compilation and first touches, is left out when there are more), the epoch
whose time is the median (the lower of the two middle ones for an even count), the epoch time
being that of the epoch's slowest (critical) rank, the sum of its ``epoch_breakdown``, as
`train --json` picks its ``epoch_breakdown``.  The breakdown (seconds on the critical rank:
aggregation, dense, each collective kind, wait, other) is the stacked bar.  Runs that predate
``epoch_breakdown`` fall back to rank 0's ``seconds`` and its ``t_aggregation`` / ``t_dense``
/ ``t_other`` fields, and the legend says so.

Every phase has one colour in every figure of `gcntrain plot` (`PHASE_COLORS`).
"""

from __future__ import annotations

import json
import statistics
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from gcntrain.cli import plot_style as style
from gcntrain.errors import InputError
from gcntrain.job.report import KINDS, median_steady_index

#: collective kinds as the counted MPI layer names them (waiting is drawn apart)
COLLECTIVES = tuple(k for k in KINDS if k != "wait")

#: one colour per collective kind, in `COLLECTIVES` order
_COLLECTIVE_COLORS = ("#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")

#: the fixed colour of each phase name, in every figure of `gcntrain plot` (measured phases,
#: the simulator's compute parts spmm / gemm / quant, collectives, waiting)
PHASE_COLORS: dict[str, str] = {
    "aggregation": "#1f77b4",
    "spmm": "#6baed6",
    "dense": "#ff7f0e",
    "gemm": "#fdae6b",
    "quant": "#e7ba52",
    **dict(zip(COLLECTIVES, _COLLECTIVE_COLORS, strict=True)),
    "wait": "#7f7f7f",
    "other": "#c7c7c7",
}

#: colours for a phase name missing from PHASE_COLORS (chosen by a hash of the name, so
#: still the same in every figure)
_SPARE_COLORS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#9c9ede")

#: stacking order (bottom first); names not listed go between the collectives and wait
_ORDER = ("aggregation", "spmm", "dense", "gemm", "quant", *COLLECTIVES)
_LAST = ("wait", "other")

#: the per-epoch fields of runs without ``epoch_breakdown``, and the phase each stands for
_OLD_FIELDS = {"t_aggregation": "aggregation", "t_dense": "dense", "t_other": "other"}

#: the curves drawn per run: (record key, panel, line style)
CURVES = (
    ("loss", "loss", "-"),
    ("train_acc", "accuracy", "-"),
    ("val_acc", "accuracy", "--"),
    ("test_acc", "accuracy", ":"),
)


def phase_color(name: str) -> str:
    """The colour of phase `name` (the same in every figure)."""
    if name in PHASE_COLORS:
        return PHASE_COLORS[name]
    return _SPARE_COLORS[zlib.crc32(name.encode()) % len(_SPARE_COLORS)]


def phase_order(names) -> list[str]:
    """`names` in stacking order: compute, collectives, other kinds (by name), wait, other."""

    def key(n: str):
        if n in _ORDER:
            return (0, _ORDER.index(n), "")
        if n in _LAST:
            return (2, _LAST.index(n), "")
        return (1, 0, n)

    return sorted(set(names), key=key)


@dataclass
class Run:
    """One finished run: its configuration, epoch records and median steady epoch."""

    path: str
    config: dict
    records: list[dict]
    median: dict = field(init=False)
    breakdown: dict[str, float] = field(init=False)
    breakdown_source: str = field(init=False)

    def __post_init__(self) -> None:
        self.median = median_steady(self.records)
        self.breakdown, self.breakdown_source = breakdown_of(self.median, self.path)

    @property
    def ranks(self) -> int:
        return int(self.config["ranks"])

    @property
    def scheme(self) -> str:
        return str(self.config["scheme"])

    @property
    def graph(self) -> str:
        return str(self.config.get("graph") or self.config.get("source") or "?")

    @property
    def epoch_seconds(self) -> float:
        """Seconds of the median steady epoch (`epoch_time`)."""
        return epoch_time(self.median)


def epoch_time(record: dict) -> float:
    """An epoch's time: its critical rank's (the sum of ``epoch_breakdown``), or rank 0's
    ``seconds`` in runs without the breakdown."""
    b = record.get("epoch_breakdown")
    if isinstance(b, dict):
        return float(sum(v for k, v in b.items() if k != "critical_rank"))
    return float(record["seconds"])


def median_steady(records: list[dict]) -> dict:
    """The record of the median steady epoch by `epoch_time` (epoch 1 left out when there are
    more; the lower middle one of an even count; ties in epoch order)."""
    return records[median_steady_index([epoch_time(r) for r in records])]


def breakdown_of(record: dict, where: str) -> tuple[dict[str, float], str]:
    """The phases of one epoch record, seconds, and where they come from
    (``epoch_breakdown``, or ``t_fields`` for runs that predate it)."""
    b = record.get("epoch_breakdown")
    if isinstance(b, dict):
        parts = {k: float(v) for k, v in b.items() if k != "critical_rank"}
        return parts, "epoch_breakdown"
    if all(k in record for k in _OLD_FIELDS):
        return {p: float(record[k]) for k, p in _OLD_FIELDS.items()}, "t_fields"
    raise InputError(
        "metrics.jsonl has no epoch_breakdown (nor t_aggregation/t_dense/t_other)", where
    )


def load_run(path) -> Run:
    """Read a `gcntrain train -o DIR` directory; a missing or malformed part is an
    `InputError` naming the directory and the part."""
    d = Path(path)
    where = str(path)
    if not d.is_dir():
        raise InputError("no such run directory (`gcntrain train -o DIR` writes one)", where)
    for name in ("config.json", "metrics.jsonl"):
        if not (d / name).is_file():
            raise InputError(f"no {name} (not a `gcntrain train -o` directory)", where)
    try:
        config = json.loads((d / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise InputError(f"config.json is unreadable ({e})", where) from None
    if not isinstance(config, dict):
        raise InputError("config.json is not a JSON object", where)
    for key in ("scheme", "ranks"):
        if key not in config:
            raise InputError(f"config.json has no {key!r}", where)
    records = []
    try:
        lines = (d / "metrics.jsonl").read_text().splitlines()
    except OSError as e:
        raise InputError(f"metrics.jsonl is unreadable ({e.strerror or e})", where) from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise InputError(f"metrics.jsonl line {i} is not JSON", where) from None
        if not isinstance(rec, dict) or "seconds" not in rec or "epoch" not in rec:
            raise InputError(f"metrics.jsonl line {i} has no epoch/seconds", where)
        records.append(rec)
    if not records:
        raise InputError("metrics.jsonl has no epochs", where)
    return Run(where, config, records)


def labels(runs: list[Run]) -> list[str]:
    """Short names of the runs: their directory names, or the paths where names repeat."""
    names = [Path(r.path).name or r.path for r in runs]
    return names if len(set(names)) == len(names) else [r.path for r in runs]


def scaling_groups(runs: list[Run]) -> list[dict]:
    """Runs of the same graph and scheme at two or more rank counts: ``graph``, ``scheme``,
    ``points`` ([ranks, median steady epoch seconds, run], one per run, by ranks)."""
    groups: dict[tuple, list[Run]] = {}
    for r in runs:
        key = (r.graph, r.config.get("num_nodes"), r.scheme)
        groups.setdefault(key, []).append(r)
    out = []
    for (graph, _, scheme), members in groups.items():
        if len({m.ranks for m in members}) < 2:
            continue
        members = sorted(members, key=lambda m: m.ranks)
        pts = [[m.ranks, m.epoch_seconds, m.path] for m in members]
        out.append({"graph": graph, "scheme": scheme, "points": pts})
    return out


def summary(run: Run, prediction: dict | None = None) -> dict:
    """The per-run numbers of the figure (``--json``)."""
    last = run.records[-1]
    out = {
        "run": run.path,
        "graph": run.graph,
        "scheme": run.scheme,
        "scheme_options": run.config.get("scheme_options") or {},
        "partition": run.config.get("partition"),
        "ranks": run.ranks,
        "epochs": len(run.records),
        "median_epoch": int(run.median["epoch"]),
        "epoch_seconds": run.epoch_seconds,
        "breakdown": run.breakdown,
        "breakdown_source": run.breakdown_source,
        "critical_rank": (run.median.get("epoch_breakdown") or {}).get("critical_rank"),
        "final": {k: last.get(k) for k, _, _ in CURVES},
        "curves": {
            k: [r.get(k) for r in run.records] for k in ("epoch", *(c for c, _, _ in CURVES))
        },
    }
    if prediction is not None:
        pred = prediction["predicted_epoch_seconds"]
        out["predicted_epoch_seconds"] = pred
        out["error_percent"] = 100.0 * (pred - run.epoch_seconds) / run.epoch_seconds
    return out


def run_figure(runs: list[Run], predictions: dict[str, dict] | None = None, machine=None):
    """The figure of `runs`: each axes is labelled (``Axes.get_label()``) ``breakdown``,
    ``loss``, ``accuracy``, and where they apply ``scaling`` (several rank counts of one
    graph and scheme) and ``predicted`` (`predictions`: run path -> `figures.measured` row).
    """
    panels = ["breakdown", "loss", "accuracy"]
    groups = scaling_groups(runs)
    if groups:
        panels.append("scaling")
    if predictions:
        panels.append("predicted")
    ncols = 3
    nrows = -(-len(panels) // ncols)
    width = max(15.0, 3.0 + 1.1 * len(runs) * ncols)
    fig = style.new_figure(width, 4.2 * nrows)
    axes = {}
    for i, name in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, i + 1, label=name)
        axes[name] = ax
    names = labels(runs)
    _draw_breakdown(axes["breakdown"], runs, names)
    _draw_curves(axes["loss"], axes["accuracy"], runs, names)
    if groups:
        _draw_scaling(axes["scaling"], groups)
    if predictions:
        _draw_predicted(axes["predicted"], runs, names, predictions, machine)
    return fig


def run_labels(runs: list[Run], names: list[str]) -> list[str]:
    """The legend name of each run: its `labels` name, scheme and ranks."""
    return [f"{n}: {r.scheme}, np {r.ranks}" for r, n in zip(runs, names)]


def _tick_labels(runs: list[Run], names: list[str]) -> list[str]:
    return [f"{n}\n{r.scheme}, np {r.ranks}" for r, n in zip(runs, names)]


def _draw_breakdown(ax, runs: list[Run], names: list[str]) -> None:
    phases = phase_order(p for r in runs for p in r.breakdown)
    x = list(range(len(runs)))
    bottom = [0.0] * len(runs)
    for phase in phases:
        h = [1e3 * r.breakdown.get(phase, 0.0) for r in runs]
        if not any(h):  # no bar to see: not in the legend either
            continue
        ax.bar(x, h, 0.6, bottom=bottom, label=phase, color=phase_color(phase))
        bottom = [b + v for b, v in zip(bottom, h)]
    ax.set_xticks(x, _tick_labels(runs, names), fontsize=7)
    pad = max(0.0, (3 - len(runs)) / 2)  # room for three bars, so one bar stays narrow
    ax.set_xlim(-0.5 - pad, len(runs) - 0.5 + pad)
    ax.set_ylabel("median steady epoch (ms)")
    ax.set_title("epoch time by phase (critical rank)", fontsize=9)
    old = [n for r, n in zip(runs, names) if r.breakdown_source == "t_fields"]
    title = "top of the stack first"
    if old:
        title = "t_aggregation/t_dense/t_other only\n(no epoch_breakdown): " + ", ".join(old)
    handles, lbls = ax.get_legend_handles_labels()
    style.legend_beside(ax, handles[::-1], lbls[::-1], title=title, title_fontsize=6)


def _points(run: Run, key: str) -> list[tuple]:
    return [(rec["epoch"], rec[key]) for rec in run.records if rec.get(key) is not None]


#: the name of each curve's split in the accuracy legend
_SPLITS = {"train_acc": "train", "val_acc": "validation", "test_acc": "test"}


def _draw_curves(ax_loss, ax_acc, runs: list[Run], names: list[str]) -> None:
    """One colour and marker per run; runs whose curves of a panel coincide (equal, or
    closer than a line is wide) are drawn nested (`plot_style.nested`) with their markers
    on different epochs, and their legend entry says "(equal to X)" or "(overlaps X)"; the
    line style is the split (its own legend entries)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    lbls = run_labels(runs, names)
    for ax, panel in ((ax_loss, "loss"), (ax_acc, "accuracy")):
        keys = [(k, st) for k, p, st in CURVES if p == panel]
        series = [[_points(r, k) for k, _ in keys] for r in runs]
        tagged = [[((k, e), v) for k, c in enumerate(cs) for e, v in c] for cs in series]
        first, exact = style.coinciding(tagged)
        sizes = style.nested(first)
        for i, curves in enumerate(series):
            width, msize = sizes[i]
            label = style.equal_label(lbls[i], first[i], exact[i], names)
            for (_, line), pts in zip(keys, curves):
                if not pts:
                    continue
                step = max(1, len(pts) // 8)
                ax.plot(
                    [e for e, _ in pts],
                    [v for _, v in pts],
                    line,
                    color=f"C{i % 10}",
                    marker=style.marker(i),
                    markevery=(i % step, step),
                    linewidth=width,
                    markersize=msize,
                    label=label,
                )
                label = "_nolegend_"  # one entry per run and panel: colour and marker
        if panel == "accuracy":  # each run's best epoch (lowest validation loss)
            for i, r in enumerate(runs):
                for rec in r.records:
                    if rec.get("best"):
                        ax.axvline(rec["epoch"], color=f"C{i % 10}", linestyle="-.", linewidth=0.8)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not ax.lines:
            continue
        handles, texts = ax.get_legend_handles_labels()
        if len(keys) > 1:  # the line style is the split
            for key, line in keys:
                handles.append(Line2D([], [], color="0.35", linestyle=line))
                texts.append(f"{_SPLITS[key]} (line style)")
        if panel == "accuracy" and any(rec.get("best") for r in runs for rec in r.records):
            handles.append(Line2D([], [], color="0.35", linestyle="-.", linewidth=0.8))
            texts.append("best epoch (lowest val loss)")
        style.legend_beside(ax, handles, texts, fontsize=6)
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title("training loss", fontsize=9)
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_title("accuracy", fontsize=9)


def _draw_scaling(ax, groups: list[dict]) -> None:
    for i, g in enumerate(groups):
        color = f"C{i % 10}"
        xs = [p for p, _, _ in g["points"]]
        ys = [1e3 * t for _, t, _ in g["points"]]
        # one marker per run; the line joins each rank count's median run
        ax.plot(xs, ys, "o", color=color, label=f"{g['graph']} {g['scheme']}")
        ps = sorted(set(xs))
        med = [statistics.median_low(y for x, y in zip(xs, ys) if x == p) for p in ps]
        ax.plot(ps, med, "-", color=color)
        p0, t0 = ps[0], med[0]
        ax.plot(
            [p0, ps[-1]],
            [t0, t0 * p0 / ps[-1]],
            ":",
            color=color,
            label=f"ideal ({g['scheme']})",
        )
    style.rank_axis(ax, [p for g in groups for p, _, _ in g["points"]])
    style.plain_log_y(ax)
    ax.set_ylabel("median steady epoch (ms)")
    ax.set_title("strong scaling (measured)", fontsize=9)
    style.legend_beside(ax)


def _draw_predicted(ax, runs: list[Run], names: list[str], predictions, machine) -> None:
    x = list(range(len(runs)))
    ax.bar(
        [i - 0.2 for i in x],
        [1e3 * r.epoch_seconds for r in runs],
        0.4,
        color="#4d4d4d",
        label="measured",
    )
    pred = [1e3 * predictions[r.path]["predicted_epoch_seconds"] for r in runs]
    ax.bar(
        [i + 0.2 for i in x],
        pred,
        0.4,
        color="white",
        edgecolor="#4d4d4d",
        hatch="//",
        label=f"simulated ({machine})",
    )
    for i, (r, p) in enumerate(zip(runs, pred)):
        err = 100.0 * (p / (1e3 * r.epoch_seconds) - 1.0)
        ax.annotate(f"{err:+.0f}%", (i + 0.2, p), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, _tick_labels(runs, names), fontsize=7)
    ax.set_ylabel("epoch time (ms)")
    ax.set_title("simulated vs measured", fontsize=9)
    style.legend_beside(ax)
