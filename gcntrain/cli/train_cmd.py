"""`gcntrain train`: full-batch GCN / GraphSAGE training (serial), a thin wrapper around
`gcntrain.model.run.run_training`."""

from __future__ import annotations

import click

from gcntrain.cli.display import emit, info
from gcntrain.cli.options import json_option, seed_option
from gcntrain.comm.env import launcher_size
from gcntrain.errors import InputError

#: progress line every this many epochs (human mode)
PROGRESS_EVERY = 10


def parse_hidden(values: tuple[str, ...]) -> list[int]:
    """``--hidden 16 --hidden 32`` or ``--hidden 16,32`` -> [16, 32] (default [16])."""
    if not values:
        return [16]
    out: list[int] = []
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if not part:
                continue
            try:
                width = int(part)
            except ValueError:
                raise click.BadParameter(
                    f"not an integer width: {part!r}", param_hint="--hidden"
                ) from None
            if width < 1:
                raise click.BadParameter(f"widths must be >= 1, got {width}", param_hint="--hidden")
            out.append(width)
    return out


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def _progress(rec) -> None:
    if rec.epoch == 1 or rec.epoch % PROGRESS_EVERY == 0:
        info(
            f"epoch {rec.epoch:4d}  loss {rec.loss:.4f}  train_acc {rec.train_acc:.4f}  "
            f"val_loss {_fmt(rec.val_loss)}  val_acc {_fmt(rec.val_acc)}  "
            f"test_acc {_fmt(rec.test_acc)}  {rec.seconds * 1e3:.1f} ms"
        )


