"""Option decorators shared by several commands."""

from __future__ import annotations

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
per_rank_option = click.option(
    "--per-rank",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the bytes/messages of every rank and phase (CSV; train: measured, "
    "simulate: planned, same format).",
)
seed_option = click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Random seed (all randomness derives from it).",
)
out_option = click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Output HDF5 file (written to a temporary name, then renamed).",
)


def threads_option(f):
    """--threads N: Numba threads for this process (default NUMBA_NUM_THREADS or all cores)."""

    def apply(ctx, param, value):
        if value is not None:
            from gcntrain.kernels.threads import set_threads

            set_threads(value)
        return value

    return click.option(
        "--threads",
        type=int,
        default=None,
        callback=apply,
        expose_value=False,
        help="Numba threads per process (default: NUMBA_NUM_THREADS, else all cores).",
    )(f)


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


#: (flags, click keyword arguments) of the model and training options of `train`/`simulate`
_MODEL_OPTIONS = [
    (("--epochs",), dict(type=int, default=200, show_default=True, help="Maximum epochs.")),
    (
        ("--dtype",),
        dict(
            type=click.Choice(["float32", "float64"]),
            default="float32",
            show_default=True,
            help="Floating-point type of features, weights, gradients.",
        ),
    ),
    (
        ("--model",),
        dict(
            type=click.Choice(["gcn", "sage"]),
            default="gcn",
            show_default=True,
            help="GCN (Kipf & Welling) or GraphSAGE.",
        ),
    ),
    (
        ("--aggregator",),
        dict(
            type=click.Choice(["mean", "gcn"]),
            default="mean",
            show_default=True,
            help="GraphSAGE aggregator.",
        ),
    ),
    (
        ("--hidden",),
        dict(
            multiple=True,
            metavar="W[,W...]",
            help="Hidden widths, repeatable or comma-separated  [default: 16].",
        ),
    ),
    (
        ("--dropout",),
        dict(
            type=float, default=0.5, show_default=True, help="Dropout rate on every layer's input."
        ),
    ),
    (("--lr",), dict(type=float, default=0.01, show_default=True, help="Learning rate.")),
    (
        ("--weight-decay",),
        dict(
            type=float,
            default=5e-4,
            show_default=True,
            help="L2 loss coefficient on the first layer's weights.",
        ),
    ),
    (("--weight-decay-all",), dict(is_flag=True, help="Apply --weight-decay to every layer.")),
    (
        ("--optimizer",),
        dict(
            type=click.Choice(["adam", "adamw"]),
            default="adam",
            show_default=True,
            help="Adam (TF1 form) or AdamW.",
        ),
    ),
    (
        ("--adamw-decay",),
        dict(type=float, default=0.01, show_default=True, help="AdamW's decoupled weight decay."),
    ),
    (
        ("--early-stopping",),
        dict(
            type=int,
            default=10,
            show_default=True,
            metavar="W",
            help="Stop when the val loss exceeds the mean of the previous W (0 = off).",
        ),
    ),
    (
        ("--patience",),
        dict(
            type=int,
            default=None,
            metavar="P",
            help="Instead: stop after P epochs without a lower val loss.",
        ),
    ),
    (("--bias/--no-bias",), dict(default=None, help="Layer bias [default: gcn no, sage yes].")),
    (
        ("--no-normalize-features", "no_normalize"),
        dict(is_flag=True, help="Do not row-normalise the features."),
    ),
    (
        ("--label-prop",),
        dict(
            type=float,
            default=0.0,
            show_default=True,
            metavar="RATE",
            help="Masked label propagation: each epoch embed the labels of this share of the "
            "training nodes into their input rows and train on the others (0 = off).",
        ),
    ),
    (
        ("--label-scale",),
        dict(
            type=float,
            default=0.01,
            show_default=True,
            help="Label propagation: the embedding enters as SCALE * E[label].",
        ),
    ),
    (
        ("--norm",),
        dict(
            type=click.Choice(["none", "layer"]),
            default="none",
            show_default=True,
            help="LayerNorm of every layer's input.",
        ),
    ),
    (
        ("--eval-every",),
        dict(type=int, default=1, show_default=True, help="Evaluate val/test every N epochs."),
    ),
]

#: names of the keyword arguments `model_options` adds
MODEL_KEYS = (
    "epochs",
    "seed",
    "dtype",
    "model",
    "aggregator",
    "hidden",
    "dropout",
    "lr",
    "weight_decay",
    "weight_decay_all",
    "optimizer",
    "adamw_decay",
    "early_stopping",
    "patience",
    "bias",
    "no_normalize",
    "eval_every",
    "label_prop",
    "label_scale",
    "norm",
)


def model_options(f):
    """The model and training options shared by `train` and `simulate` (plus --seed)."""
    for flags, kw in reversed(_MODEL_OPTIONS):
        f = click.option(*flags, **kw)(f)
    return seed_option(f)


