"""A stack of graph layers: ReLU between layers, a linear last layer (logits)."""

from __future__ import annotations

import numpy as np

from gcntrain.model.functional import glorot_uniform
from gcntrain.model.layers import TRAIN, GCNLayer, Layer, SAGEMeanLayer
from gcntrain.model.ops import Ops, ParamSpec
from gcntrain.model.phase import Phase

#: stream id = epoch * STREAMS_PER_EPOCH + layer index (dropout masks)
STREAMS_PER_EPOCH = 1024
#: stream of the label-propagation draw of an epoch: epoch * STREAMS_PER_EPOCH + LP_STREAM
LP_STREAM = STREAMS_PER_EPOCH - 1


def dropout_stream(epoch: int, layer: int) -> int:
    """The dropout-mask stream of `layer` in `epoch` (0-based both)."""
    return int(epoch) * STREAMS_PER_EPOCH + int(layer)


class Network:
    """Layers applied in order; ``H_{l+1} = relu(Z_l)`` except after the last layer.

    The ReLU works in place (``ops.compute.relu``: Z becomes H, no new block), and the
    training pass keeps H for the gradient, positive where Z is; the backward pass writes
    the gradient through the ReLU over the incoming one (``relu_backward(..., out=dH)``).
    Z is the layer's own result (a product of the Ops, never an array the caller or the
    Ops hold), so nothing else sees it change.

    Parameters
    ----------
    layers : list of Layer
        Already sized so that ``layers[l].f_out == layers[l + 1].f_in``.
    """

    def __init__(self, layers: list[Layer]):
        if not layers:
            raise ValueError("a network needs at least one layer")
        for a, b in zip(layers[:-1], layers[1:]):
            if a.f_out != b.f_in:
                raise ValueError(
                    f"layer {a.index} outputs {a.f_out} but layer {b.index} expects {b.f_in}"
                )
        self.layers = layers
        #: the activations H = relu(Z) of a training pass, kept for ReLU's gradient
        self._Z: list[np.ndarray] = []
        self._embedded: tuple[np.ndarray, np.ndarray] | None = None
        #: the label embedding is added as ``embed_scale * E[label]``: Adam moves every entry
        #: of E by about lr per step whatever its gradient, so a full-scale embedding of a
        #: wide input grows into noise where few labelled nodes neighbour each other
        self.embed_scale = 1.0

    def init_params(self, ops: Ops, seed: int, dtype: np.dtype | type) -> None:
        """All weights from ``np.random.default_rng(seed)``, layer by layer, in a fixed order,
        drawn whole and sharded by `ops` (so every layout starts from the same weights)."""
        rng = np.random.default_rng(seed)
        for layer in self.layers:
            layer.init_params(ops, rng, dtype)
        first = self.layers[0]
        if first.embed_rows:  # drawn last: the weights stay those of a run without it
            full = glorot_uniform(rng, first.embed_rows, first.f_in, dtype)
            first.params["E"] = ops.shard_param(
                full, first.spec("E"), phase=Phase("param", first.index)
            )

    def embed_labels(self, X, labels: np.ndarray, chosen: np.ndarray, compute=None) -> np.ndarray:
        """Masked label propagation: ``X + embed_scale * E[label]`` on the `chosen` rows
        (dense copy).  On a device (`compute` an ``ArrayCompute``) `X`, `chosen` and ``E``
        are device arrays and the labels are copied there once (``compute.resident``)."""
        if compute is not None and compute.device:
            labels = compute.resident(labels)
            H = X.toarray() if hasattr(X, "toarray") else X.copy()
        else:
            H = np.array(X.toarray() if hasattr(X, "toarray") else X, order="C", copy=True)
        E = self.layers[0].params["E"]
        H[chosen] += E[labels[chosen]] * E.dtype.type(self.embed_scale)
        self._embedded = (labels, chosen)
        return H

    def forward(
        self,
        ops: Ops,
        X,
        seed: int | None = None,
        ctx: Phase = TRAIN,
        embed: tuple[np.ndarray, np.ndarray] | None = None,
        aggregated=None,
    ) -> np.ndarray:
        """Logits of the local block.  Dropout is on in training passes (``ctx.training``)
        when `seed` is given; its masks depend on ``ctx.epoch``.  `embed` = (labels, chosen
        rows): the label embedding added to the input rows (`embed_labels`).
        `aggregated`: ``S @ X`` of the input, for an evaluation pass's first layer
        (`gcntrain.model.evalcache`; not in training passes)."""
        self._Z = []
        self._embedded = None
        H = X if embed is None else self.embed_labels(X, *embed, compute=ops.compute)
        last = len(self.layers) - 1
        for layer in self.layers:
            key = (
                None
                if seed is None or not ctx.training
                else (seed, dropout_stream(max(ctx.epoch, 0), layer.index))
            )
            if aggregated is not None and layer.index == 0 and not ctx.training:
                Z = layer.forward_aggregated(ops, H, aggregated, ctx)
            else:
                Z = layer.forward(ops, layer.normalize_input(ops, H, ctx), key, ctx)
            if layer.index != last:
                H = ops.compute.relu(Z)  # in place: H is Z's block
                if ctx.training:  # kept for ReLU's gradient; an evaluation frees it at once
                    self._Z.append(H)
            else:
                H = Z
        return H

    def backward(
        self, ops: Ops, dlogits: np.ndarray, ctx: Phase = TRAIN
    ) -> list[dict[str, np.ndarray]]:
        """Reduced gradients of every layer's parameter shards, given d loss / d logits."""
        grads: list[dict[str, np.ndarray]] = [{} for _ in self.layers]
        dH = dlogits
        for layer in reversed(self.layers):
            if layer.index != len(self.layers) - 1:
                dH = ops.compute.relu_backward(dH, self._Z[layer.index], out=dH)
            # the first layer's input gradient: for its normalisation's parameters (their
            # gradients need the one of its output) or the label embedding's
            first = layer.index == 0
            below = not first or self._embedded is not None
            need = below or bool(layer.norm)
            dH, grads[layer.index] = layer.backward(ops, dH, need_input_grad=need, ctx=ctx)
            if layer.norm:
                dH = layer.normalize_backward(ops, dH, ctx, grads[layer.index], below)
        if self._embedded is not None:
            first = self.layers[0]
            labels, chosen = self._embedded
            xp = ops.compute.xp  # NumPy on the host; on a GPU an atomic add (rounding only)
            dE = xp.zeros((first.embed_rows, first.f_in), dtype=dH.dtype)
            xp.add.at(dE, labels[chosen], dH[chosen] * dH.dtype.type(self.embed_scale))
            grads[0]["E"] = ops.reduce_weight_grad(
                dE, first.spec("E"), phase=ctx.at("wgrad", first.index)
            )
        self._Z = []
        self._embedded = None
        return grads

    def weights(self) -> list[dict[str, np.ndarray]]:
        """The local parameter shards themselves (not copies), one dict per layer."""
        return [layer.params for layer in self.layers]

    def specs(self) -> list[dict[str, ParamSpec]]:
        """Whole shapes of the parameters, one dict per layer."""
        return [{k: layer.spec(k) for k in layer.params} for layer in self.layers]

    def full_weights(self, ops: Ops) -> list[dict[str, np.ndarray]]:
        """Whole parameters (copies), gathered from the shards by `ops` (phase "param")."""
        return [
            {
                k: np.array(
                    ops.compute.to_host(
                        ops.gather_param(w, layer.spec(k), phase=Phase("param", layer.index))
                    )
                )
                for k, w in layer.params.items()
            }
            for layer in self.layers
        ]

    def describe(self) -> list[dict]:
        """Per layer: kind, sizes, order, bias, dropout (for outputs and logs)."""
        return [
            {
                "kind": lyr.kind,
                "f_in": lyr.f_in,
                "f_out": lyr.f_out,
                "order": lyr.order,
                "bias": lyr.bias,
                "dropout": lyr.dropout,
            }
            for lyr in self.layers
        ]


