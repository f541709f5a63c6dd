"""The rows of docs/validation_rows.csv and how each is priced (`recipe`).

A `Recipe` says, for one row, what the check computes and compares: the profile, the
stand-in graph, the scheme and its options, the ranks and ranks per node, the model (from the
paper's text: layers, widths, classes) and the quantity compared, with every choice the
paper leaves open in ``assumed``; or, for a row that is not priced, the one-line reason and
its category. Nothing here imports gcntrain or plans anything (``check_papers.py --dry``).
Rows of one kind (paper and quantity) go through one branch, so the informing rows exercise
the code that prices the held-out ones.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from papercheck.standins import (
    GENERATE_MAX_ENTRIES,
    HG_MAX_ENTRIES,
    NO_STANDIN,
    STANDINS,
    standin_of,
)

ROWS_CSV = Path(__file__).resolve().parents[2] / "docs" / "validation_rows.csv"
HALVES = ("informing", "held-out", "calibration")

# ---------------------------------------------------------------------------- the models


@dataclass(frozen=True)
class Model:
    """The trained model of a row: GCN or GraphSAGE, widths, LayerNorm."""

    name: str  # "gcn" | "sage"
    aggregator: str  # GraphSAGE's: "mean" | "gcn"
    hidden: tuple[int, ...]
    features: int
    classes: int
    norm: str = "none"

    def describe(self) -> str:
        kind = "GCN" if self.name == "gcn" else f"GraphSAGE ({self.aggregator})"
        widths = "-".join(str(w) for w in (self.features, *self.hidden, self.classes))
        return f"{kind} {widths}" + (", LayerNorm" if self.norm == "layer" else "")


#: the graphs' feature widths and classes (the papers' Table 2s)
WIDTHS = {"reddit": (602, 41), "products": (100, 47)}


def supergcn_model(graph: str) -> Model:
    """SuperGCN Table 2 (line 411): three-layer GraphSAGE, hidden 256, LayerNorm (PyG's
    SAGEConv, mean aggregator)."""
    f, c = WIDTHS[graph]
    return Model("sage", "mean", (256, 256), f, c, "layer")


def distgnn_model(graph: str) -> Model:
    """DistGNN line 285: GraphSAGE with the GCN aggregator, two layers of hidden 16 on
    Reddit, three layers of hidden 256 otherwise."""
    f, c = WIDTHS[graph]
    return Model("sage", "gcn", (16,) if graph == "reddit" else (256, 256), f, c)


#: the hypergraph paper states no widths for its CPU runs (Fig. 4b varies d = 50, 100 and
#: L = 2..8): two GCN layers, d = 50 at every layer
HYPERGRAPH_D = 50
HYPERGRAPH_MODEL = Model("gcn", "mean", (HYPERGRAPH_D,), HYPERGRAPH_D, HYPERGRAPH_D)
HYPERGRAPH_ASSUMED = (
    "2-layer GCN, d = 50 at every layer (not stated; Fig. 4b's smallest d); one rank per "
    "abci core (40 per node; the paper's 48-core nodes)"
)
HYPERGRAPH_RPN = 40

# ---------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Run:
    """One planned training configuration, priced on `profile`.

    `partition`: a partition method (random, metis, hypergraph, libra) computed as
    ``--partition METHOD`` does and cached, or None (the scheme's default). `socket`: one
    rank on one socket of a node (the node's other socket idle: `rpn` ranks' share of the
    cores and memory bandwidth), for the single-socket baselines.
    """

    graph: str
    scheme: str
    P: int
    profile: str
    rpn: int
    model: Model
    options: tuple[tuple[str, str], ...] = ()
    partition: str | None = None
    socket: bool = False
    epochs: int = 12

    def describe(self) -> str:
        opts = "".join(f" {k}={v}" for k, v in self.options)
        part = f" --partition {self.partition}" if self.partition else ""
        where = (
            f"one socket of a node of {self.profile}"
            if self.socket
            else f"P={self.P}, {self.rpn}/node on {self.profile}"
        )
        return f"{self.graph}: {self.scheme}{opts}{part}, {where}, {self.model.describe()}"


# ---------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One line of the CSV (its columns, as text)."""

    id: str
    half: str
    paper: str
    source_place: str
    line: str
    machine: str
    profile: str
    graph: str
    scheme: str
    ranks: str
    nodes: str
    quantity: str
    value: str
    unit: str
    approx: str
    priced_by: str
    stand_in: str
    note: str


def read_rows(path: Path = ROWS_CSV) -> list[Row]:
    """Every row of the CSV, in its order."""
    with open(path, newline="", encoding="utf-8") as f:
        return [Row(**r) for r in csv.DictReader(f)]


def number(value: str) -> float | None:
    """The figure of a value cell ("0.07", "1.2e9", "18M", "about 12x faster", "about 93"),
    or None where it has none (a shape, an ordering)."""
    m = re.search(r"(\d+(?:\.\d+)?(?:e\d+)?)\s*([MG]?)", value)
    if m is None:
        return None
    x = float(m.group(1))
    return x * {"": 1.0, "M": 1e6, "G": 1e9}[m.group(2)]


@dataclass
class Recipe:
    """How one row is priced.

    kind: "numeric" (a predicted number against the paper's), "shape" (a sweep's shape
    against the paper's statement) or "none" (not priced: `reason`, `reason_key`).
    how: the pricing function (`papercheck.price`); runs: what is planned; params: the
    rest (a partition statistic, the sweep's check); compares: the quantity compared.
    """

    row: Row
    kind: str
    how: str = ""
    runs: tuple[Run, ...] = ()
    params: dict = field(default_factory=dict)
    compares: str = ""
    assumed: str = ""
    reason: str = ""
    reason_key: str = ""
    bound: str = ""

    @property
    def paper_value(self) -> float | None:
        return number(self.row.value) if self.kind == "numeric" else None

    def graphs(self) -> set[str]:
        """The stand-ins the recipe plans or partitions."""
        out = {r.graph for r in self.runs}
        if "graph" in self.params:
            out.add(self.params["graph"])
        return out


def not_priced(row: Row, key: str, reason: str) -> Recipe:
    return Recipe(row, "none", reason=reason, reason_key=key)


#: categories of the not-priced rows (summary counts)
REASONS = {
    "gpu": "GPU run, no profile",
    "standin": "no stand-in here (graph too large)",
    "input": "the check's input",
    "not modelled": "quantity the model does not price",
    "ordering": "the stand-in cannot have the paper's ordering",
    "too slow": "hypergraph partition too slow here",
    "skipped": "stand-in above --max-entries (this run only)",
    "failed": "pricing failed",
}


def limited(rec: Recipe, max_entries: float | None) -> Recipe:
    """`rec`, or not priced where a stand-in it needs has more than `max_entries` stored
    entries (``check_papers.py --max-entries``: a quicker run)."""
    if max_entries is None or rec.kind == "none":
        return rec
    big = sorted(g for g in rec.graphs() if STANDINS[g].nnz > max_entries)
    if not big:
        return rec
    sizes = ", ".join(f"{g} {STANDINS[g].nnz / 1e6:.0f}M" for g in big)
    return not_priced(rec.row, "skipped", f"--max-entries {max_entries:g}: {sizes} entries")


def _graphs(row: Row) -> tuple[list[str], list[str]]:
    """(stand-in keys, CSV names without one) of the row's graph cell ("a, b, c"; "all
    Table 1 graphs but soc-Slashdot0902")."""
    cell = row.graph
    if cell.startswith("all Table 1 graphs"):
        names = [s.names[0] for s in STANDINS.values() if s.papers == "hypergraph T1"]
    else:
        names = [re.sub(r"\s*\(.*\)", "", g).strip() for g in cell.split(",")]
    have = [standin_of(g).key for g in names if standin_of(g) is not None]
    missing = [g for g in names if standin_of(g) is None]
    return have, missing


def _no_standin(row: Row, missing: list[str]) -> Recipe:
    what = "; ".join(f"{g}: {NO_STANDIN.get(g, 'not generated')}" for g in missing)
    return not_priced(row, "standin", f"no stand-in can be generated or planned here ({what})")


def recipe(row: Row) -> Recipe:
    """How `row` is priced (see the module docstring)."""
    if row.profile.startswith("none"):
        return not_priced(
            row, "gpu", f"GPU run ({row.machine}): no GPU profile of that machine is shipped"
        )
    if row.paper == "tofud":
        return _tofud(row)
    if row.id.startswith("supergcn-t5-"):
        return _table5(row)
    have, missing = _graphs(row)
    if not have:
        return _no_standin(row, missing)
    left = f"left out (no stand-in): {', '.join(missing)}; " if missing else ""
    family = _FAMILIES.get((row.paper, row.quantity))
    if family is None:
        raise ValueError(f"{row.id}: no recipe for {row.paper} {row.quantity}")
    rec = _feasible(family(row, have))
    if left and rec.kind != "none":
        rec.assumed = left + rec.assumed
    rec.bound = structure_bound(rec)
    return rec


#: why a priced row is counted apart from the acceptance (`structure_bound`)
STRUCTURE_BOUND = (
    "structure-bound: a partition statistic or a ratio between partitioners of an R-MAT "
    "stand-in measures the stand-in's structure (hubs, no communities), not the time model"
)


def structure_bound(rec: Recipe) -> str:
    """`STRUCTURE_BOUND` where `rec` prices a partition statistic, or compares partitioners
    (runs differing in ``--partition``), on a stand-in that is not the real graph; "" else.

    Chosen from the informing half (docs/measurements/papercheck-informing-2026-12-07.md)
    and applied by kind to every half: R-MAT has no communities, so on its stand-ins METIS's
    and the hypergraph partitioner's communication volume comes out at 0.76-0.88x a random
    partition's, against 0.01-0.37x on the papers' real graphs, and the ratios built on
    volumes inherit it; no term of the time model moves these figures.  Such rows are
    printed with their ratio and tallied apart; rows on the real graph (soc-Slashdot0902)
    count as any other.
    """
    if rec.kind == "none":
        return ""
    if all(STANDINS[g].generator == "snap" for g in rec.graphs()):
        return ""
    if rec.how == "stat" or len({r.partition for r in rec.runs}) > 1:
        return STRUCTURE_BOUND
    return ""


def _too_big(graph: str, partition: str | None) -> str | None:
    """Why `graph` (partitioned by `partition`) cannot be used here, or None."""
    n = STANDINS[graph].nnz
    if n > GENERATE_MAX_ENTRIES:
        return (
            f"{graph}: {n / 1e6:.0f}M entries, not generated here (its draw and METIS need >12 GB)"
        )
    if partition == "hypergraph" and n > HG_MAX_ENTRIES:
        return f"{graph}: a hypergraph partition of {n / 1e6:.1f}M entries would take hours here"
    return None


def _feasible(rec: Recipe) -> Recipe:
    """`rec` without the stand-ins this machine cannot use (`_too_big`): a sweep over several
    graphs keeps the others (and says so), any other recipe is not priced."""
    if rec.kind == "none":
        return rec
    uses = {(r.graph, r.partition) for r in rec.runs}
    if "graph" in rec.params:
        uses.add((rec.params["graph"], rec.params["method"]))
        if rec.params.get("base"):
            uses.add((rec.params["graph"], rec.params["base"]))
    why = {g: w for g, p in sorted(uses, key=str) if (w := _too_big(g, p))}
    if not why:
        return rec
    key = "standin" if any("not generated" in w for w in why.values()) else "too slow"
    keep = tuple(r for r in rec.runs if r.graph not in why)
    if rec.kind == "shape" and keep:
        rec.runs = keep
        rec.assumed = f"left out: {'; '.join(why.values())}; {rec.assumed}"
        return rec
    return not_priced(rec.row, key, "; ".join(why.values()))


# ---------------------------------------------------------------------------- families


def _tofud(row: Row) -> Recipe:
    q = row.quantity
    if q == "one_way_put_latency_8B":
        return Recipe(
            row,
            "numeric",
            "put",
            compares="one 8-byte message between ranks on two fugaku nodes (us)",
            assumed="an MPI point-to-point message stands for the uTofu Put (the profile has "
            "no RDMA path)",
        )
    if q == "injection_rate_per_node":
        return Recipe(
            row,
            "numeric",
            "injection",
            compares="GB/s one fugaku node injects: its 4 ranks each send 64 MiB to ranks on 6 "
            "other nodes at once",
            assumed="Put traffic to 6 neighbours stood in for by MPI messages",
        )
    return not_priced(
        row,
        "not modelled",
        "link efficiency (achieved / peak) is not a model quantity: the profile has one rate "
        "per link",
    )


#: SuperGCN Table 5's rows: method -> (GB of each of its Alltoallv, as priced)
TABLE5 = {
    "pre_aggr": 1934.8559,
    "post_aggr": 1934.8559,
    "pre_post_aggr": 1269.5784,
    "pre_post_aggr-int2-data": 80.4770,
    "pre_post_aggr-int2-params": 1.6530,
}


def _table5(row: Row) -> Recipe:
    method = row.id[len("supergcn-t5-") :].rsplit("-", 2)[0]
    if row.quantity == "comm_volume":
        return not_priced(
            row, "input", "the volume is the check's input: the time row beside it prices it"
        )
    return Recipe(
        row,
        "numeric",
        "alltoall",
        params={"gb": TABLE5[method], "ranks": 2048, "rpn": 4},
        compares="ms of one Alltoallv over 2048 ranks (4 per node, 512 fugaku nodes), the "
        "paper's GB spread evenly over the ordered rank pairs",
        assumed="the volume spread evenly (the paper gives no per-pair volumes)",
    )


def _supergcn(row: Row, have: list[str]) -> Recipe:
    """SuperGCN's epoch, scaling and breakdown rows: hier with its communication
    optimizations (hybrid pre/post aggregation, Int2 messages) on METIS."""
    opt = (("aggr", "hybrid"), ("quant_bits", "2"))
    note = (
        "hier hybrid + Int2 (w/ comm opt), without label propagation (the setting is not "
        "stated); gcntrain's --partition metis (the paper weights METIS by in-degree and "
        "training mask)"
    )
    if row.quantity == "epoch_time":
        g = have[0]
        ranks = (64, 128, 256, 512, 1024)
        runs = tuple(Run(g, "hier", P, "fugaku", 4, supergcn_model(g), opt, "metis") for P in ranks)
        return Recipe(
            row,
            "numeric",
            "best",
            runs,
            compares="the least predicted epoch over P = 64-1024 (s)",
            assumed=f"{note}; Table 4 is the best epoch before performance regresses, P not "
            "given: the best of P = 64, 128, ..., 1024 on fugaku",
        )
    if row.quantity == "speedup_range":
        ranks = (64, 256)
        runs = tuple(
            r
            for g in have
            for P in ranks
            for r in (
                Run(g, "hier", P, "abci", 2, supergcn_model(g), opt, "metis"),
                Run(g, "vertexcut", P, "abci", 2, supergcn_model(g), (("delay", "5"),), "libra"),
            )
        )
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params={"check": "range", "low": 0.9, "high": 6.0},
            compares="DistGNN cd-5 epoch / SuperGCN epoch at each graph and P",
            assumed=f"{note}; P = 64 and 256 (the ends of Table 3's ABCI runs; Fig. 9's P are "
            "not in the text); both with SuperGCN's Table 2 model; pass: every speedup within "
            "the paper's 0.9-6.0 widened 2x",
        )
    if row.quantity == "dominant_component":
        runs = tuple(
            Run(g, "hier", P, "abci", 2, supergcn_model(g), opt, "metis")
            for g in have
            for P in (64, 256)
        )
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params={"check": "dominant", "small": 64, "large": 256},
            compares="the largest part of the predicted epoch at small and large P",
            assumed=f"{note}; small = 64, large = 256 (Table 3's ABCI runs); Opt only (Base is "
            "vanilla PyG); gcntrain overlaps the Alltoallv, the paper switched overlap off; "
            "pass: SpMM largest at 64, a collective largest at 256",
        )
    # scaling_shape (papers100M, proteins) and speedup_shape rows have no stand-in: caught
    # before; a scaling row on an available graph would come here
    raise ValueError(f"{row.id}: no SuperGCN recipe for {row.quantity}")