def train_config(kw: dict):
    """A TrainConfig from the values of `model_options` (removed from `kw`)."""
    from gcntrain.model.trainer import TrainConfig

    v = {k: kw.pop(k) for k in MODEL_KEYS}
    return TrainConfig(
        model=v["model"],
        aggregator=v["aggregator"],
        hidden=parse_hidden(v["hidden"]),
        dropout=v["dropout"],
        lr=v["lr"],
        weight_decay=v["weight_decay"],
        weight_decay_all=v["weight_decay_all"],
        optimizer=v["optimizer"],
        adamw_decay=v["adamw_decay"],
        epochs=v["epochs"],
        early_stopping=v["early_stopping"],
        patience=v["patience"],
        seed=v["seed"],
        dtype=v["dtype"],
        normalize_features=not v["no_normalize"],
        eval_every=v["eval_every"],
        bias=v["bias"],
        label_prop=v["label_prop"],
        label_scale=v["label_scale"],
        norm=v["norm"],
    )


def scheme_options(f):
    """--scheme (from the registry), every scheme's declared options, and the partition."""
    from gcntrain.schemes import registry

    opts = [o for o in registry.all_options().values() if o.cli]
    for o in reversed(opts):
        f = click.option(
            *o.flags,
            o.name,
            type=o.type,
            default=o.default,
            show_default=o.default is not None,
            metavar=o.metavar,
            help=o.help,
        )(f)
    f = click.option(
        "--partition-seed",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Seed of --partition random|libra / --permute random.",
    )(f)
    f = click.option(
        "--permute",
        type=click.Choice(["none", "random", "double"]),
        default="none",
        show_default=True,
        help="Vertex permutation for load balance: random (= --partition random) or double "
        "(independent row and column orderings, for the schemes that declare it).",
    )(f)
    f = click.option(
        "--partition",
        default=None,
        metavar="block|random|metis|hypergraph|libra|PART.h5",
        help="Partition of the scheme's rows (metis, hypergraph: computed at start-up), or "
        "its edges for a vertex cut (libra, or a file from `gcntrain partition`) "
        "[default: block; a vertex cut: libra].",
    )(f)
    return click.option(
        "--scheme",
        type=click.Choice([registry.AUTO_NAME, *registry.names()]),
        default=registry.AUTO_NAME,
        show_default=True,
        help=f"Distribution scheme ({registry.AUTO_NAME}: {registry.AUTO[0]} on one rank; on "
        "several, train runs the exact configuration with the least predicted epoch time "
        "(`simulate --sweep`), simulate --sweep ranks every scheme).",
    )(f)


def scheme_args(kw: dict) -> tuple[str, dict, str | None, int]:
    """(scheme, its option values, partition, partition seed) from `scheme_options` values
    (removed from `kw`)."""
    from gcntrain.errors import InputError
    from gcntrain.schemes import registry

    declared = registry.all_options()
    options = {name: kw.pop(name) for name, o in declared.items() if o.cli}
    partition, permute = kw.pop("partition"), kw.pop("permute")
    if permute == "double":
        options["permute"] = "double"
    if permute == "random":
        if partition not in (None, "random"):
            raise InputError("--permute random conflicts with --partition " + partition)
        partition = "random"
    return kw.pop("scheme"), options, partition, kw.pop("partition_seed")


def width_options(f):
    """--features F, --classes C: the widths to plan a graph without node data with."""
    f = click.option(
        "--classes",
        "num_classes",
        type=click.IntRange(min=2),
        default=None,
        help="Classes to assume [default: the graph's; needed without labels].",
    )(f)
    return click.option(
        "--features",
        "num_features",
        type=click.IntRange(min=1),
        default=None,
        help="Feature width to assume [default: the graph's; needed without node features].",
    )(f)


def machine_options(f):
    """--machine PROFILE, --nodes N, --ranks-per-node k (the simulator's time model)."""
    f = click.option(
        "--ranks-per-node",
        type=click.IntRange(min=1),
        default=None,
        help="Ranks per node [default: the profile's; or --ranks / --nodes].",
    )(f)
    f = click.option(
        "--nodes",
        type=click.IntRange(min=1),
        default=None,
        help="Nodes the ranks run on [default: --ranks / --ranks-per-node].",
    )(f)
    return click.option(
        "--machine",
        default=None,
        metavar="PROFILE",
        help="Predict epoch times on this machine profile: fugaku, abci, local, or a TOML "
        "file (`gcntrain bench --out FILE` measures this machine).",
    )(f)


def _config_callback(ctx, param, value):
    from gcntrain.cli.config_file import apply_config

    return apply_config(ctx, param, value)


def attach_config_option(command: click.Command) -> None:
    """Give `command` (every subcommand of a group) the ``--config FILE.toml`` option: its
    table of the file sets the defaults of the command's parameters (docs/config.md).
    Idempotent; a command with no parameters, or one declaring its own ``--config``, is
    left alone."""
    from gcntrain.cli.config_file import PARAM_NAME

    if any("--config" in getattr(p, "opts", ()) for p in command.params):
        return
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            attach_config_option(sub)
        return
    if not command.params:
        return
    command.params.append(
        click.Option(
            ["--config", PARAM_NAME],
            type=click.Path(dir_okay=False),
            default=None,
            metavar="FILE.toml",
            is_eager=True,
            expose_value=False,
            callback=_config_callback,
            help="Take option defaults from this TOML file's table for this command "
            "(e.g. [train]); options on the command line override it.",
        )
    )
