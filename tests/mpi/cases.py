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