def _distgnn_cut(g: str, P: int, delay: str) -> Run:
    return Run(g, "vertexcut", P, "abci", 2, distgnn_model(g), (("delay", delay),), "libra")


def _distgnn_socket(g: str) -> Run:
    return Run(g, "serial", 1, "abci", 2, distgnn_model(g), socket=True)


_DISTGNN_NOTE = (
    "abci nearest (one rank per socket, 2 per node: the paper's Xeon 9242 nodes, HDR "
    "DragonFly); Libra as gcntrain's --partition libra"
)


def _delay(scheme_cell: str) -> str:
    m = re.search(r"cd-(\d+)|\b(0c)\b", scheme_cell)
    if m is None:
        raise ValueError(f"no cd-R / 0c in {scheme_cell!r}")
    return "none" if m.group(2) else m.group(1)


def _distgnn(row: Row, have: list[str]) -> Recipe:
    g = have[0]
    q = row.quantity
    if q == "replication_factor":
        P = int(row.ranks)
        return Recipe(
            row,
            "numeric",
            "stat",
            params={"graph": g, "method": "libra", "P": P, "stat": "replication_factor"},
            compares=f"Libra's replication factor at {P} parts (copies per vertex)",
            assumed="gcntrain's Libra (seed 0) on the stand-in",
        )
    if q == "epoch_time":
        P = int(row.ranks)
        if P == 1:
            run = _distgnn_socket(g)
            what = "serial on one socket"
        else:
            run = _distgnn_cut(g, P, _delay(row.scheme))
            what = f"vertexcut cd-{_delay(row.scheme)}"
        return Recipe(
            row,
            "numeric",
            "epoch",
            (run,),
            compares=f"predicted training epoch, {what} (s)",
            assumed=f"{_DISTGNN_NOTE}; 12 planned epochs, the median (cd-5 in its steady state, "
            "as the paper's epochs 10-20)",
        )
    if q == "speedup_vs_1socket":
        P = int(row.ranks)
        d = _delay(row.scheme)
        return Recipe(
            row,
            "numeric",
            "ratio",
            (_distgnn_socket(g), _distgnn_cut(g, P, d)),
            params={"measure": "epoch"},
            compares=f"epoch on one socket / epoch of cd-{d if d != 'none' else '0c'} at P = {P}",
            assumed=f"{_DISTGNN_NOTE}; the single-socket run as gcntrain's serial scheme on one "
            "socket of an abci node; 0c = --delay none",
        )
    if q == "dominant_component":
        plan = {"reddit": (2, 16), "products": (2, 16, 64)}
        runs = tuple(_distgnn_cut(g, P, "0") for g in have for P in plan[g])
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params={"check": "remote_vs_local"},
            compares="remote aggregation (the critical rank's communication) against local "
            "aggregation (its SpMM) per epoch",
            assumed=f"{_DISTGNN_NOTE}; P = 2, 16 (reddit: Table 4 stops at 16) and 2, 16, 64 "
            "(products) of Fig. 6's 2-128; pass: communication above SpMM at every P",
        )
    if q == "scaling_shape":
        runs = tuple(_distgnn_cut(g, P, d) for d in ("0", "5") for P in (4, 16, 64))
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params={"check": "remote_share", "at": 16, "beyond": 64, "share": 0.25},
            compares="communication's share of the predicted epoch, cd-0 and cd-5, P = 4-64",
            assumed=f"{_DISTGNN_NOTE}; 'significant share' read as at least 25 % of the epoch "
            "at P = 64, growing from 16 to 64 (both modes)",
        )
    raise ValueError(f"{row.id}: no DistGNN recipe for {q}")


