"""A recipe's outcome: the predicted number (in the row's unit) and what dominates, or the
shape a sweep shows with its pass / fail against the paper's statement."""

from __future__ import annotations

from dataclasses import dataclass

from papercheck.price import Priced, Pricer
from papercheck.rows import Recipe, Run

#: the row's unit -> factor from the prediction's SI value
UNIT = {"s": 1.0, "ms": 1e3, "us": 1e6, "GB/s": 1e-9}


@dataclass
class Outcome:
    """predicted: in the row's unit (numeric rows); shape, verdict ("pass" / "fail" /
    "shown"): sweeps; dominant: what dominates the prediction."""

    predicted: float | None = None
    dominant: str = ""
    shape: str = ""
    verdict: str = ""


def outcome(rec: Recipe, pricer: Pricer) -> Outcome:
    """Price `rec` (its kind is "numeric" or "shape")."""
    how = rec.how
    if how == "alltoall":
        p = rec.params
        t, dom = pricer.alltoall(p["gb"], p["ranks"], p["rpn"])
        return Outcome(t * UNIT[rec.row.unit], dom)
    if how == "put":
        t, dom = pricer.put()
        return Outcome(t * UNIT[rec.row.unit], dom)
    if how == "injection":
        rate, dom = pricer.injection()
        return Outcome(rate * UNIT[rec.row.unit], dom)
    if how == "stat":
        return Outcome(pricer.stat(rec.params), "partition statistic")
    if how == "epoch":
        got = pricer.run(rec.runs[0])
        scale = rec.params.get("epochs", 1) * UNIT[rec.row.unit]
        return Outcome(got.epoch * scale, got.dominant())
    if how == "best":
        got = [(pricer.run(r), r) for r in rec.runs]
        best, run = min(got, key=lambda x: x[0].epoch)
        return Outcome(best.epoch * UNIT[rec.row.unit], f"at P={run.P}: {best.dominant()}")
    if how == "ratio":
        a, b = (pricer.run(r) for r in rec.runs)
        if rec.params["measure"] == "comm":
            value = a.comm_max / b.comm_max if b.comm_max > 0 else float("inf")
        else:
            value = a.epoch / b.epoch
        return Outcome(value, f"{a.dominant()} | {b.dominant()}")
    if how == "sweep":
        return _sweep(rec, pricer)
    raise ValueError(f"{rec.row.id}: unknown pricing {how!r}")


def _ms(x: Priced) -> str:
    return f"{x.epoch * 1e3:.3g}"


def _by_graph(rec: Recipe, pricer: Pricer) -> dict[str, list[tuple[Run, Priced]]]:
    out: dict[str, list] = {}
    for r in rec.runs:
        out.setdefault(r.graph, []).append((r, pricer.run(r)))
    return out


def _verdict(ok: bool) -> str:
    return "pass" if ok else "fail"


