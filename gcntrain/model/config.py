"""The model and training hyperparameters of a run (`TrainConfig`) and the error of a bad one.

`gcntrain.model.trainer` re-exports both (the names the rest of the package imports).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from gcntrain.errors import InputError


class ConfigValueError(InputError):
    """A bad `TrainConfig` value (exit status 2).

    Attributes
    ----------
    field : str
        The `TrainConfig` field (also the name of its command-line parameter).
    label : str
        How the message names the value when nothing better is known ("lr").
    rest : str
        The message after the name ("must be a finite number > 0, got nan").
    """

    def __init__(self, field: str, label: str, rest: str):
        super().__init__(f"{label} {rest}")
        self.field, self.label, self.rest = field, label, rest


@dataclass
class TrainConfig:
    """Model and training hyperparameters; the defaults are the reference GCN's.

    Attributes
    ----------
    model : "gcn" | "sage"
    aggregator : GraphSAGE aggregator, "mean" | "gcn" (ignored for gcn)
    hidden : hidden layer widths (``len(hidden) + 1`` layers)
    dropout : dropout rate on every layer's input
    lr : Adam learning rate
    weight_decay : L2 coefficient, ``weight_decay * sum(W^2) / 2`` added to the loss
    weight_decay_all : apply it to every layer (default: first layer only, as the reference)
    optimizer : "adam" | "adamw"
    adamw_decay : AdamW's decoupled decay (used only with optimizer "adamw")
    epochs : maximum number of epochs
    early_stopping : window of the reference rule (0 = off)
    patience : stop after this many epochs without a lower validation loss (replaces the
        window rule when set)
    seed : weights init and dropout masks
    dtype : "float32" | "float64"
    normalize_features : row-L1 normalise the features (zero rows stay zero)
    eval_every : evaluate (validation/test) every this many epochs, and at the last one
    bias : layer bias (None: False for gcn, True for sage)
    sparse_features : first-layer input as CSR (None: when the density is below 0.2)
    order : "auto" | "mm_first" | "agg_first", evaluation order of S·H·W
    label_prop : masked label propagation rate in [0, 1): each epoch this share of the
        training nodes (counter-based draw per node) has its label embedded into its input
        row and is left out of the loss (0 = off)
    norm : "none" | "layer" (LayerNorm of every layer's input) | "batch" (BatchNorm of every
        layer's input, statistics over all nodes of the graph, `gcntrain.model.batchnorm`)
    label_scale : the label embedding enters as ``label_scale * E[label]`` (a smaller
        effective step for E than for the weights)
    keep_best : end with the parameters of the best epoch (the lowest validation loss,
        `gcntrain.model.state.best_record`) instead of the last epoch's: the final metrics,
        predictions and weights are then the best epoch's
    eval_cache : evaluate the first layer from ``S @ X`` computed once per run instead of an
        aggregation every evaluation (`gcntrain.model.evalcache`): one block of the first
        layer's input width held for the run; the training pass is untouched, the
        evaluation's losses change in the last digits where the layer multiplies first.
        Refused by schemes whose products cannot be cached; off where the model changes
        the first layer's input (label propagation, LayerNorm, BatchNorm) or where the
        block does not fit in memory
    """

    model: str = "gcn"
    aggregator: str = "mean"
    hidden: list[int] = field(default_factory=lambda: [16])
    dropout: float = 0.5
    lr: float = 0.01
    weight_decay: float = 5e-4
    weight_decay_all: bool = False
    optimizer: str = "adam"
    adamw_decay: float = 0.01
    epochs: int = 200
    early_stopping: int = 10
    patience: int | None = None
    seed: int = 0
    dtype: str = "float32"
    normalize_features: bool = True
    eval_every: int = 1
    bias: bool | None = None
    sparse_features: bool | None = None
    order: str = "auto"
    label_prop: float = 0.0
    norm: str = "none"
    label_scale: float = 0.01
    keep_best: bool = False
    eval_cache: bool = False

    def validate(self) -> TrainConfig:
        """Return self; raise `ConfigValueError` (an `InputError`) naming the first bad
        value's field."""
        checks = [
            (
                "model",
                self.model in ("gcn", "sage"),
                "model",
                f"must be gcn or sage, got {self.model!r}",
            ),
            (
                "aggregator",
                self.aggregator in ("mean", "gcn"),
                "aggregator",
                f"must be mean or gcn, got {self.aggregator!r}",
            ),
            (
                "hidden",
                all(int(h) >= 1 for h in self.hidden),
                "hidden widths",
                f"must be >= 1: {self.hidden}",
            ),
            (
                "dropout",
                0.0 <= self.dropout < 1.0,
                "dropout",
                f"must be in [0, 1), got {self.dropout}",
            ),
            ("lr", 0 < self.lr < math.inf, "lr", f"must be a finite number > 0, got {self.lr}"),
            (
                "weight_decay",
                0 <= self.weight_decay < math.inf,
                "weight decay",
                f"must be a finite number >= 0, got {self.weight_decay}",
            ),
            (
                "optimizer",
                self.optimizer in ("adam", "adamw"),
                "optimizer",
                f"must be adam or adamw, got {self.optimizer!r}",
            ),
            (
                "adamw_decay",
                0 <= self.adamw_decay < math.inf,
                "adamw decay",
                f"must be a finite number >= 0, got {self.adamw_decay}",
            ),
            ("epochs", self.epochs >= 1, "epochs", f"must be >= 1, got {self.epochs}"),
            ("seed", int(self.seed) >= 0, "seed", f"must be >= 0, got {self.seed}"),
            (
                "early_stopping",
                self.early_stopping >= 0,
                "early stopping",
                f"must be >= 0, got {self.early_stopping}",
            ),
            (
                "patience",
                self.patience is None or self.patience >= 1,
                "patience",
                f"must be >= 1, got {self.patience}",
            ),
            (
                "dtype",
                self.dtype in ("float32", "float64"),
                "dtype",
                f"must be float32 or float64, got {self.dtype!r}",
            ),
            (
                "eval_every",
                self.eval_every >= 1,
                "eval_every",
                f"must be >= 1, got {self.eval_every}",
            ),
            (
                "order",
                self.order in ("auto", "mm_first", "agg_first"),
                "order",
                f"must be auto, mm_first or agg_first, got {self.order!r}",
            ),
            (
                "label_prop",
                0.0 <= self.label_prop < 1.0,
                "--label-prop",
                f"must be in [0, 1), got {self.label_prop}",
            ),
            (
                "norm",
                self.norm in ("none", "layer", "batch"),
                "norm",
                f"must be none, layer or batch, got {self.norm!r}",
            ),
            (
                "label_scale",
                0 < self.label_scale < math.inf,
                "--label-scale",
                f"must be a finite number > 0, got {self.label_scale}",
            ),
        ]
        for name, ok, label, rest in checks:
            if not ok:
                raise ConfigValueError(name, label, rest)
        return self

    def to_dict(self) -> dict:
        return asdict(self)
