"""A rank's training state at an epoch boundary, as flat named arrays (what a checkpoint keeps).

Everything `gcntrain.model.trainer.fit` carries from one epoch to the next: the local
parameter shards, Adam's moments and step count, the epochs done, the epoch records, the
validation losses that drive early stopping, whether a stopping rule fired, the scheme's
own state (`Ops.state_dict`) and, with ``--keep-best``, the parameters of the best epoch so
far (`best_record`).  Random numbers need no state: dropout masks and label draws
are counter-based on (seed, epoch), so a resumed run draws what the uninterrupted one draws.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from gcntrain.errors import InputError

#: array-name prefixes of the parameter-shaped groups
GROUPS = ("w", "m", "v")
#: the prefix of the best epoch's parameters (``--keep-best``)
BEST = "b"
SCHEME = "scheme."


@dataclass
class EpochRecord:
    """One epoch: training loss/accuracy (with dropout), evaluation metrics, time split.

    ``val_loss``, ``val_acc`` and ``test_acc`` are None on epochs without evaluation.
    ``t_other`` is the epoch's wall time minus aggregation and dense time.  ``extra`` holds a
    scheme's own measurements of the epoch (`Ops.epoch_stats`, reduced over ranks by the
    runner), written as further keys of the record.
    """

    epoch: int
    loss: float
    train_acc: float
    val_loss: float | None
    val_acc: float | None
    test_acc: float | None
    seconds: float
    t_aggregation: float
    t_dense: float
    t_other: float
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        extra = d.pop("extra")
        clash = set(extra) & set(d)
        if clash:
            raise ValueError(f"scheme measurements would overwrite {sorted(clash)}")
        d.update(extra)
        return d


def best_record(history: list[EpochRecord]) -> EpochRecord | None:
    """The evaluated epoch with the lowest validation loss (the earliest of equal ones),
    None where no epoch has a finite one: the run's best epoch, whose test accuracy is
    reported as ``test_acc_at_best`` and whose weights ``--keep-best`` keeps."""
    best = None
    for r in history:
        v = r.val_loss
        if v is not None and np.isfinite(v) and (best is None or v < best.val_loss):
            best = r
    return best


@dataclass
class TrainState:
    """See the module docstring; ``weights``, ``m`` and ``v`` have the structure of
    `Network.weights` (one {name: array} per layer)."""

    epoch: int
    weights: list[dict[str, np.ndarray]]
    m: list[dict[str, np.ndarray]]
    v: list[dict[str, np.ndarray]]
    t: int
    history: list  # EpochRecord
    val_losses: list[float]
    stopped: bool = False
    scheme: dict[str, np.ndarray] = field(default_factory=dict)
    #: ``--keep-best``: the parameters after the best epoch so far (None: not kept)
    best: list[dict[str, np.ndarray]] | None = None

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat {name: array} (``w.0.W``, ``m.0.W``, ``scheme.KEY``, ...), no objects."""
        out: dict[str, np.ndarray] = {}
        for g, layers in zip(GROUPS, (self.weights, self.m, self.v)):
            for i, lp in enumerate(layers):
                for k, a in lp.items():
                    out[f"{g}.{i}.{k}"] = np.asarray(a)
        for i, lp in enumerate(self.best or []):
            for k, a in lp.items():
                out[f"{BEST}.{i}.{k}"] = np.asarray(a)
        for k, a in self.scheme.items():
            out[SCHEME + k] = np.asarray(a)
        out["epoch"] = np.array(self.epoch, dtype=np.int64)
        out["adam_t"] = np.array(self.t, dtype=np.int64)
        out["stopped"] = np.array(self.stopped)
        out["val_losses"] = np.asarray(self.val_losses, dtype=np.float64)
        records = json.dumps([asdict(r) for r in self.history]).encode()
        out["history"] = np.frombuffer(records, dtype=np.uint8)
        return out

    def inconsistency(self) -> str | None:
        """What makes this state unusable, checked before it is restored (None: nothing):
        layers or arrays that the weights and Adam's moments do not share, shapes or dtypes
        that differ between them, non-finite values, a negative epoch or step."""
        if self.epoch < 0 or self.t < 0:
            return f"epoch {self.epoch} and Adam step {self.t} must be >= 0"
        if not len(self.weights) == len(self.m) == len(self.v):
            return (
                f"{len(self.weights)} layers of weights against {len(self.m)} and "
                f"{len(self.v)} of Adam's moments"
            )
        for g, moments in (("m", self.m), ("v", self.v)):
            bad = first_mismatch(self.weights, moments)
            if bad is None:
                continue
            i, k = bad
            w, m, v = self.weights[i], self.m[i], self.v[i]
            if k is None:
                return f"layer {i} holds {sorted(w)}, its moments {sorted(m)} and {sorted(v)}"
            a, b = w[k], moments[i][k]
            return (
                f"w.{i}.{k} is {a.dtype}{list(a.shape)} but {g}.{i}.{k} is {b.dtype}{list(b.shape)}"
            )
        for i, (w, m, v) in enumerate(zip(self.weights, self.m, self.v)):
            for k, a in w.items():
                for g, b in (("w", a), ("m", m[k]), ("v", v[k])):
                    if not np.issubdtype(b.dtype, np.floating):
                        return f"{g}.{i}.{k} holds {b.dtype}, not floating-point numbers"
                    if not np.isfinite(b).all():
                        return f"{g}.{i}.{k} holds non-finite values (NaN or infinity)"
        if self.best is not None:
            return self._best_inconsistency()
        return None

    def _best_inconsistency(self) -> str | None:
        """`inconsistency` of the kept best parameters against the weights."""
        bad = first_mismatch(self.best, self.weights)
        if bad is not None:
            i, k = bad
            if i is None:
                return f"{len(self.best)} layers of best weights against {len(self.weights)}"
            b, w = self.best[i], self.weights[i]
            if k is None:
                return f"layer {i}'s best weights hold {sorted(b)}, its weights {sorted(w)}"
            return (
                f"{BEST}.{i}.{k} is {b[k].dtype}{list(b[k].shape)} but w.{i}.{k} is "
                f"{w[k].dtype}{list(w[k].shape)}"
            )
        for i, b in enumerate(self.best):
            for k, a in b.items():
                if not np.isfinite(a).all():
                    return f"{BEST}.{i}.{k} holds non-finite values (NaN or infinity)"
        return None

    def model_mismatch(self, weights: list[dict]) -> str | None:
        """How this state's parameters differ from the model's (None: they fit).

        Parameters
        ----------
        weights : the model's parameters on this rank, one {name: array} per layer
            (`Network.weights`; host or device arrays).

        Returns
        -------
        str or None
            The first difference in layer count, parameter names, shape or dtype, in words
            (``"layer 1's W is 16x7, the model needs 16x3"``), for a state whose arrays
            agree among themselves (`inconsistency`) but were written for another model.
        """
        bad = first_mismatch(weights, self.weights)
        if bad is None:
            return None
        i, k = bad
        if i is None:
            return f"it holds {len(self.weights)} layers, the model has {len(weights)}"
        have, need = self.weights[i], weights[i]
        if k is None:
            return f"layer {i} holds {sorted(have)}, the model needs {sorted(need)}"
        a, want = have[k], need[k]
        got_t, need_t = np.dtype(a.dtype), np.dtype(want.dtype)
        # the dtypes are named only where they differ
        t1, t2 = (f" {got_t.name}", f" {need_t.name}") if got_t != need_t else ("", "")
        return f"layer {i}'s {k} is {_shape(a.shape)}{t1}, the model needs {_shape(want.shape)}{t2}"

    def check_model(self, weights: list[dict]) -> None:
        """Refuse, before anything is restored, a state the model's `weights` cannot take
        (`model_mismatch`), with `InputError`.  Called by `gcntrain.model.trainer.fit` on
        every rank; the job's checkpoints (`gcntrain.job.checkpoint`) make it one verdict
        for every rank, naming the file."""
        why = self.model_mismatch(weights)
        if why is not None:
            raise InputError(f"the state to resume does not fit the model: {why}")

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TrainState:
        groups: dict[str, list[dict[str, np.ndarray]]] = {g: [] for g in (*GROUPS, BEST)}
        scheme = {}
        for name, a in arrays.items():
            if name.startswith(SCHEME):
                scheme[name[len(SCHEME) :]] = a
                continue
            g, _, rest = name.partition(".")
            if g not in groups or not rest:
                continue
            i, _, k = rest.partition(".")
            layers = groups[g]
            while len(layers) <= int(i):
                layers.append({})
            layers[int(i)][k] = a
        records = json.loads(bytes(arrays["history"]).decode()) if "history" in arrays else []
        return cls(
            epoch=int(arrays["epoch"]),
            weights=groups["w"],
            m=groups["m"],
            v=groups["v"],
            t=int(arrays["adam_t"]),
            history=[EpochRecord(**r) for r in records],
            val_losses=[float(x) for x in arrays["val_losses"]],
            stopped=bool(arrays["stopped"]),
            scheme=scheme,
            best=groups[BEST] or None,
        )


