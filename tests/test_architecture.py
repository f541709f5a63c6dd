"""The architecture's rules, checked on the code itself (docs/architecture.md).

* No scheme name appears outside `gcntrain/schemes` in the model, the CLI, the simulator or
  the job layer: they reach schemes through the registry only.
* Every public method of every Ops class is declared in `PROTOCOL` (so the generated
  timing, recording and fault proxies cover it), and a training run through `RecordingOps`
  records every protocol category.
* Every registered scheme is complete: name, summary, options with unique flags, a layout and
  an Ops class.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np

from gcntrain.data.generate import rmat
from gcntrain.model.normalize import support_matrix
from gcntrain.model.ops import PROTOCOL, Ops, SerialOps
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.model.wrappers import FaultOps, OpsProxy, RecordingOps, TimedOps
from gcntrain.schemes import registry

PKG = Path(__file__).resolve().parents[1] / "gcntrain"


def scheme_agnostic_files() -> list[Path]:
    return [p for d in ("model", "cli", "simulate", "job") for p in (PKG / d).rglob("*.py")]


def test_no_scheme_name_outside_the_registry():
    names = registry.names()
    pattern = re.compile("|".join(rf"""["']{re.escape(n)}["']""" for n in names))
    hits = []
    for path in scheme_agnostic_files():
        for k, line in enumerate(path.read_text().splitlines(), start=1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(PKG.parent)}:{k}: {line.strip()}")
    assert not hits, "scheme names outside the registry:\n" + "\n".join(hits)


def all_ops_classes() -> list[type]:
    seen, todo = [], [Ops]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


def test_every_public_ops_method_is_in_the_protocol():
    assert registry.SCHEMES  # importing the registry imports every scheme module
    classes = all_ops_classes()
    assert len(classes) >= 2 + len(registry.names()) - 1  # Ops, SerialOps, the schemes'
    for cls in classes:
        if cls.__module__.startswith("tests."):
            continue
        public = {
            n for n, v in vars(cls).items() if not n.startswith("_") and inspect.isfunction(v)
        }
        extra = public - set(PROTOCOL) - {"col_range"}
        assert not extra, f"{cls.__qualname__} has methods outside PROTOCOL: {sorted(extra)}"


def test_proxies_are_generated_for_every_protocol_method():
    for name in PROTOCOL:
        for cls in (OpsProxy, TimedOps, RecordingOps, FaultOps):
            assert callable(getattr(cls, name)), (cls, name)
    assert "col_range" not in PROTOCOL  # layout query, no phase, nothing to record


def test_a_training_run_records_every_call_with_a_phase():
    g = rmat(6, edge_factor=6, seed=3, num_features=5, num_classes=3)
    ops = RecordingOps(SerialOps(support_matrix(g, "sage-mean")))
    cfg = TrainConfig(model="sage", epochs=3, early_stopping=0, dtype="float64")
    masks = {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}
    fit(ops, g.features, g.labels, masks, g.num_classes, cfg)
    methods = {c.method for c in ops.calls}
    assert methods <= set(PROTOCOL)
    assert {PROTOCOL[m] for m in methods} == set(PROTOCOL.values())
    assert all(c.phase.op for c in ops.calls)
    epochs = {c.phase.epoch for c in ops.calls if c.method == "aggregate" and c.phase.training}
    assert epochs == {0, 1, 2}
    evals = [c for c in ops.calls if c.method == "aggregate" and not c.phase.training]
    assert evals and all(c.phase.key.startswith("eval.") for c in evals)
    mm = [c for c in ops.calls if c.method == "matmul"]
    assert mm and all(c.phase.key.endswith(".mm") for c in mm)


def test_registered_schemes_are_complete():
    flags = {}
    for name, s in registry.SCHEMES.items():
        assert s.name == name and s.summary
        for o in s.options:
            for f in o.flags:
                assert flags.setdefault(f, o.name) == o.name, f
    assert registry.get("auto", 1).name == registry.AUTO[0]
    assert registry.get("auto", 4).name == registry.AUTO[1]


def test_timed_ops_times_graph_and_dense_calls():
    g = rmat(6, edge_factor=6, seed=3, num_features=5, num_classes=3)
    ops = TimedOps(SerialOps(support_matrix(g, "gcn")))
    from gcntrain.model.phase import Phase

    X = np.ones((g.n, 4))
    ops.aggregate(X, phase=Phase("aggregate", 0, "fwd"))
    ops.matmul(X, np.ones((4, 2)), phase=Phase("matmul", 0, "fwd"))
    assert ops.t_aggregation > 0 and ops.t_dense > 0


def test_pricing_is_an_explicit_table_checked_against_the_protocol():
    """A communicating Ops method neither priced nor declared silent, a misspelled
    ``steps_``/``work_`` method, or a product without ``work_`` is refused where the registry
    loads the scheme (a zero in every plan otherwise); the registered schemes pass."""
    import pytest

    from gcntrain.schemes.one_d import OneD
    from gcntrain.schemes.protocol import pricing_table

    for name in registry.names():
        table = pricing_table(type(registry.SCHEMES[name]))
        assert set(table) == {m for m, c in PROTOCOL.items() if c not in ("local", "hook")}

    class Misspelled(OneD):
        name = "misspelled"

        def steps_aggregat(self, ctx, call):
            return []

    class Unpriced(OneD):
        name = "unpriced"
        silent = OneD.silent - {"matmul"}

    class Both(OneD):
        name = "both"
        silent = OneD.silent | {"xent"}

    for cls, needle in (
        (Misspelled, "steps_aggregat names no Ops method"),
        (Unpriced, "matmul: neither priced"),
        (Both, "xent: both priced"),
    ):
        with pytest.raises(TypeError, match=needle):
            pricing_table(cls)
