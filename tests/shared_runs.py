"""Helpers several test modules share: the one error line of a refused command, rewriting
an array of a checkpoint's rank file, every array of an output file (`h5_arrays`), and the
small R-MAT graph and its np 3 checkpoint that the checkpoint tests damage (one launch for
the session: tests/conftest.py's session fixtures `ck_graph_file` and `ck_checkpoint_np3`;
every test damages a copy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: the prefix of every error line gcntrain writes
ERROR = "gcntrain: error: "
#: the np 3 checkpointed run (1D, 2 epochs) the checkpoint tests resume from; its first
#: three words (graph, --scheme, 1d) start their resumed runs
CK_NP3_ARGS = ("--scheme", "1d", "--epochs", "2", "--quiet")


def one_error(stderr: str) -> str:
    """The one ``gcntrain: error:`` line of `stderr` (asserting that there is exactly one,
    and no traceback or MPI abort)."""
    errors = [ln for ln in stderr.splitlines() if ln.startswith(ERROR)]
    assert len(errors) == 1, stderr[-3000:]
    assert "Traceback" not in stderr and "Abort" not in stderr, stderr[-3000:]
    return errors[0]


def h5_arrays(path) -> dict[str, np.ndarray]:
    """Every dataset of the HDF5 file `path` (a run's weights.h5, predictions.h5), read
    whole, by its path in the file."""
    import h5py

    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, v: found.update({k: v[()]}) if isinstance(v, h5py.Dataset) else None)
    return found


def rewrite(path, change) -> None:
    """Rewrite the ``.npz`` file `path` with `change` applied to its dict of arrays."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def write_ck_graph(where: Path) -> Path:
    """The checkpoint tests' graph (R-MAT scale 8, 10 features, 3 classes) in WHERE/g.h5."""
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph

    path = where / "g.h5"
    write_graph(path, rmat(8, edge_factor=8, seed=2, num_features=10, num_classes=3))
    return path


def checkpoint_np3(graph: Path, ck: Path) -> list[str]:
    """Train `graph` on 3 ranks with `CK_NP3_ARGS`, checkpointing into `ck`; the arguments
    (graph first) it ran with."""
    from tests.mpi.launch import gcntrain_exe, run_mpi

    args = [str(graph), *CK_NP3_ARGS]
    res = run_mpi(3, [*gcntrain_exe(), "train", *args, "--checkpoint", str(ck)], timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return args
