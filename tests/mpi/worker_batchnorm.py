"""BatchNorm (``--norm batch``, issue 53 part 2) under every registered scheme: the MPI case
`batchnorm`, run by `tests/mpi/worker_fast.py` (its `CASES`) in the one launch of each rank
count that `tests/test_batchnorm_schemes.py` asks for.

Runs alone too: ``mpiexec -n P python tests/mpi/worker_batchnorm.py`` prints the case's
verdict line as `worker_fast.py` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import worker as W  # noqa: E402  (tests/mpi/worker.py, beside this file)
from cases import REGISTRY_GRAPH  # noqa: E402

from gcntrain.model.trainer import TrainConfig  # noqa: E402

#: (label, TrainConfig fields) of the models every configuration trains: GCN multiplies
#: first in both layers (24 -> 16 -> 4), in float64 and float32; GraphSAGE with a hidden
#: layer wider than the input aggregates first in layer 0 (24 -> 32), multiplies first in
#: layer 1, and has biases
MODELS = [
    ("gcn", dict(model="gcn", hidden=[16], dtype="float64")),
    ("sage", dict(model="sage", hidden=[32], dtype="float64")),
    ("gcn-float32", dict(model="gcn", hidden=[16], dtype="float32")),
]

#: weights after the run equal serial's within this (relative): the rule every exact
#: scheme is held to (tests/mpi/worker_fast.py)
TOLERANCE = {"float64": 1e-5, "float32": 1e-4}


def extra_configurations(size: int) -> list[tuple[str, dict, str | None]]:
    """Configurations beyond the schemes' own `test_configurations`: where a grid splits
    two axes at once at np = 4 (2D 2 x 2 is one of 2D's own), and 1.5D with replication
    (its own at odd counts has c = 1)."""
    if size != 4:
        return []
    return [
        ("3d", {"grid": "2x1x2"}, None),
        ("plexus", {"grid": "2x2x1", "permute": "none"}, None),
        ("plexus", {"grid": "1x2x2", "permute": "double"}, None),
    ]


def norm_bytes(run) -> int:
    """Bytes this rank sent in BatchNorm's phases (``*.norm``) over the whole run."""
    return int(sum(int(v[0]) for k, v in run.phases().phases.items() if k.endswith(".norm")))


def case_batchnorm(world):
    """Every registered scheme on each of its `Scheme.test_configurations` (and
    `extra_configurations`) with ``--norm batch``: the `registry` case's R-MAT n = 509
    (prime: no grid divides it), 6 epochs with dropout, the `MODELS`; an exact
    configuration's weights (the BatchNorm scale and shift included) equal serial's within
    `TOLERANCE`, and every configuration's measured traffic equals its plan on every rank
    and phase (the BatchNorm reductions are the phases ``L<i>.fwd.norm``, ``L<i>.bwd.norm``
    and ``eval.L<i>.fwd.norm``)."""
    from gcntrain.schemes.registry import SCHEMES

    g = W.rmat_odd(9, **REGISTRY_GRAPH)
    ok, details = True, []
    for label, fields in MODELS:
        cfg = TrainConfig(epochs=6, seed=3, early_stopping=0, norm="batch", **fields)
        tol = TOLERANCE[cfg.dtype]
        ser = W.serial_fit(g, cfg)
        todo = [
            (name, dict(opts), part)
            for name, sch in SCHEMES.items()
            for opts, part in sch.test_configurations(world.size)
        ] + extra_configurations(world.size)
        for name, opts, part in todo:
            run, exact, err, diffs = W.run_against_serial(
                world, g, cfg, SCHEMES[name], opts, part, ser
            )
            names = sorted({k for lw in run.result.weights for k in lw})
            good = (err <= tol or not exact) and not diffs and "bn_g" in names
            ok &= good
            extra = {"norm_bytes": norm_bytes(run), "params": names}
            detail = W.scheme_detail(world, name, opts, part, exact, err, diffs, **extra)
            details.append({"model": label, **detail})
    return ok, details


if __name__ == "__main__":
    import worker_fast as F  # noqa: E402  (its CASES hold this module's case)

    sys.argv[1:] = sys.argv[1:] or ["batchnorm"]
    sys.exit(F.main())
