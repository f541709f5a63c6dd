"""The lines ``check_papers.py`` prints: one block per row and a summary per half."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from papercheck.evaluate import Outcome
from papercheck.rows import REASONS, Recipe

#: a priced number is "within F x" when paper / F <= predicted <= paper * F
FACTORS = (2.0, 4.0)
#: the held-out half's acceptance (issue 49): this share of the priced numeric rows within
#: 2x, none beyond 4x
ACCEPT_SHARE = 0.8


def fmt(x: float) -> str:
    """A number with four significant digits (what the ratio is checked against)."""
    return f"{x:.4g}"


def ratio_verdict(ratio: float) -> str:
    for f in FACTORS:
        if 1.0 / f <= ratio <= f:
            return f"within {f:g}x"
    return f"BEYOND {FACTORS[-1]:g}x"


def runs_text(rec: Recipe) -> str:
    """The planned configurations of a recipe, those differing only in graph and P merged:
    "p2p --partition hypergraph, 40/node on abci, GCN 50-50-50: flickr, com-youtube at P =
    16, 64, 256, 512"."""
    groups: dict[tuple, tuple[list, list]] = {}
    for r in rec.runs:
        opts = "".join(f" {k}={v}" for k, v in r.options)
        part = f" --partition {r.partition}" if r.partition else ""
        where = f"{r.rpn}/node on {r.profile}"
        if r.socket:
            where = f"one socket of a node of {r.profile}"
        key = (f"{r.scheme}{opts}{part}", where, r.model.describe())
        graphs, ranks = groups.setdefault(key, ([], []))
        if r.graph not in graphs:
            graphs.append(r.graph)
        if r.P not in ranks and not r.socket:
            ranks.append(r.P)
    out = []
    for (what, where, model), (graphs, ranks) in groups.items():
        at = f" at P = {', '.join(str(p) for p in sorted(ranks))}" if ranks else ""
        out.append(f"{what}, {where}, {model}: {', '.join(graphs)}{at}")
    return " | ".join(out)


def how_text(rec: Recipe) -> list[str]:
    """What the row compares and with which configuration (``--dry`` and every priced row)."""
    lines = [f"compares: {rec.compares}"]
    if rec.runs:
        lines.append(f"runs: {runs_text(rec)}")
    elif rec.how == "stat":
        p = rec.params
        base = f" against {p['base']}" if p.get("base") else ""
        lines.append(f"partition: {p['graph']} by {p['method']} into {p['P']} parts{base}")
    if rec.assumed:
        lines.append(f"assumed: {rec.assumed}")
    return lines


def paper_text(rec: Recipe) -> str:
    r = rec.row
    unit = "" if r.unit in ("-", "") else f" {r.unit}"
    approx = f" ({r.approx})" if r.approx not in ("no", "qualitative") else ""
    return f"{r.value}{unit}{approx}"


