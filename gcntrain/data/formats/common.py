"""Helpers shared by the format readers: file checks, decompression, Graph assembly."""

from __future__ import annotations

import os
import zlib

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.preprocess import coo_to_csr
from gcntrain.errors import FormatError, InputError


def require_file(path: str) -> None:
    """Raise `InputError` unless `path` is an existing regular file."""
    if not os.path.exists(path):
        raise InputError("no such file", path)
    if not os.path.isfile(path):
        raise InputError("not a regular file", path)


def read_bytes(path: str) -> bytes:
    """The file contents, gunzipped when the file starts with the gzip magic bytes."""
    require_file(path)
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gunzip(raw)
        except zlib.error as e:
            raise FormatError(f"corrupt gzip data ({e})", path) from None
    return raw


def gunzip(raw: bytes) -> bytes:
    """Decompress gzip bytes, including files of several concatenated gzip members."""
    parts = []
    while raw:
        d = zlib.decompressobj(31)
        parts.append(d.decompress(raw))
        if not d.eof:
            raise zlib.error("truncated gzip stream")
        raw = d.unused_data.lstrip(b"\x00")
    return b"".join(parts)


def dataset_name(path: str) -> str:
    """File name without directory and known suffixes (``a/b/soc-X.txt.gz`` -> ``soc-X``)."""
    base = os.path.basename(path.rstrip("/"))
    for suffix in (".gz", ".txt", ".edges", ".el", ".csv", ".mtx", ".npz"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    return base


def graph_from_coo(
    rows: np.ndarray,
    cols: np.ndarray,
    data: np.ndarray | None,
    n: int,
    *,
    name: str,
    duplicates: str = "max",
    **node_data,
) -> Graph:
    """Assemble a `Graph` from (possibly duplicated, unsorted) COO entries of an n x n matrix."""
    indptr, indices, vals = coo_to_csr(rows, cols, data, n, n, duplicates=duplicates)
    return Graph(indptr=indptr, indices=indices, data=vals, name=name, directed=True, **node_data)
