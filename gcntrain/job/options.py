"""The options of a training or planning job, declared once as data.

`gcntrain train`, `gcntrain simulate` and `gcntrain plot` build their click options from
these declarations (`gcntrain.cli.options.apply`), and `gcntrain.api` takes its keywords,
defaults and value checks from the same `click.Option` objects (`params`), so the command
line and the Python face cannot drift apart.  Each group is a list of `Opt` in the order
``--help`` shows them.  `train_config` and `scheme_args` turn the values into a
`TrainConfig` and the scheme's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from gcntrain.errors import InputError


@dataclass(frozen=True)
class Opt:
    """One option: click's declaration (`decls`: flags, then an optional parameter name;
    `kw`: click's keyword arguments) and whether the Python API takes it (`api`; the output
    format options are the command line's own)."""

    decls: tuple[str, ...]
    kw: dict = field(default_factory=dict)
    api: bool = True

    def param(self) -> click.Option:
        """A fresh `click.Option` of this declaration."""
        return click.Option(list(self.decls), **self.kw)

    @property
    def name(self) -> str:
        """The parameter's name (the keyword the command's callback receives)."""
        return self.param().name


def params(options: list[Opt], api_only: bool = False) -> list[click.Option]:
    """Fresh click options of `options` (those the API takes, with `api_only`)."""
    return [o.param() for o in options if o.api or not api_only]


def names(options: list[Opt]) -> tuple[str, ...]:
    """The parameter names of `options`."""
    return tuple(o.name for o in options)


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


#: how a value shows in a written configuration where the click value is not what the run
#: uses: ``--hidden`` given nowhere is ``()`` to click and [16] to the run
SHOWN = {"hidden": lambda v: tuple(str(w) for w in parse_hidden(v))}

#: the seed of all randomness (also `generate`'s and `partition`'s)
SEED = Opt(
    ("--seed",),
    dict(
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Random seed (all randomness derives from it).",
    ),
)