_PART = {"hp": "hypergraph", "gp": "metis", "rp": "random"}
_HG_SCHEME = (
    "p2p (the paper's point-to-point 1D); HP = gcntrain's Mt-KaHyPar, large_k preset without "
    "V-cycles (the paper: PaToH; standins.HG_OPTIONS), GP = METIS, RP = random rows"
)


def _p2p(g: str, P: int, part: str) -> Run:
    return Run(g, "p2p", P, "abci", HYPERGRAPH_RPN, HYPERGRAPH_MODEL, (), part, epochs=8)


def _one_d(g: str, P: int) -> Run:
    return Run(g, "1d", P, "abci", HYPERGRAPH_RPN, HYPERGRAPH_MODEL, epochs=8)


#: Table 2's volume / message columns -> the partition report's keys
_STATS = {
    "volume_avg_vs_rp": "volume_total",
    "volume_max_vs_rp": "volume_max_send",
    "messages_avg_vs_rp": "messages_total",
    "messages_max_vs_rp": "messages_max_send",
}


def _hypergraph(row: Row, have: list[str]) -> Recipe:
    q = row.quantity
    g = have[0]
    if q in _STATS:
        part = _PART[row.id.split("-")[-3]]
        return Recipe(
            row,
            "numeric",
            "stat",
            params={"graph": g, "method": part, "P": 512, "stat": _STATS[q], "base": "random"},
            compares=f"{_STATS[q]} of the {part} partition / the random partition's, P = 512 "
            "(rows of H per SpMM, sent)",
            assumed=_HG_SCHEME,
        )
    if q == "time_ratio_vs_rp":
        part = _PART[row.id.split("-")[-3]]
        return Recipe(
            row,
            "numeric",
            "ratio",
            (_p2p(g, 512, part), _p2p(g, 512, "random")),
            params={"measure": "epoch"},
            compares=f"predicted epoch with {part} / with random rows, p2p at P = 512",
            assumed=f"{_HG_SCHEME}; {HYPERGRAPH_ASSUMED}",
        )
    if q == "running_time":
        return Recipe(
            row,
            "numeric",
            "epoch",
            (_p2p(g, 512, "hypergraph"),),
            params={"epochs": 5},
            compares="5 predicted training epochs, p2p with hypergraph rows at P = 512 (s)",
            assumed=f"{_HG_SCHEME}; the running time of Table 2's five-epoch runs (the text "
            f"does not say per epoch); {HYPERGRAPH_ASSUMED}",
        )
    if q == "ratio":
        return _hypergraph_ratio(row, g)
    if q == "scaling_shape":
        ranks = (16, 128, 512)
        runs = tuple(_p2p(x, P, "hypergraph") for x in have for P in ranks)
        if "speedup-loss" in row.id:
            check = {"check": "stops", "at": 512}
            how = "pass: the predicted epoch at 512 no lower than at 128"
        else:
            check = {"check": "linear", "efficiency": 0.5}
            how = "pass: the epoch falls at every step and 16 -> 512 is at least half linear (16x)"
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params=check,
            compares="predicted epoch of HP p2p at P = 16, 128, 512 per graph",
            assumed=f"{_HG_SCHEME}; {HYPERGRAPH_ASSUMED}; {how}",
        )
    if q == "ordering":
        ranks = (16, 128, 512)
        runs = tuple(_p2p(x, P, part) for x in have for P in ranks for part in ("metis", "random"))
        return Recipe(
            row,
            "shape",
            "sweep",
            runs,
            params={"check": "slower"},
            compares="predicted epoch with METIS against random rows, P = 16, 128, 512",
            assumed=f"{_HG_SCHEME}; {HYPERGRAPH_ASSUMED}; pass: METIS slower at every P and graph",
        )
    raise ValueError(f"{row.id}: no hypergraph recipe for {q}")