def _sweep(rec: Recipe, pricer: Pricer) -> Outcome:
    check = rec.params["check"]
    groups = _by_graph(rec, pricer)
    if check == "range":  # DistGNN cd-5 / SuperGCN per graph and P
        lo, hi = rec.params["low"], rec.params["high"]
        cells, speeds = [], []
        for g, got in groups.items():
            hier = {r.P: p for r, p in got if r.scheme == "hier"}
            cut = {r.P: p for r, p in got if r.scheme == "vertexcut"}
            s = [(P, cut[P].epoch / hier[P].epoch) for P in sorted(hier)]
            speeds += [x for _, x in s]
            cells.append(f"{g} " + ", ".join(f"P={P} {x:.2f}x" for P, x in s))
        ok = all(lo / 2 <= x <= 2 * hi for x in speeds)
        shape = f"speedups {min(speeds):.2f}-{max(speeds):.2f}x: " + "; ".join(cells)
        return Outcome(None, _dominant_last(groups), shape, _verdict(ok))
    if check == "dominant":
        small, large = rec.params["small"], rec.params["large"]
        cells, ok = [], True
        for g, got in groups.items():
            at = {r.P: p for r, p in got}
            ks = {P: max(at[P].parts, key=at[P].parts.get) for P in (small, large)}
            ok &= ks[small] == "spmm" and ks[large] in ("alltoall", "p2p", "allreduce")
            cells.append(
                f"{g} P={small}: {at[small].dominant()}; P={large}: {at[large].dominant()}"
            )
        return Outcome(None, "", "; ".join(cells), _verdict(ok))
    if check == "remote_vs_local":
        cells, ok = [], True
        for g, got in groups.items():
            for r, p in got:
                local = p.parts.get("spmm", 0.0)
                ok &= p.comm > local
                cells.append(f"{g} P={r.P} comm {p.comm * 1e3:.3g} / SpMM {local * 1e3:.3g} ms")
        return Outcome(None, "", "; ".join(cells), _verdict(ok))
    if check == "remote_share":
        at, beyond, share = rec.params["at"], rec.params["beyond"], rec.params["share"]
        cells, ok = [], True
        for g, got in groups.items():
            for d in sorted({dict(r.options)["delay"] for r, _ in got}):
                sh = {r.P: p.comm / p.epoch for r, p in got if dict(r.options)["delay"] == d}
                ok &= sh[beyond] >= share and sh[beyond] > sh[at]
                cells.append(
                    f"{g} cd-{d}: "
                    + ", ".join(f"P={P} {100 * x:.0f}%" for P, x in sorted(sh.items()))
                )
        return Outcome(None, "", "comm share " + "; ".join(cells), _verdict(ok))
    if check in ("linear", "stops"):
        cells, ok = [], True
        for g, got in groups.items():
            e = {r.P: p.epoch for r, p in got}
            Ps = sorted(e)
            if check == "linear":
                falls = all(e[b] < e[a] for a, b in zip(Ps, Ps[1:]))
                need = rec.params["efficiency"] * Ps[-1] / Ps[0]
                ok &= falls and e[Ps[0]] / e[Ps[-1]] >= need
            else:
                at = rec.params["at"]
                before = max(P for P in Ps if P < at)
                ok &= e[at] >= e[before]
            stop = next((b for a, b in zip(Ps, Ps[1:]) if e[b] >= e[a]), None)
            cells.append(
                f"{g} {e[Ps[0]] * 1e3:.3g}->{e[Ps[-1]] * 1e3:.3g} ms "
                f"({e[Ps[0]] / e[Ps[-1]]:.1f}x over {Ps[0]}-{Ps[-1]}"
                + (f", stops falling at P={stop})" if stop else ", falls throughout)")
            )
        return Outcome(None, _dominant_last(groups), "; ".join(cells), _verdict(ok))
    if check == "slower":
        cells, ok = [], True
        for g, got in groups.items():
            e = {(r.P, r.partition): p.epoch for r, p in got}
            Ps = sorted({P for P, _ in e})
            r = [e[(P, "metis")] / e[(P, "random")] for P in Ps]
            ok &= all(x > 1 for x in r)
            cells.append(f"{g} GP/RP " + ", ".join(f"P={P} {x:.2f}" for P, x in zip(Ps, r)))
        return Outcome(None, "", "; ".join(cells), _verdict(ok))
    if check == "greater":
        a, b = (pricer.run(r) for r in rec.runs)
        shape = f"{_ms(a)} ms against {_ms(b)} ms ({a.epoch / b.epoch:.2f}x)"
        return Outcome(None, f"{a.dominant()} | {b.dominant()}", shape, _verdict(a.epoch > b.epoch))
    raise ValueError(f"{rec.row.id}: unknown check {check!r}")


def _dominant_last(groups: dict) -> str:
    """What dominates the last run of each graph (its largest P)."""
    return "; ".join(f"{g} P={got[-1][0].P}: {got[-1][1].dominant()}" for g, got in groups.items())