#: the model and training options of `train`, `simulate` and `plot`
MODEL = [
    SEED,
    Opt(("--epochs",), dict(type=int, default=200, show_default=True, help="Maximum epochs.")),
    Opt(
        ("--dtype",),
        dict(
            type=click.Choice(["float32", "float64"]),
            default="float32",
            show_default=True,
            help="Floating-point type of features, weights, gradients.",
        ),
    ),
    Opt(
        ("--model",),
        dict(
            type=click.Choice(["gcn", "sage"]),
            default="gcn",
            show_default=True,
            help="GCN (Kipf & Welling) or GraphSAGE.",
        ),
    ),
    Opt(
        ("--aggregator",),
        dict(
            type=click.Choice(["mean", "gcn"]),
            default="mean",
            show_default=True,
            help="GraphSAGE aggregator.",
        ),
    ),
    Opt(
        ("--hidden",),
        dict(
            multiple=True,
            metavar="W[,W...]",
            help="Hidden widths, repeatable or comma-separated  [default: 16].",
        ),
    ),
    Opt(
        ("--dropout",),
        dict(
            type=float, default=0.5, show_default=True, help="Dropout rate on every layer's input."
        ),
    ),
    Opt(("--lr",), dict(type=float, default=0.01, show_default=True, help="Learning rate.")),
    Opt(
        ("--weight-decay",),
        dict(
            type=float,
            default=5e-4,
            show_default=True,
            help="L2 loss coefficient on the first layer's weights.",
        ),
    ),
    Opt(("--weight-decay-all",), dict(is_flag=True, help="Apply --weight-decay to every layer.")),
    Opt(
        ("--optimizer",),
        dict(
            type=click.Choice(["adam", "adamw"]),
            default="adam",
            show_default=True,
            help="Adam (TF1 form) or AdamW.",
        ),
    ),
    Opt(
        ("--adamw-decay",),
        dict(type=float, default=0.01, show_default=True, help="AdamW's decoupled weight decay."),
    ),
    Opt(
        ("--early-stopping",),
        dict(
            type=int,
            default=10,
            show_default=True,
            metavar="W",
            help="Stop when the val loss exceeds the mean of the previous W (0 = off).",
        ),
    ),
    Opt(
        ("--patience",),
        dict(
            type=int,
            default=None,
            metavar="P",
            help="Instead: stop after P epochs without a lower val loss.",
        ),
    ),
    Opt(
        ("--keep-best",),
        dict(
            is_flag=True,
            help="End with the weights of the best epoch (lowest val loss), not the last.",
        ),
    ),
    Opt(
        ("--eval-cache",),
        dict(
            is_flag=True,
            help="Evaluate the first layer from S @ X computed once (one process; holds a "
            "block as wide as the features; evaluation losses change in the last digits).",
        ),
    ),
    Opt(("--bias/--no-bias",), dict(default=None, help="Layer bias [default: gcn no, sage yes].")),
    Opt(
        ("--no-normalize-features", "no_normalize"),
        dict(is_flag=True, help="Do not row-normalise the features."),
    ),
    Opt(
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
    Opt(
        ("--label-scale",),
        dict(
            type=float,
            default=0.01,
            show_default=True,
            help="Label propagation: the embedding enters as SCALE * E[label].",
        ),
    ),
    Opt(
        ("--norm",),
        dict(
            type=click.Choice(["none", "layer", "batch"]),
            default="none",
            show_default=True,
            help="Normalise every layer's input: LayerNorm (per row) or BatchNorm (per "
            "column, statistics over all nodes of the graph, on every scheme).",
        ),
    ),
    Opt(
        ("--eval-every",),
        dict(type=int, default=1, show_default=True, help="Evaluate val/test every N epochs."),
    ),
]

#: names of the keyword arguments of `MODEL`
MODEL_KEYS = names(MODEL)


#: `ctx.meta` key under which the ``--config`` callback records the file it read
CONFIG_FILE_META = "gcntrain.config_file"


def named_value_error(e) -> InputError:
    """The line of a bad `TrainConfig` value (`gcntrain.model.trainer.ConfigValueError`)
    naming its option and where the value came from: ``--lr must be ...`` for the command
    line, ``--lr (lr in run.toml) must be ...`` for a ``--config`` file; `e` itself outside
    a command or for a value with no option."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    param = None
    if ctx is not None:
        param = next((p for p in ctx.command.params if p.name == e.field), None)
    flag = next((o for o in getattr(param, "opts", ()) if o.startswith("--")), None)
    if flag is None:
        return e
    source = ctx.get_parameter_source(e.field)
    if source is ParameterSource.COMMANDLINE:
        return InputError(f"{flag} {e.rest}")
    if source is ParameterSource.DEFAULT_MAP:
        file = ctx.meta.get(CONFIG_FILE_META)
        where = f"{flag[2:]} in {file}" if file else f"{flag[2:]} in the configuration"
        return InputError(f"{flag} ({where}) {e.rest}")
    return e


def train_config(kw: dict):
    """A TrainConfig from the values of `model_options` (removed from `kw`), validated: a bad
    value is one `InputError` naming its option and source (`named_value_error`)."""
    from gcntrain.model.trainer import ConfigValueError, TrainConfig

    v = {k: kw.pop(k) for k in MODEL_KEYS}
    config = TrainConfig(
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
        keep_best=v["keep_best"],
        eval_cache=v["eval_cache"],
    )
    try:
        return config.validate()
    except ConfigValueError as e:
        raise named_value_error(e) from None


def scheme_group() -> list[Opt]:
    """--scheme (from the registry), the partition options and every scheme's declared
    options (`SchemeOption` with ``cli``)."""
    from gcntrain.schemes import registry

    declared = [
        Opt(
            (*o.flags, o.name),
            dict(
                type=o.type,
                default=o.default,
                show_default=o.default is not None,
                metavar=o.metavar,
                help=o.help,
            ),
        )
        for o in registry.all_options().values()
        if o.cli
    ]
    return [
        Opt(
            ("--scheme",),
            dict(
                type=click.Choice([registry.AUTO_NAME, *registry.names()]),
                default=registry.AUTO_NAME,
                show_default=True,
                help=f"Distribution scheme ({registry.AUTO_NAME}: {registry.AUTO[0]} on one "
                "rank; on several, train runs the exact configuration with the least predicted "
                "epoch time (`simulate --sweep`), simulate --sweep ranks every scheme).",
            ),
        ),
        Opt(
            ("--partition",),
            dict(
                default=None,
                metavar="block|random|metis|hypergraph|libra|PART.h5",
                help="Partition of the scheme's rows (metis, hypergraph: computed at start-up), "
                "or its edges for a vertex cut (libra, or a file from `gcntrain partition`) "
                "[default: block; a vertex cut: libra].",
            ),
        ),
        Opt(
            ("--permute",),
            dict(
                type=click.Choice(["none", "random", "double"]),
                default="none",
                show_default=True,
                help="Vertex permutation for load balance: random (= --partition random) or "
                "double (independent row and column orderings, for the schemes that declare "
                "it).",
            ),
        ),
        Opt(
            ("--partition-seed",),
            dict(
                type=click.IntRange(min=0),
                default=0,
                show_default=True,
                help="Seed of --partition random|libra / --permute random.",
            ),
        ),
        *declared,
    ]


def scheme_args(kw: dict) -> tuple[str, dict, str | None, int]:
    """(scheme, its option values, partition, partition seed) from `scheme_group` values
    (removed from `kw`)."""
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


def job_spec(source, kw: dict, **placement):
    """The `gcntrain.job.spec.JobSpec` of a command's values: the training configuration
    (`train_config`) and the scheme's arguments (`scheme_args`) taken from `kw`, on
    `source`, with the `placement` keywords (machine, ranks, threads, ...) as given."""
    from gcntrain.job.spec import JobSpec

    config = train_config(kw)
    scheme, options, partition, partition_seed = scheme_args(kw)
    if "device" in kw:  # train's --device, simulate's
        placement.setdefault("device", kw.pop("device"))
    return JobSpec(source, config, scheme, options, partition, partition_seed, **placement)


#: --features F, --classes C: the widths to plan a graph without node data with
WIDTHS = [
    Opt(
        ("--features", "num_features"),
        dict(
            type=click.IntRange(min=1),
            default=None,
            help="Feature width to assume [default: the graph's; needed without node features].",
        ),
    ),
    Opt(
        ("--classes", "num_classes"),
        dict(
            type=click.IntRange(min=2),
            default=None,
            help="Classes to assume [default: the graph's; needed without labels].",
        ),
    ),
]


class NodeShape(click.ParamType):
    """A torus job's box ``AxBxC`` (three positive integers; a tuple or list from the
    API), as ``#PJM -L node=AxBxC`` requests it."""

    name = "AxBxC"

    def convert(self, value, param, ctx):
        parts = value if isinstance(value, (tuple, list)) else str(value).lower().split("x")
        try:
            sides = tuple(int(x) for x in parts)
        except (TypeError, ValueError):
            sides = ()
        if len(sides) != 3 or min(sides) < 1:
            self.fail(f"{value!r} is not three positive integers AxBxC, e.g. 8x9x8", param, ctx)
        return sides


