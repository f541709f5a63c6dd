"""Graph files damaged one way each (issue 35): what the serial read refuses and every rank
of an MPI job must refuse with the same line (`CASES`, `bad_graph_files`, `ISSUE35`), and HDF5
files with one damaged metadata byte (`damaged_metadata`)."""

from __future__ import annotations

import contextlib
import io
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
    # not in the content hash: only the diagonal count finds it, serially and streamed
    "selfloops": (
        lambda f: f.attrs.__setitem__("self_loops", int(f.attrs["self_loops"]) + 1),
        "attribute self_loops is",
    ),
}


def tampered(graph, folder, name: str):
    """A copy of `graph` in `folder` damaged as CASES[name] says; its path."""
    path = folder / f"tampered-{name}.h5"
    shutil.copy(graph, path)
    with h5py.File(path, "r+") as f:
        CASES[name][0](f)
    return path


def damaged_metadata(path, folder, name: str = "damaged.h5"):
    """A copy of HDF5 file `path` in `folder` with one flipped byte that h5py itself fails
    on (the first such byte of the file's metadata, each object opened as the probe), as a
    random bit flip of a real file does (issue 35, item 3); its path."""
    src = path.read_bytes()
    bad = folder / name
    for pos in range(64, 4096):
        d = bytearray(src)
        d[pos] ^= 0x20
        bad.write_bytes(bytes(d))
        try:
            with h5py.File(bad, "r") as f:
                for key in f:
                    f[key].shape  # noqa: B018 - opening each object is the probe
        except (RuntimeError, KeyError):
            return bad
        except OSError:
            continue  # not openable at all: the old path already reports it
    raise AssertionError("no flipped metadata byte broke h5py: the probe needs a new range")


def changed_copy(graph, folder, name: str, change):
    """A copy of `graph` named `name` in `folder`, changed by `change` (an open h5py file)."""
    path = folder / name
    shutil.copy(graph, path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def _bump_feature(f):
    f["features"][0, 0] = f["features"][0, 0] + 1.0  # contents no longer hash alike


#: damage each rank's own rows cannot see: name -> the change
UNHASHED = {"hash": _bump_feature, "indices": lambda f: f.__delitem__("indices")}


def _zero_width(f):
    n = f["features"].shape[0]
    _replace(f, "features", np.zeros((n, 0), np.float32))  # num_features still says 16


def bad_graph_files(graph, folder) -> dict:
    """Copies of `graph` (16 features) in `folder` that every path must refuse with the
    serial read's line: {name: path}.  ``tampered-NAME`` (each of `CASES`), ``c0`` (declares
    0 classes), ``huge-decl`` (a few KB declaring 1e11 indices), ``scalar`` (a scalar
    `indices`), ``zero-width`` (features without columns, num_features 16), ``damaged``
    (one flipped metadata byte), ``nofeat`` (an edge list converted without node data)."""
    from gcntrain.cli.main import run

    out = {f"tampered-{name}": tampered(graph, folder, name) for name in CASES}
    out["c0"] = changed_copy(
        graph, folder, "c0.h5", lambda f: f.attrs.__setitem__("num_classes", 0)
    )

    def huge(f):
        del f["indices"]
        f.create_dataset("indices", shape=(10**11,), dtype=np.int32, chunks=(1 << 16,))

    out["huge-decl"] = changed_copy(graph, folder, "huge-decl.h5", huge)
    out["scalar"] = changed_copy(
        graph, folder, "scalar.h5", lambda f: _replace(f, "indices", np.int32(5))
    )
    out["zero-width"] = changed_copy(graph, folder, "zero-width.h5", _zero_width)
    out["damaged"] = damaged_metadata(graph, folder)
    edges = folder / "edges.txt"
    edges.write_text("".join(f"{i} {(i * 7 + 3) % 40}\n" for i in range(40)))
    out["nofeat"] = folder / "nofeat.h5"
    with contextlib.redirect_stdout(io.StringIO()):
        assert run(["convert", str(edges), "-o", str(out["nofeat"])]) == 0
    return out


#: issue 35's bad inputs run at np 3 by tests/test_mpi_cli.py: name -> (`train` arguments,
#: ``{name}`` a file of its `files`, ``{g}`` the graph; the one line's needle)
ISSUE35 = {
    "damaged-1d": (["{damaged}", "--scheme", "1d"], "{damaged}: damaged HDF5 file"),
    "damaged-auto": (["{damaged}"], "{damaged}: damaged HDF5 file"),
    "damaged-part-p2p": (
        ["{g}", "--scheme", "p2p", "--partition", "{damaged-part}"],
        "{damaged-part}: damaged HDF5 file",
    ),
    "per-rank-missing": (
        ["{g}", "--scheme", "1d", "--per-rank", "{out}/missing/x.csv"],
        "--per-rank: no such directory",
    ),
    "scalar-1d": (["{scalar}", "--scheme", "1d"], "{scalar}: indices must be a 1-D array"),
    "graph-as-partition": (
        ["{g}", "--scheme", "p2p", "--partition", "{g}"],
        "{g}: is a gcntrain graph, not a partition file",
    ),
    "lr-nan-auto": (
        ["{g}", "--config", "{nan-toml}"],
        "--lr (lr in {nan-toml}) must be a finite number > 0, got nan",
    ),
    "lr-nan-1d": (
        ["{g}", "--scheme", "1d", "--config", "{nan-toml}"],
        "--lr (lr in {nan-toml}) must be a finite number > 0, got nan",
    ),
    "zero-width-1d": (
        ["{zero-width}", "--scheme", "1d"],
        "{zero-width}: attribute num_features is 16 but features has 0 columns",
    ),
}
