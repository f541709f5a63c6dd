"""Graph files damaged one way each (issue 35, item 2): what the serial read refuses and
every rank of an MPI job must refuse with the same line."""

from __future__ import annotations

import shutil

import h5py
import numpy as np


def _replace(f, name, value):
    del f[name]
    f[name] = value


def _mask2(f):
    m = f["train_mask"][:].astype(np.int8)
    m[0] = 2
    _replace(f, "train_mask", m)


def _nan_data(f):
    d = np.ones(f["indices"].shape[0], np.float32)
    d[5] = np.nan
    if "data" in f:
        del f["data"]
    f["data"] = d


#: name -> (how the file is damaged, the line's needle)
CASES = {
    "mask2": (_mask2, "train_mask has value 2 at node 0"),
    "fmask": (
        lambda f: _replace(f, "train_mask", f["train_mask"][:].astype(np.float32)),
        "train_mask must be bool or 0/1 integers",
    ),
    "findices": (
        lambda f: _replace(f, "indices", f["indices"][:].astype(np.float64)),
        "indices must have an integer dtype",
    ),
    "findptr": (
        lambda f: _replace(f, "indptr", f["indptr"][:].astype(np.float64)),
        "indptr must have an integer dtype",
    ),
    "strindices": (
        lambda f: _replace(f, "indices", f["indices"][:].astype("S8")),
        "indices must have an integer dtype",
    ),
    "feat1d": (
        lambda f: _replace(f, "features", f["features"][:, 0].copy()),
        "features must be a 2-D array",
    ),
    "featrows": (
        lambda f: _replace(f, "features", f["features"][:-1]),
        "features has",
    ),
    "labrows": (lambda f: _replace(f, "labels", f["labels"][:-1]), "labels has"),
    "nandata": (_nan_data, "data has a non-finite value (nan) at entry 5"),
}


def tampered(graph, folder, name: str):
    """A copy of `graph` in `folder` damaged as CASES[name] says; its path."""
    path = folder / f"tampered-{name}.h5"
    shutil.copy(graph, path)
    with h5py.File(path, "r+") as f:
        CASES[name][0](f)
    return path