#: --machine PROFILE, --nodes N, --ranks-per-node k, --node-shape (the simulator's time model)
MACHINE = [
    Opt(
        ("--machine",),
        dict(
            default=None,
            metavar="PROFILE",
            help="Predict epoch times on this machine profile: fugaku, abci, local, or a TOML "
            "file (`gcntrain bench --out FILE` measures this machine).",
        ),
    ),
    Opt(
        ("--nodes",),
        dict(
            type=click.IntRange(min=1),
            default=None,
            help="Nodes the ranks run on [default: --ranks / --ranks-per-node].",
        ),
    ),
    Opt(
        ("--ranks-per-node",),
        dict(
            type=click.IntRange(min=1),
            default=None,
            help="Ranks per node [default: the profile's; or --ranks / --nodes].",
        ),
    ),
    Opt(
        ("--node-shape",),
        dict(
            type=NodeShape(),
            default=None,
            help="A torus profile's job box, as requested (`#PJM -L node=AxBxC`) [default: "
            "the profile's rule for the node count].",
        ),
    ),
]

JSON = Opt(("--json", "as_json"), dict(is_flag=True, help="Print one JSON object."), api=False)
PER_RANK = Opt(
    ("--per-rank",),
    dict(
        type=click.Path(dir_okay=False),
        default=None,
        metavar="FILE",
        help="Write the bytes/messages of every rank and phase (CSV; train: measured, "
        "simulate: planned, same format).",
    ),
)

# -- train --------------------------------------------------------------------------------
OUT_DIR = Opt(
    ("-o", "--out", "out_dir"),
    dict(
        type=click.Path(file_okay=False),
        default=None,
        help="Directory for metrics.jsonl, config.json, weights.h5, predictions.h5.",
    ),
)