_WHO = {"hp": "hypergraph", "gp": "metis", "rp": "random", "cagnet": None}


def _hp_runs(g: str, P: int, *who: str) -> tuple[Run, ...]:
    """The runs of the partitioners `who` (`_WHO`'s keys; "cagnet": gcntrain's 1d) on `g`
    at P ranks, in that order."""
    return tuple(_one_d(g, P) if w == "cagnet" else _p2p(g, P, _WHO[w]) for w in who)


def _hypergraph_ratio(row: Row, g: str) -> Recipe:
    """Fig. 4a: communication-time and total-time ratios among HP, GP, RP and CAGNET's 1D
    broadcasts (gcntrain's 1d) on coPapersDBLP."""
    assumed = f"{_HG_SCHEME}; CAGNET = gcntrain's 1d (broadcasts); {HYPERGRAPH_ASSUMED}"

    def ratio(P: int, a: str, b: str, measure: str, compares: str) -> Recipe:
        """`measure` ("comm" or "epoch") of partitioner `a` over that of `b` at P ranks."""
        return Recipe(
            row,
            "numeric",
            "ratio",
            _hp_runs(g, P, a, b),
            params={"measure": measure},
            compares=compares,
            assumed=assumed,
        )

    m = re.search(r"-(\w+)-over-(\w+)-comm-p(\d+)$", row.id)
    if m:
        a, b, P = m.group(1), m.group(2), int(m.group(3))
        return ratio(
            P,
            a,
            b,
            "comm",
            f"communication time of {a.upper()} / of {b.upper()} at P = {P} (the largest "
            "rank's communication seconds per epoch)",
        )
    m = re.search(r"-hp-vs-cagnet-total-p(\d+)$", row.id)
    if m:
        P = int(m.group(1))
        return ratio(
            P,
            "cagnet",
            "hp",
            "epoch",
            f"predicted epoch of CAGNET (1d) / of HP at P = {P} ('12x faster')",
        )
    m = re.search(r"-rp-slower-than-cagnet-p(\d+)$", row.id)
    if m:
        P = int(m.group(1))
        return Recipe(
            row,
            "shape",
            "sweep",
            _hp_runs(g, P, "rp", "cagnet"),
            params={"check": "greater"},
            compares=f"predicted epoch of RP against CAGNET (1d) at P = {P}",
            assumed=f"{assumed}; pass: RP slower",
        )
    raise ValueError(f"{row.id}: no Fig. 4a recipe")