def build_network(
    model: str,
    num_features: int,
    hidden: list[int],
    num_classes: int,
    *,
    aggregator: str = "mean",
    dropout: float = 0.5,
    bias: bool | None = None,
    order: str = "auto",
    norm: str = "none",
    label_embedding: bool = False,
    label_scale: float = 0.01,
) -> Network:
    """Build (without initialising) a GCN or GraphSAGE network.

    Parameters
    ----------
    model : "gcn" | "sage"
    num_features, num_classes : input and output widths.
    hidden : hidden widths; ``len(hidden) + 1`` layers.
    aggregator : for "sage": "mean" (`SAGEMeanLayer`) or "gcn" (`GCNLayer` over the sage-gcn
        support).
    dropout : rate on every layer's input.
    bias : default False for "gcn", True for "sage".
    order : "auto" (cheaper aggregation order) or force "mm_first" / "agg_first".
    norm : "none", "layer" (LayerNorm of every layer's input) or "batch" (BatchNorm of
        every layer's input over all nodes, `gcntrain.model.batchnorm`).
    label_embedding : a learned (classes x features) label embedding on the input
        (masked label propagation).
    label_scale : the embedding is added as ``label_scale * E[label]`` (`Network.embed_scale`).
    """
    if model not in ("gcn", "sage"):
        raise ValueError(f"unknown model {model!r}; expected gcn or sage")
    if model == "sage" and aggregator not in ("mean", "gcn"):
        raise ValueError(f"unknown aggregator {aggregator!r}; expected mean or gcn")
    if bias is None:
        bias = model == "sage"
    sizes = [int(num_features), *[int(h) for h in hidden], int(num_classes)]
    if min(sizes) < 1:
        raise ValueError(f"layer widths must be >= 1, got {sizes}")
    cls = SAGEMeanLayer if model == "sage" and aggregator == "mean" else GCNLayer
    layers = [
        cls(i, sizes[i], sizes[i + 1], dropout=dropout, bias=bias, order=order)
        for i in range(len(sizes) - 1)
    ]
    if norm not in ("none", "layer", "batch"):
        raise ValueError(f"unknown norm {norm!r}; expected none, layer or batch")
    for layer in layers:
        layer.set_norm(norm)
    if label_embedding:
        layers[0].embed_rows = int(num_classes)
    net = Network(layers)
    net.embed_scale = float(label_scale)
    return net