#: the options of `train` after the scheme's
TRAIN_RUN = [
    JSON,
    PER_RANK,
    Opt(
        ("--threads",),
        dict(
            type=click.IntRange(min=1),
            default=None,
            help="Numba threads per rank [default: NUMBA_NUM_THREADS, else cores / ranks per "
            "node].",
        ),
    ),
    Opt(
        ("--device",),
        dict(
            type=click.Choice(["cpu", "gpu", "auto"]),
            default="cpu",
            show_default=True,
            help="Compute device: cpu; gpu (one per rank, CuPy: the `gpu` extra); auto: gpu "
            "where CuPy finds a usable one, else cpu, saying which (docs/gpu.md).",
        ),
    ),
    Opt(
        ("--machine",),
        dict(
            default=None,
            metavar="NAME|PROFILE.toml",
            help="Machine profile the --scheme auto recommender prices configurations with "
            "[default: local; calibrate yours with `gcntrain bench`].",
        ),
    ),
    Opt(
        ("--checkpoint", "checkpoint"),
        dict(
            type=click.Path(file_okay=False),
            default=None,
            metavar="DIR",
            help="Save the training state (every rank's shard) in DIR every --checkpoint-every "
            "epochs and at the last; the previous checkpoint is kept until the new one is "
            "complete.",
        ),
    ),
    Opt(
        ("--checkpoint-every",),
        dict(
            type=click.IntRange(min=1),
            default=10,
            show_default=True,
            metavar="K",
            help="Epochs between checkpoints.",
        ),
    ),
    Opt(
        ("--resume",),
        dict(
            type=click.Path(file_okay=False),
            default=None,
            metavar="DIR",
            help="Continue from the newest checkpoint in DIR (same graph, scheme, ranks and "
            "settings; --epochs may grow): the result equals the uninterrupted run's bit for "
            "bit.",
        ),
    ),
    Opt(
        ("--max-memory",),
        dict(
            default=None,
            metavar="SIZE",
            help="Memory one rank may use (e.g. 8G); a rank whose estimated share is larger is "
            "refused before loading [default: the node's available memory / its ranks].",
        ),
    ),
    Opt(
        ("--quiet",),
        dict(
            is_flag=True,
            help="No progress on stderr (per-epoch lines with an ETA, compiling, notes; shown "
            "with --json too, whose stdout stays one JSON object).",
        ),
    ),
]


def train_options() -> list[Opt]:
    """Every option of `gcntrain train`, in ``--help`` order."""
    return [*MODEL, OUT_DIR, *scheme_group(), *TRAIN_RUN]


# -- simulate -----------------------------------------------------------------------------
RANKS = Opt(
    ("--ranks", "-P"),
    dict(type=click.IntRange(min=1), required=True, help="Number of ranks to plan for."),
)

#: the options of `simulate` after the machine's
SIMULATE_RUN = [
    Opt(
        ("--sweep",),
        dict(
            is_flag=True,
            help="Plan every scheme (or --scheme's) x its grids / replication / delay / "
            "aggregation / message bits x partitions (--partition a,b,...: those to try) and "
            "rank them by predicted epoch time on --machine, best first.",
        ),
    ),
    Opt(
        ("--top",),
        dict(
            type=click.IntRange(min=1),
            default=20,
            show_default=True,
            help="--sweep: configurations the table shows (--json lists all).",
        ),
        api=False,
    ),
    Opt(
        ("--max-memory",),
        dict(
            default=None,
            metavar="SIZE",
            help="Memory the planner may use (e.g. 8G): it reads the graph in blocks that "
            "fit, and refuses a graph whose smallest block cannot [default: no bound].",
        ),
        api=False,
    ),
    Opt(
        ("--device",),
        dict(
            type=click.Choice(["cpu", "gpu"]),
            default="cpu",
            show_default=True,
            help="Price the epoch on the node's CPU cores, or on its GPUs (one rank per GPU, "
            "messages staged through host memory): needs a --machine profile with a [device] "
            "table (abci-gpu; `gcntrain bench --device gpu`).",
        ),
    ),
    JSON,
    PER_RANK,
]


def simulate_options() -> list[Opt]:
    """Every option of `gcntrain simulate`, in ``--help`` order."""
    return [RANKS, *MODEL, *scheme_group(), *WIDTHS, *MACHINE, *SIMULATE_RUN]