def _human(s: dict) -> str:
    rows = [
        ("graph", f"{s['graph']} ({s['num_nodes']} nodes, {s['num_edges']} stored edges)"),
        (
            "model",
            s["model"]
            + (f" ({s['aggregator']} aggregator)" if s["aggregator"] else "")
            + f", hidden {s['hidden']}, {s['dtype']}, seed {s['seed']}",
        ),
        ("epochs", f"{s['epochs']}" + (" (stopped early)" if s["stopped_early"] else "")),
        ("final loss", f"{s['final_loss']:.4f}"),
        ("train acc", f"{s['train_acc']:.4f}"),
        ("val loss / acc", f"{_fmt(s['val_loss'])} / {_fmt(s['val_acc'])}"),
        ("test acc", _fmt(s["test_acc"])),
        (
            "epoch time (median)",
            f"{s['epoch_seconds'] * 1e3:.2f} ms (aggregation "
            f"{s['t_aggregation'] * 1e3:.2f}, dense {s['t_dense'] * 1e3:.2f}, other "
            f"{s['t_other'] * 1e3:.2f} ms)",
        ),
        ("total", f"{s['total_seconds']:.2f} s"),
    ]
    if s.get("ranks", 1) > 1 or s.get("scheme") not in (None, "serial"):
        rows.append(
            (
                "scheme",
                f"{s['scheme']} on {s['ranks']} ranks"
                + (f", c = {s['replication']}" if s.get("replication", 1) > 1 else "")
                + f", partition {s.get('partition')}",
            )
        )
        rows.append(
            (
                "traffic / epoch",
                f"sent max {s['bytes_sent_max'] / 1e6:.3f} MB, mean "
                f"{s['bytes_sent_mean'] / 1e6:.3f} MB; messages max {s['messages_max']}",
            )
        )
        cs = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in s["comm_seconds_max"].items())
        rows.append(("comm time / epoch", f"{cs or 'none'} ms (max over ranks)"))
    if s.get("out"):
        rows.append(("outputs", s["out"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


@click.command("train")
@click.argument("graph", required=False, type=click.Path())
@click.option("--epochs", type=int, default=200, show_default=True, help="Maximum epochs.")
@seed_option
@click.option(
    "--dtype",
    type=click.Choice(["float32", "float64"]),
    default="float32",
    show_default=True,
    help="Floating-point type of features, weights, gradients.",
)
@click.option(
    "--model",
    type=click.Choice(["gcn", "sage"]),
    default="gcn",
    show_default=True,
    help="GCN (Kipf & Welling) or GraphSAGE.",
)
@click.option(
    "--aggregator",
    type=click.Choice(["mean", "gcn"]),
    default="mean",
    show_default=True,
    help="GraphSAGE aggregator.",
)
@click.option(
    "--hidden",
    multiple=True,
    metavar="W[,W...]",
    help="Hidden widths, repeatable or comma-separated  [default: 16].",
)
@click.option(
    "--dropout",
    type=float,
    default=0.5,
    show_default=True,
    help="Dropout rate on every layer's input.",
)
@click.option("--lr", type=float, default=0.01, show_default=True, help="Learning rate.")
@click.option(
    "--weight-decay",
    type=float,
    default=5e-4,
    show_default=True,
    help="L2 loss coefficient on the first layer's weights.",
)
@click.option("--weight-decay-all", is_flag=True, help="Apply --weight-decay to every layer.")
@click.option(
    "--optimizer",
    type=click.Choice(["adam", "adamw"]),
    default="adam",
    show_default=True,
    help="Adam (TF1 form) or AdamW.",
)
@click.option(
    "--adamw-decay",
    type=float,
    default=0.01,
    show_default=True,
    help="AdamW's decoupled weight decay.",
)
@click.option(
    "--early-stopping",
    type=int,
    default=10,
    show_default=True,
    metavar="W",
    help="Stop when the val loss exceeds the mean of the previous W (0 = off).",
)
@click.option(
    "--patience",
    type=int,
    default=None,
    metavar="P",
    help="Instead: stop after P epochs without a lower val loss.",
)
@click.option("--bias/--no-bias", default=None, help="Layer bias [default: gcn no, sage yes].")
@click.option(
    "--no-normalize-features",
    "no_normalize",
    is_flag=True,
    help="Do not row-normalise the features.",
)
@click.option(
    "--eval-every", type=int, default=1, show_default=True, help="Evaluate val/test every N epochs."
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for metrics.jsonl, config.json, weights.h5, predictions.h5.",
)
@click.option(
    "--scheme",
    type=click.Choice(["auto", "serial", "1d", "1.5d", "p2p"]),
    default="auto",
    show_default=True,
    help="Distribution scheme (auto: serial on one rank, p2p on several).",
)
@click.option(
    "--replication",
    "-c",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="1.5d: replication factor c (a P/c x c grid).",
)
@click.option(
    "--partition",
    default=None,
    metavar="block|random|PART.h5",
    help="Row partition of the 1D schemes [default: block].",
)
@click.option(
    "--permute",
    type=click.Choice(["none", "random"]),
    default="none",
    show_default=True,
    help="Random vertex permutation for load balance (= --partition random).",
)
@click.option(
    "--partition-seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of --partition random / --permute random.",
)
@json_option
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Numba threads per rank [default: NUMBA_NUM_THREADS, else cores / ranks per node].",
)
@click.option("--quiet", is_flag=True, help="No per-epoch progress lines.")
def train(
    graph,
    epochs,
    seed,
    dtype,
    model,
    aggregator,
    hidden,
    dropout,
    lr,
    weight_decay,
    weight_decay_all,
    optimizer,
    adamw_decay,
    early_stopping,
    patience,
    bias,
    no_normalize,
    eval_every,
    out_dir,
    scheme,
    replication,
    partition,
    permute,
    partition_seed,
    as_json,
    threads,
    quiet,
):
    """Train on GRAPH (an HDF5 graph; default: the embedded SBM dataset), full-batch.

    The defaults are the reference GCN hyperparameters (2 layers, 16 hidden units,
    dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, at most 200 epochs,
    early-stopping window 10).
    """
    from gcntrain.model.run import run_training
    from gcntrain.model.trainer import TrainConfig

    config = TrainConfig(
        model=model,
        aggregator=aggregator,
        hidden=parse_hidden(hidden),
        dropout=dropout,
        lr=lr,
        weight_decay=weight_decay,
        weight_decay_all=weight_decay_all,
        optimizer=optimizer,
        adamw_decay=adamw_decay,
        epochs=epochs,
        early_stopping=early_stopping,
        patience=patience,
        seed=seed,
        dtype=dtype,
        normalize_features=not no_normalize,
        eval_every=eval_every,
        bias=bias,
    )
    callback = None if (quiet or as_json) else _progress
    if permute == "random":
        if partition not in (None, "random"):
            raise InputError("--permute random conflicts with --partition " + partition)
        partition = "random"
    ranks = launcher_size()
    if scheme == "auto":
        scheme = "p2p" if ranks > 1 else "serial"
    if scheme == "serial" and ranks > 1:
        raise InputError(
            f"--scheme serial under {ranks} ranks would train the whole graph on "
            "every rank; choose 1d, 1.5d or p2p"
        )
    try:
        if scheme == "serial":
            if partition is not None or replication != 1:
                raise InputError("--partition/--replication need a distributed --scheme")
            if threads is not None:
                from gcntrain.kernels.threads import set_threads

                set_threads(threads)
            _, summary = run_training(graph, config, out_dir=out_dir, callback=callback)
            summary.update(scheme="serial", ranks=1)
        else:
            from gcntrain.schemes.run import run_distributed_training

            _, summary = run_distributed_training(
                graph,
                config,
                scheme,
                replication,
                partition,
                partition_seed,
                out_dir=out_dir,
                callback=callback,
                threads=threads,
            )
    except FloatingPointError as e:
        raise InputError(f"training diverged ({e}); try a lower --lr") from None
    emit(summary, as_json, _human)
