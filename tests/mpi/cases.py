"""Constants shared by the fast MPI worker (`tests/mpi/worker_fast.py`) and the tests that
read its verdicts (tests/test_mpi_schemes.py)."""

from __future__ import annotations

#: split-3D and Plexus grids that Cora trains on at each rank count (R-MAT n = 509 trains on
#: every grid): each axis split at some rank count, two axes at once at np = 4
CORA_GRIDS = {1: ["1x1x1"], 2: ["2x1x1"], 3: ["1x3x1"], 4: ["1x1x4", "2x2x1"]}

#: (graph, dtype) of the 1D / 1.5D / p2p / 2D equivalence case; Cora in float32 is the
#: 20-epoch accuracy case at np = 4
EQUIV_RUNS = [("cora", "float64"), ("rmat-509", "float64"), ("rmat-509", "float32")]

#: the model Cora trains with in the vertex-cut case at each rank count (R-MAT n = 509, with
#: and without stored self-loops and duplicates, trains with both at every rank count)
CORA_VERTEXCUT_MODEL = {1: "gcn", 2: "sage", 3: "gcn", 4: "sage"}

#: rank counts the `registry` case runs at in the suite (tests/test_mpi_schemes.py): the
#: hand-written cases leave out only the runs it trains at these counts
REGISTRY_NPROCS = [1, 2, 3, 4]

#: the `registry` case's graph (`worker.rmat_odd` keywords: R-MAT n = 509) and training
#: (`TrainConfig` fields: GCN with the default widths, float64); its exact configurations
#: equal serial within `REGISTRY_TOLERANCE`
REGISTRY_GRAPH = dict(edge_factor=8, seed=11, num_features=24, num_classes=4)
REGISTRY_TRAINING = dict(epochs=6, seed=3, dtype="float64", early_stopping=0)
REGISTRY_TOLERANCE = 1e-5


def registry_trains(size: int, scheme: str, options: dict, partition: str | None) -> bool:
    """Whether the `registry` case (tests/mpi/worker_fast.py) trains `scheme` with `options`
    and `partition` (a name; None: the scheme's default) at `size` ranks: one of the
    scheme's `test_configurations(size)`, compared as configured (``{}`` and the defaults
    spelled out are the same run)."""
    from gcntrain.schemes.registry import SCHEMES

    sch = SCHEMES.get(scheme)
    if sch is None or size not in REGISTRY_NPROCS:
        return False
    want = (sch.configure(size, dict(options)), partition or sch.default_partition)
    return any(
        (sch.configure(size, dict(o)), p or sch.default_partition) == want
        for o, p in sch.test_configurations(size)
    )
