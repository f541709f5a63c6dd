"""The data of `gcntrain plot`'s figures, from plans and the time model (no drawing here):
the predicted epoch breakdown of several schemes, predicted strong scaling over P, and
predicted vs measured epoch time of finished `train -o DIR` runs."""

from __future__ import annotations

import json
import statistics
from dataclasses import fields
from pathlib import Path

from gcntrain import status
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes.loading import DEFAULT_SOURCE
from gcntrain.simulate.autogrid import reusable_source
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import placement, time_summary


def predicted(source, config, scheme, ranks, machine, options=None, partition=None, **kw):
    """`time_summary` of one planned run (`kw`: nodes, ranks_per_node, num_features,
    num_classes, partition_seed, numberings)."""
    return _planned(source, config, scheme, ranks, machine, options, partition, **kw)[0]


def _planned(source, config, scheme, ranks, machine, options=None, partition=None, **kw):
    """(`time_summary`, the configuration the plan ran) of one planned run; the
    configuration is `configuration`'s dict."""
    place = placement(machine, ranks, kw.pop("nodes", None), kw.pop("ranks_per_node", None))
    seed = kw.pop("partition_seed", 0)
    widths = {k: kw.pop(k, None) for k in ("num_features", "num_classes")}
    target = PlanTarget(source, config, scheme, ranks, options, partition, seed, **widths)
    sim = plan_training(target, **kw)
    return time_summary(sim, config, place), configuration(sim, ranks, partition)


def configuration(sim, ranks: int, partition) -> dict:
    """What names a planned configuration in a figure: ``options``, the scheme options the
    configuration search varies (`Scheme.sweep_options`: a grid, a replication, a delay...)
    with the values the plan used, and ``partition``, the partitioner of its rows (the
    scheme's default where none was given)."""
    swept = {k for variant in sim.scheme.sweep_options(ranks) for k in variant}
    options = {k: v for k, v in sim.config.to_dict().items() if k in swept}
    part = partition if isinstance(partition, str) else None
    return {"options": options, "partition": part or sim.scheme.default_partition}


def breakdown(source, config, ranks, machine, schemes, **kw) -> list[dict]:
    """Per scheme (default options): compute parts, communication parts and wait of the
    predicted critical-path epoch, seconds; a scheme that cannot run is listed with
    ``error``.  The graph is read and each partition computed once."""
    source, kw["support"] = reusable_source(source, config)
    kw.setdefault("numberings", {})
    kw.setdefault("derived", {})  # the model's schedule, the supports: built once, as a sweep
    out = []
    for k, name in enumerate(schemes):
        try:
            with status.phase(f"planning {name} on {ranks} ranks ({k}/{len(schemes)} done)"):
                t, conf = _planned(source, config, name, ranks, machine, **dict(kw))
        except InputError as e:
            out.append({"scheme": name, "error": str(e)})
            continue
        b = t["breakdown"]
        out.append(
            {
                "scheme": name,
                **conf,
                "epoch_seconds": t["epoch_seconds"],
                "compute_parts": b["compute_parts"],
                "comm_parts": b["comm_parts"],
                "wait": b["wait"],
            }
        )
    if all("error" in r for r in out):
        raise InputError(out[0]["error"] if out else "no scheme to draw")
    return out


def scaling(source, config, ranks_list, machine, schemes, **kw) -> tuple[dict, dict]:
    """(points, configurations): points {scheme: [[P, predicted epoch seconds, or None where
    the scheme refuses P], ...]} and configurations {scheme: [[P, `configuration` dict, or
    None where refused], ...]}; an error when no scheme runs at any P (the first refusal's
    reason)."""
    source, kw["support"] = reusable_source(source, config)
    kw.setdefault("numberings", {})
    kw.setdefault("derived", {})  # the model's schedule, the supports: built once, as a sweep
    out: dict[str, list] = {}
    confs: dict[str, list] = {}
    first = None
    where = ", ".join(str(int(p)) for p in ranks_list)
    with status.phase(f"planning {len(schemes)} schemes on {where} ranks") as running:
        for k, name in enumerate(schemes):
            running.step(k, len(schemes))
            pts, cs = [], []
            for P in ranks_list:
                try:
                    t, conf = _planned(source, config, name, int(P), machine, **dict(kw))
                    pts.append([int(P), t["epoch_seconds"]])
                    cs.append([int(P), conf])
                except InputError as e:
                    first = first or e
                    pts.append([int(P), None])
                    cs.append([int(P), None])
            out[name] = pts
            confs[name] = cs
    if first is not None and all(t is None for pts in out.values() for _, t in pts):
        raise first
    return out, confs


def _run_config(d: dict) -> TrainConfig:
    names = {f.name for f in fields(TrainConfig)}
    vals = {k: v for k, v in d.items() if k in names}
    if "hidden" in vals:
        vals["hidden"] = tuple(vals["hidden"])
    return TrainConfig(**vals)


def measured(run_dir, machine, nodes=None, ranks_per_node=None) -> dict:
    """A finished run's measured median epoch time (metrics.jsonl) beside the prediction for
    the same graph, scheme, options, partition and epochs (config.json); ranks on one node
    unless `nodes` / `ranks_per_node` say otherwise."""
    d = Path(run_dir)
    try:
        cfg = json.loads((d / "config.json").read_text())
        recs = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines() if x]
    except (OSError, ValueError) as e:
        raise InputError(f"not a finished `gcntrain train -o` directory ({e})", str(d)) from None
    if not recs:
        raise InputError("metrics.jsonl has no epochs", str(d))
    config = _run_config(cfg)
    config.epochs = len(recs)
    P = int(cfg["ranks"])
    source = None if cfg["source"] == DEFAULT_SOURCE else cfg["source"]
    if ranks_per_node is None and nodes is None:
        ranks_per_node = P
    partition = cfg["partition"] if cfg["partition"] not in ("store", "vector") else None
    t, conf = _planned(
        source,
        config,
        cfg["scheme"],
        P,
        machine,
        cfg.get("scheme_options") or {},
        partition,
        nodes=nodes,
        ranks_per_node=ranks_per_node,
    )
    got = statistics.median(r["seconds"] for r in recs)
    return {
        "run": str(d),
        "scheme": cfg["scheme"],
        "ranks": P,
        **conf,
        "partition": cfg["partition"] or conf["partition"],
        "measured_epoch_seconds": got,
        "predicted_epoch_seconds": t["epoch_seconds"],
        "error_percent": 100.0 * (t["epoch_seconds"] - got) / got,
    }
