"""The structured context every Ops call carries, and the tally key it maps to.

A scheme's traffic may depend on the layer, the operation, the direction, whether the pass
is training or evaluation, and (for schemes with state across epochs) the epoch; a `Phase`
carries all of them.  Counters key their tallies by `Phase.key` (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

#: short names of operations in tally keys
_SHORT = {"aggregate": "agg", "matmul": "mm"}
#: operations whose evaluation-time traffic is kept apart under an "eval." prefix
_SPLIT_EVAL = ("aggregate", "matmul", "loss", "predict", "norm")


@dataclass(frozen=True)
class Phase:
    """Where a call happens.

    Attributes
    ----------
    op : "aggregate" | "matmul" | "wgrad" | "norm" | "loss" | "predict" | "metrics" |
        "prepare" | "param" | "dropout" | "control" | "epoch" (and "setup" / "report" for
        the runner); "norm" is BatchNorm's column sums (``L<i>.fwd.norm``: the statistics,
        ``L<i>.bwd.norm``: their gradients and the scale and shift's)
    layer : layer index, or None for calls outside a layer
    direction : "fwd" | "bwd" | ""
    training : False in evaluation passes
    epoch : 0-based epoch, -1 outside the epoch loop
    term : which product of a layer with several ("self": GraphSAGE's ``H W_self``; "" for
        the rest).  Not part of the tally key; a scheme whose layout differs between the
        terms reads it.
    """

    op: str
    layer: int | None = None
    direction: str = ""
    training: bool = True
    epoch: int = -1
    term: str = ""

    @property
    def key(self) -> str:
        """Tally key, e.g. ``L0.fwd.agg``, ``eval.L1.fwd.mm``, ``L0.wgrad``, ``loss``."""
        parts = []
        if self.layer is not None:
            parts.append(f"L{self.layer}")
        if self.direction:
            parts.append(self.direction)
        parts.append(_SHORT.get(self.op, self.op))
        key = ".".join(parts)
        if not self.training and self.op in _SPLIT_EVAL:
            key = "eval." + key
        return key

    def at(self, op: str, layer: int | None = None, direction: str = "", term: str = "") -> Phase:
        """The same pass (training flag, epoch) at another operation."""
        return replace(self, op=op, layer=layer, direction=direction, term=term)


def phase_key(phase: Phase | str) -> str:
    """Tally key of a Phase, or the string itself (runner phases "setup", "report")."""
    return phase if isinstance(phase, str) else phase.key