def _plexus(row: Row, have: list[str]) -> Recipe:
    g = have[0]
    P = int(row.ranks)
    if row.quantity == "nnz_max_over_mean":
        kind = row.scheme.split(", ")[-1]
        if kind == "original":
            return not_priced(
                row,
                "ordering",
                "the original ordering of europe_osm is the paper's; the R-MAT stand-in is "
                "drawn randomly numbered and has no ordering of its own",
            )
        which = kind.split("-")[0]  # single | double
        return Recipe(
            row,
            "numeric",
            "stat",
            params={"graph": g, "method": "double-perm", "P": P, "stat": which, "grid": (8, 8)},
            compares=f"max/mean stored entries of the 8x8 blocks after the {which} permutation",
            assumed="uniform random permutations with seed 0 (gcntrain.partition.permute: "
            "single = rows and columns alike, double = independent), as Plexus' Table 3",
        )
    if row.quantity == "rows_with_halo_total":
        return Recipe(
            row,
            "numeric",
            "stat",
            params={"graph": g, "method": "metis", "P": P, "stat": "rows_with_halo"},
            compares=f"nodes + halo rows summed over the {P} METIS parts (each part's inner rows "
            "and the distinct remote rows it reads)",
            assumed="gcntrain's --partition metis (BNS-GCN's METIS settings are not stated)",
        )
    raise ValueError(f"{row.id}: no Plexus recipe for {row.quantity}")


_FAMILIES = {
    ("supergcn", "epoch_time"): _supergcn,
    ("supergcn", "speedup_range"): _supergcn,
    ("supergcn", "dominant_component"): _supergcn,
    ("supergcn", "scaling_shape"): _supergcn,
    ("supergcn", "speedup_shape"): _supergcn,
    **{
        ("distgnn", q): _distgnn
        for q in (
            "replication_factor",
            "epoch_time",
            "speedup_vs_1socket",
            "dominant_component",
            "scaling_shape",
        )
    },
    **{
        ("hypergraph", q): _hypergraph
        for q in (
            *_STATS,
            "time_ratio_vs_rp",
            "running_time",
            "ratio",
            "scaling_shape",
            "ordering",
        )
    },
    ("plexus", "nnz_max_over_mean"): _plexus,
    ("plexus", "rows_with_halo_total"): _plexus,
}