def first_mismatch(xs: list[dict], ys: list[dict]) -> tuple[int | None, str | None] | None:
    """Where two lists of parameter layers (one {name: array} per layer; host or device
    arrays) first differ: ``(None, None)``, in their number of layers; ``(i, None)``, in
    layer i's parameter names; ``(i, k)``, in the shape or dtype of layer i's `k` (layers in
    order, names in `xs`' order); None where they agree."""
    if len(xs) != len(ys):
        return None, None
    for i, (x, y) in enumerate(zip(xs, ys)):
        if set(x) != set(y):
            return i, None
        for k, a in x.items():
            b = y[k]
            if tuple(a.shape) != tuple(b.shape) or np.dtype(a.dtype) != np.dtype(b.dtype):
                return i, k
    return None


def _shape(shape) -> str:
    """``16x7`` for (16, 7); ``a scalar`` for ()."""
    return "x".join(str(int(n)) for n in shape) if len(shape) else "a scalar"


def host_copy(a, to_host) -> np.ndarray:
    """A host copy of parameter `a` that later steps do not change (`to_host`: the compute
    backend's; on the host it may hand back `a` itself)."""
    h = to_host(a)
    if isinstance(a, np.ndarray) and (h is a or np.shares_memory(h, a)):
        return h.copy()
    return np.asarray(h)


def restore_into(
    dst: list[dict[str, np.ndarray]], src: list[dict[str, np.ndarray]], load=None
) -> None:
    """Copy `src` into the arrays of `dst` in place (same layers, names, shapes, dtypes).

    `load(dst_array, src_array)` makes each copy (default: an in-place assignment; on a
    device, ``ops.compute.load_into``: one host-to-device copy per array)."""
    bad = first_mismatch(dst, src)
    if bad is not None:
        i, k = bad
        if i is None:
            raise ValueError(f"checkpoint has {len(src)} layers, the model {len(dst)}")
        if k is None:
            raise ValueError(
                f"checkpoint layer {i} has {sorted(src[i])}, the model {sorted(dst[i])}"
            )
        a, b = dst[i][k], src[i][k]
        raise ValueError(
            f"checkpoint {k} of layer {i} is {b.dtype}{list(b.shape)}, the model "
            f"{a.dtype}{list(a.shape)}"
        )
    for d, s in zip(dst, src):
        for k, a in d.items():
            if load is None:
                a[...] = s[k]
            else:
                load(a, s[k])