@dataclass
class Tally:
    """A half's counts."""

    rows: int = 0
    priced: int = 0
    within: Counter = field(default_factory=Counter)
    beyond: int = 0
    shapes: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    would: Counter = field(default_factory=Counter)  # --dry: rows that would be priced
    #: the structure-bound rows (`papercheck.rows.structure_bound`), counted apart: the
    #: numeric ones' "priced", "within2", "within4", "beyond" and the shapes' verdicts
    bound: Counter = field(default_factory=Counter)

    def accepted(self) -> bool:
        """The held-out acceptance: >= 80 % of the priced numeric rows within 2x, none
        beyond 4x."""
        return self.priced > 0 and (
            self.within[FACTORS[0]] >= ACCEPT_SHARE * self.priced and self.beyond == 0
        )

    def lines(self, half: str) -> list[str]:
        w2, w4 = self.within[FACTORS[0]], self.within[FACTORS[1]]
        if self.would:
            out = [
                f"{half}: {self.rows} rows; would price {self.would['numeric']} numeric, "
                f"{self.would['shape']} shapes ({self.would['bound']} of them structure-bound, "
                "counted apart)"
            ]
        else:
            out = [
                f"{half}: {self.rows} rows; priced {self.priced} numeric: within 2x {w2}, "
                f"within 4x {w4}, beyond 4x {self.beyond}; shapes: "
                + (", ".join(f"{k} {v}" for k, v in sorted(self.shapes.items())) or "none")
            ]
        b = self.bound
        if b:
            shapes = ", ".join(f"{k} {b[k]}" for k in ("pass", "fail", "shown") if b[k])
            out.append(
                f"  structure-bound, counted apart: priced {b['priced']} numeric: within 2x "
                f"{b['within2']}, within 4x {b['within4']}, beyond 4x {b['beyond']}; shapes: "
                + (shapes or "none")
            )
        nots = sum(self.reasons.values())
        why = ", ".join(f"{REASONS.get(k, k)} {v}" for k, v in self.reasons.most_common())
        out.append(f"  not priced {nots}" + (f": {why}" if why else ""))
        if self.priced:
            out.append(
                f"  acceptance (>= {ACCEPT_SHARE:.0%} within 2x, none beyond 4x): "
                + ("met" if self.accepted() else "not met")
                + f" ({w2}/{self.priced} = {w2 / self.priced:.0%} within 2x)"
            )
        if self.priced and b["priced"]:
            n, w = self.priced + b["priced"], w2 + b["within2"]
            out.append(
                f"  with the structure-bound rows: {w}/{n} = {w / n:.0%} within 2x, "
                f"{self.beyond + b['beyond']} beyond 4x"
            )
        return out


def block(rec: Recipe, out: Outcome | None, dry: bool, tally: Tally) -> list[str]:
    """The lines of one row (and its count in `tally`)."""
    r = rec.row
    head = f"{r.id}  [{r.quantity}]"
    tally.rows += 1
    if rec.kind == "none":
        tally.reasons[rec.reason_key] += 1
        return [f"{head}  not priced: {rec.reason}"]
    if dry or out is None:
        tally.would[rec.kind] += 1
        tally.would["bound"] += int(bool(rec.bound))
        apart = [f"    counted apart: {rec.bound}"] if rec.bound else []
        return [f"{head}  would price ({rec.kind})", *apart, *(f"    {x}" for x in how_text(rec))]
    if rec.kind == "shape":
        (tally.bound if rec.bound else tally.shapes)[out.verdict] += 1
        lines = [
            f"{head}  {out.verdict.upper()}",
            f"    paper: {paper_text(rec)}",
            f"    found: {out.shape}",
        ]
    else:
        paper = rec.paper_value
        ratio = out.predicted / paper
        verdict = ratio_verdict(ratio)
        within = [int(1.0 / f <= ratio <= f) for f in FACTORS]
        beyond = int(not 1.0 / FACTORS[-1] <= ratio <= FACTORS[-1])
        if rec.bound:
            tally.bound.update(priced=1, within2=within[0], within4=within[1], beyond=beyond)
        else:
            tally.priced += 1
            for f, w in zip(FACTORS, within):
                tally.within[f] += w
            tally.beyond += beyond
        lines = [
            f"{head}  paper {paper_text(rec)}  predicted {fmt(out.predicted)}  "
            f"ratio {ratio:.3g}  {verdict}"
        ]
    if rec.bound:
        lines.append(f"    counted apart: {rec.bound}")
    if out.dominant:
        lines.append(f"    dominates: {out.dominant}")
    return lines + [f"    {x}" for x in how_text(rec)]


def failed(rec: Recipe, err: Exception, tally: Tally) -> list[str]:
    """A row whose pricing raised: counted as not priced ("failed")."""
    tally.rows += 1
    tally.reasons["failed"] += 1
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    return [f"{rec.row.id}  [{rec.row.quantity}]  not priced: failed ({msg})"]
