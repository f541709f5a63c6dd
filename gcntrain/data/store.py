"""Single-file HDF5 graph store (format "gcntrain-graph", version 1; see docs/format.md).

Also holds the small HDF5 helpers the sharded stores share: opening for read with errors mapped
to `FormatError`, atomic writes (temporary name + rename), and dataset read/write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import closing as _closing
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np

from gcntrain.data.graph import HASHED_ARRAYS, Graph
from gcntrain.data.read_whole import ArraysHash, StreamHash, hash_array, read_array
from gcntrain.data.validate import (
    FORMAT_VERSION,
    MASK_NAMES,
    check_format,
    validate_csr,
    validate_node_data,
    validate_values,
)
from gcntrain.errors import FormatError, InputError
from gcntrain.kernels.csr import csr_diagonal_count

GRAPH_FORMAT = "gcntrain-graph"

#: Largest number of columns for which column ids are stored as int32.
INT32_LIMIT = 2**31


# --------------------------------------------------------------------------- HDF5 helpers


def h5_file(path: str | os.PathLike, mode: str) -> h5py.File:
    """`h5py.File` without HDF5 file locking (unsupported on some parallel file systems).

    Safe here because writers never modify a visible file (temporary name + rename). Falls
    back to the default when the HDF5 library is too old for the locking option.
    """
    try:
        return h5py.File(path, mode, locking=False)
    except ValueError as e:
        if "locking" not in str(e).lower():
            raise
        return h5py.File(path, mode)


@contextmanager
def open_h5(path: str | os.PathLike, what: str = "file") -> Iterator[h5py.File]:
    """Open an HDF5 file for reading; map I/O failures to `InputError`/`FormatError`.

    Parameters
    ----------
    path : path-like
        File to open.
    what : str
        Kind of file, used in the message for a missing file ("no such graph file").

    Yields
    ------
    h5py.File
        The open file (closed on exit). An `OSError` raised while reading inside the block
        (truncated data) is also reported as a `FormatError`.
    """
    where = str(path)
    if not os.path.exists(where):
        raise InputError(f"no such {what}", where)
    if os.path.isdir(where):
        raise InputError(f"is a directory, expected an HDF5 {what}", where)
    try:
        f = h5_file(where, "r")
    except OSError:
        raise FormatError("not a readable HDF5 file (truncated or corrupt?)", where) from None
    try:
        yield f
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise FormatError("HDF5 read failed (truncated or corrupt?)", where) from None
    except RuntimeError as e:  # the HDF5 library's own errors: damaged metadata (B-trees)
        if isinstance(e, NotImplementedError | RecursionError):
            raise  # the reader's own, not the file's
        raise FormatError(f"damaged HDF5 file ({e})", where) from None
    except KeyError as e:  # h5py reports an object its damaged header cannot open so
        if "Unable to" not in str(e):
            raise
        raise FormatError(f"damaged HDF5 file ({e.args[0] if e.args else e})", where) from None
    finally:
        try:
            f.close()
        except Exception:  # closing a corrupt file can fail again; the error is reported
            pass


@contextmanager
def atomic_h5(path: str | os.PathLike) -> Iterator[h5py.File]:
    """An HDF5 file written to `path` whole or not at all (`gcntrain.data.atomic.h5_file`:
    streamed to a temporary, renamed when complete; a full disk is one `OutputError` and
    nothing is left behind).

    The parent directory must exist.
    """
    from gcntrain.data.atomic import h5_file as atomic_file

    target = Path(path)
    if not target.parent.is_dir():
        raise InputError(f"output directory '{target.parent}' does not exist", str(target))
    with atomic_file(target) as f:
        yield f


def write_dataset(
    f: h5py.File, name: str, a: np.ndarray | None, compression: str | None = None
) -> None:
    """Write array `a` as dataset `name` (skipped when None); bool arrays become uint8 0/1."""
    if a is None:
        return
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if compression is None or a.size == 0:
        f.create_dataset(name, data=a)
        return
    if a.ndim == 1:
        chunks: tuple[int, ...] = (min(a.shape[0], 1 << 18),)
    else:
        row_bytes = max(1, a.shape[1] * a.itemsize)
        chunks = (max(1, min(a.shape[0], (1 << 20) // row_bytes)), *a.shape[1:])
    f.create_dataset(name, data=a, chunks=chunks, compression=compression, shuffle=True)


def read_dataset(f: h5py.File, name: str, where: str, required: bool = True) -> np.ndarray | None:
    """Read dataset `name` whole; None when absent and not `required` (else `FormatError`)."""
    if name not in f:
        if required:
            raise FormatError(f"missing dataset '{name}'", where)
        return None
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise FormatError(f"'{name}' is not a dataset", where)
    try:
        return read_array(obj)  # read_direct into one preallocated array
    except (TypeError, ValueError) as e:
        raise FormatError(f"dataset '{name}' cannot be read as an array ({e})", where) from None


def read_mask(f: h5py.File, name: str, where: str) -> np.ndarray | None:
    """Read an optional 0/1 mask dataset (uint8 or bool enum), returned unconverted."""
    return read_dataset(f, name, where, required=False)


def int_attr(
    attrs: h5py.AttributeManager, name: str, where: str, default: int | None = None
) -> int:
    """Integer attribute `name`; `FormatError` when missing (and no default) or not an integer."""
    if name not in attrs:
        if default is not None:
            return default
        raise FormatError(f"missing attribute '{name}'", where)
    value = attrs[name]
    try:
        if np.ndim(value) != 0 or isinstance(value, (str, bytes)):
            raise TypeError
        out = int(value)
        if out != value:
            raise ValueError
        return out
    except (TypeError, ValueError):
        raise FormatError(f"attribute '{name}' is not an integer ({value!r})", where) from None


def str_attr(
    attrs: h5py.AttributeManager, name: str, where: str, default: str | None = None
) -> str:
    """String attribute `name` (bytes decoded as UTF-8)."""
    if name not in attrs:
        if default is not None:
            return default
        raise FormatError(f"missing attribute '{name}'", where)
    value = attrs[name]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def index_dtype(n_cols: int) -> type:
    """Column-id dtype for ids in ``[0, n_cols)``: int32 below 2**31, else int64."""
    return np.int32 if n_cols < INT32_LIMIT else np.int64


def to_mask(a: np.ndarray | None) -> np.ndarray | None:
    """A stored 0/1 mask as a bool array (None stays None)."""
    return None if a is None else np.asarray(a) != 0


# --------------------------------------------------------------------------- graph files


def normalize_graph(graph: Graph) -> Graph:
    """A copy of `graph` with the stored dtypes (docs/format.md), arrays shared when possible.

    indptr int64, indices int32 (int64 when n >= 2**31), data/features float32,
    labels int64, masks bool.
    """
    n = graph.n
    return Graph(
        indptr=np.ascontiguousarray(graph.indptr, dtype=np.int64),
        indices=np.ascontiguousarray(graph.indices, dtype=index_dtype(n)),
        data=None if graph.data is None else np.ascontiguousarray(graph.data, np.float32),
        features=None
        if graph.features is None
        else np.ascontiguousarray(graph.features, np.float32),
        labels=None if graph.labels is None else np.ascontiguousarray(graph.labels, np.int64),
        train_mask=to_mask(graph.train_mask),
        val_mask=to_mask(graph.val_mask),
        test_mask=to_mask(graph.test_mask),
        name=str(graph.name),
        directed=bool(graph.directed),
        num_classes=None if graph.num_classes is None else int(graph.num_classes),
        extra=dict(graph.extra),
    )


def validate_graph(graph: Graph, where: str) -> None:
    """Run every array check on an in-memory graph (same checks as on read)."""
    n = graph.n
    validate_csr(graph.indptr, graph.indices, n, where, n_rows=n)
    if graph.data is not None:
        validate_values(graph.data, graph.nnz, where)
    validate_node_data(
        n,
        where,
        features=graph.features,
        labels=graph.labels,
        num_classes=graph.num_classes,
        train_mask=graph.train_mask,
        val_mask=graph.val_mask,
        test_mask=graph.test_mask,
    )


def _extra_json(extra: dict) -> str:
    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return str(o)  # provenance only: an unknown object is kept as its text

    return json.dumps(extra, default=default, sort_keys=True)


def write_graph(path: str | os.PathLike, graph: Graph, *, compression: str | None = None) -> None:
    """Write `graph` to one HDF5 file (temporary name, then rename).

    Parameters
    ----------
    path : path-like
        Destination; its parent directory must exist.
    graph : Graph
        The graph; validated (after dtype normalisation) before anything is written.
    compression : {None, "gzip", "lzf"}
        None (default) writes contiguous datasets, fastest to read; "gzip" suits archival of
        sparse binary features (see docs/format.md for measurements).

    Raises
    ------
    FormatError
        The graph fails validation (message names the graph).
    InputError
        The parent directory does not exist.
    """
    if compression not in (None, "gzip", "lzf"):
        raise InputError(f"unknown compression '{compression}' (use gzip or lzf)")
    g = normalize_graph(graph)
    validate_graph(g, f"graph '{g.name}'")
    chash = g.content_hash()
    with atomic_h5(path) as f:
        write_dataset(f, "indptr", g.indptr, compression)
        write_dataset(f, "indices", g.indices, compression)
        write_dataset(f, "data", g.data, compression)
        write_dataset(f, "features", g.features, compression)
        write_dataset(f, "labels", g.labels, compression)
        for name in MASK_NAMES:
            write_dataset(f, name, getattr(g, name), compression)
        a = f.attrs
        a["format"] = GRAPH_FORMAT
        a["format_version"] = FORMAT_VERSION
        a["name"] = g.name
        a["n"] = g.n
        a["nnz"] = g.nnz
        a["directed"] = np.uint8(g.directed)
        a["self_loops"] = g.self_loop_count()
        a["num_classes"] = -1 if g.num_classes is None else g.num_classes
        a["num_features"] = g.num_features
        a["content_hash"] = chash
        if g.extra:
            a["extra"] = _extra_json(g.extra)


def read_graph(path: str | os.PathLike, *, validate: bool = True) -> Graph:
    """Read a graph file written by `write_graph`.

    Parameters
    ----------
    path : path-like
        The HDF5 file.
    validate : bool
        Run every check of docs/format.md (structure, node data, attributes against arrays,
        content hash). With False only the format/version attributes are checked.

    Returns
    -------
    Graph

    Raises
    ------
    FormatError
        One line naming the file and the first problem found.
    """
    where = str(path)
    with open_h5(path, "graph file") as f:
        check_format(f.attrs, GRAPH_FORMAT, where)
        check_declared_sizes(f, where)
        attrs = f.attrs
        n = int_attr(attrs, "n", where)
        nnz = int_attr(attrs, "nnz", where)
        num_classes = int_attr(attrs, "num_classes", where, default=-1)
        name = str_attr(attrs, "name", where, default=Path(where).stem)
        directed = bool(int_attr(attrs, "directed", where, default=0))
        stored_hash = str_attr(attrs, "content_hash", where)
        extra: dict = {}
        if "extra" in attrs:
            try:
                extra = json.loads(str_attr(attrs, "extra", where))
            except ValueError:
                raise FormatError("attribute 'extra' is not valid JSON", where) from None
            if not isinstance(extra, dict):
                raise FormatError("attribute 'extra' is not a JSON object", where)
        # the content hash runs on a worker thread beside the reads and checks (`ArraysHash`;
        # dropped unfinished when a check fails)
        hashed = ArraysHash() if validate else None
        got = {}
        for key in HASHED_ARRAYS:  # indptr, indices, data, features, labels, masks
            got[key] = read_dataset(f, key, where, required=key in ("indptr", "indices"))
            if hashed is not None:  # as the `Graph` holds it: masks as bool
                hashed.add(key, to_mask(got[key]) if key in MASK_NAMES else got[key])
        indptr, indices, data = got["indptr"], got["indices"], got["data"]
        features, labels = got["features"], got["labels"]
        masks = {m: got[m] for m in MASK_NAMES}
        self_loops = int_attr(attrs, "self_loops", where, default=-1)
        num_features = int_attr(attrs, "num_features", where, default=-1)
    ncls = None if num_classes < 0 else num_classes
    if validate:
        if n < 0 or nnz < 0:
            raise FormatError(f"negative n ({n}) or nnz ({nnz}) attribute", where)
        validate_csr(indptr, indices, n, where, n_rows=n, nnz=nnz)
        if data is not None:
            validate_values(data, nnz, where)
        validate_node_data(n, where, features=features, labels=labels, num_classes=ncls, **masks)
        nf = 0 if features is None else int(features.shape[1])
        if num_features >= 0 and num_features != nf:
            raise FormatError(
                f"attribute num_features is {num_features} but features has {nf} columns", where
            )
    graph = Graph(
        indptr=indptr,
        indices=indices,
        data=data,
        features=features,
        labels=labels,
        train_mask=to_mask(masks["train_mask"]),
        val_mask=to_mask(masks["val_mask"]),
        test_mask=to_mask(masks["test_mask"]),
        name=name,
        directed=directed,
        num_classes=ncls,
        extra=extra,
    )
    if validate:
        loops = int(csr_diagonal_count(graph.indptr, graph.indices, 0))  # one Numba pass
        if self_loops >= 0 and loops != self_loops:
            raise FormatError(
                f"attribute self_loops is {self_loops} but the adjacency has "
                f"{loops} diagonal entries",
                where,
            )
        actual = hashed.hexdigest()  # = arrays_hash(graph)
        if actual != stored_hash:
            raise FormatError(
                f"content hash mismatch (attribute {stored_hash[:12]}..., "
                f"arrays hash to {actual[:12]}...)",
                where,
            )
    return graph


def arrays_hash(graph: Graph) -> str:
    """`Graph.content_hash` fed slice by slice: the id arrays cast to int64 one slice at a
    time and every buffer hashed in place (no whole-array copies; `hash_array`)."""
    import hashlib

    h = hashlib.sha256()
    for name in HASHED_ARRAYS:
        hash_array(h, name, getattr(graph, name))
    return h.hexdigest()


def _plain(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


#: bytes read per slice when a file's content hash is checked by streaming
HASH_CHUNK = 64 << 20


def check_declared_sizes(f: h5py.File, where: str) -> None:
    """Before any array is read: no dataset may declare more elements than the attributes
    ``n`` and ``nnz`` allow (a damaged or hostile file can declare 1e11 entries in a few
    KB: reading or hashing them would take minutes and all memory), and the 1-D arrays must
    be 1-D.  Smaller or otherwise wrong arrays are left to the full validation, which names
    the first problem."""
    n = int_attr(f.attrs, "n", where, default=-1)
    nnz = int_attr(f.attrs, "nnz", where, default=-1)
    if n < 0:
        return
    nf = int_attr(f.attrs, "num_features", where, default=-1)
    limits = {"indptr": n + 1, "labels": n, **{m: n for m in MASK_NAMES}}
    if nnz >= 0:
        limits.update(indices=nnz, data=nnz)
    if nf >= 0:
        limits["features"] = n * nf
    for name, most in limits.items():
        ds = f.get(name)
        if not isinstance(ds, h5py.Dataset):
            continue
        if name != "features" and ds.ndim != 1:
            raise FormatError(f"{name} must be a 1-D array (shape is {ds.shape})", where)
        if ds.size > most:
            raise FormatError(
                f"dataset '{name}' declares {ds.size:,} elements where the attributes "
                f"(n = {n}, nnz = {nnz}, num_features = {nf}) allow at most {most:,}",
                where,
            )


def verify_content_hash(path: str | os.PathLike) -> None:
    """Check a graph file's content hash by streaming its arrays in slices (the memory of one
    slice, not of the graph): the hash `Graph.content_hash` computes on the arrays
    `read_graph` returns (masks as bool, ids as int64).  `FormatError` with `read_graph`'s
    message on a missing dataset or a mismatch."""
    where = str(path)
    from gcntrain.data.stream_validate import DiagonalCount, Stream, check_num_features

    with open_h5(path, "graph file") as f, _closing(StreamHash(ahead=1)) as h:
        check_format(f.attrs, GRAPH_FORMAT, where)
        n = int_attr(f.attrs, "n", where)
        nnz = int_attr(f.attrs, "nnz", where)
        ncls = int_attr(f.attrs, "num_classes", where, default=-1)
        check_declared_sizes(f, where)
        stored = str_attr(f.attrs, "content_hash", where)
        diagonal = None
        for name in HASHED_ARRAYS:
            h.update(name.encode())
            if name not in f:
                if name in ("indptr", "indices"):
                    raise FormatError(f"missing dataset '{name}'", where)
                h.update(b"\x00none")
                continue
            ds = f[name]
            if not isinstance(ds, h5py.Dataset):
                raise FormatError(f"'{name}' is not a dataset", where)

            def convert(a, name=name):
                a = np.asarray(a)
                if name in MASK_NAMES:
                    return a != 0
                if name in ("indptr", "indices"):
                    return a.astype(np.int64, copy=False)
                return a

            # validated as it is hashed: the rules and lines of `read_graph`, for the
            # ranks that read only their own rows (`gcntrain.data.stream_validate`)
            check = Stream(name, ds, n, nnz, None if ncls < 0 else ncls, where)
            check.check_kind()
            shape = ds.shape
            out_dtype = convert(np.zeros((0,), dtype=ds.dtype)).dtype
            h.update(str(out_dtype).encode() + str(shape).encode())
            row = max(int(np.prod(shape[1:], dtype=np.int64)) * ds.dtype.itemsize, 1)
            step = max(HASH_CHUNK // row, 1)
            if name == "indices":
                diagonal = DiagonalCount(f["indptr"])
            for lo in range(0, shape[0], step):
                raw = ds[lo : lo + step]
                check.check_slice(np.asarray(raw), lo)
                if name == "indices":
                    diagonal.add(np.asarray(raw), lo)
                # hashed on the worker thread while the next slice is read and checked
                h.update(np.ascontiguousarray(convert(raw)).reshape(-1).view(np.uint8))
            check.finish()
        nf_declared = int_attr(f.attrs, "num_features", where, default=-1)
        check_num_features(nf_declared, f.get("features"), where)  # as read_graph, pre-hash
        diagonal.check(int_attr(f.attrs, "self_loops", where, default=-1), where)
        actual = h.hexdigest()
    if actual != stored:
        raise FormatError(
            f"content hash mismatch (attribute {stored[:12]}..., arrays hash to {actual[:12]}...)",
            where,
        )


def read_meta(path: str | os.PathLike) -> dict:
    """Root attributes and dataset shapes/dtypes of a graph file, without reading arrays.

    Returns
    -------
    dict
        ``{"attrs": {name: value}, "datasets": {name: {"shape": [...], "dtype": str}}}``.
    """
    where = str(path)
    with open_h5(path, "graph file") as f:
        check_format(f.attrs, GRAPH_FORMAT, where)
        check_declared_sizes(f, where)
        attrs = {k: _plain(v) for k, v in f.attrs.items()}
        datasets = {
            k: {"shape": list(ds.shape), "dtype": str(ds.dtype)}
            for k, ds in f.items()
            if isinstance(ds, h5py.Dataset)
        }
    return {"attrs": attrs, "datasets": datasets}
