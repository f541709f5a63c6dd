"""The permutation file of a store (`perm.h5`): writing and validated reading."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gcntrain.data.shards.layout import PERM_FORMAT
from gcntrain.data.shards.manifest import Manifest
from gcntrain.data.shards.manifest_check import as_manifest
from gcntrain.data.store import atomic_h5, int_attr, open_h5, read_dataset, str_attr, write_dataset
from gcntrain.data.validate import FORMAT_VERSION, check_format, validate_permutation
from gcntrain.errors import FormatError


def write_perm_file(path: Path, n: int, source_hash: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the permutation `arrays` (as int64) and the root attributes of a perm file."""
    with atomic_h5(path) as f:
        for name, a in arrays.items():
            write_dataset(f, name, a.astype(np.int64, copy=False))
        f.attrs["format"] = PERM_FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["n"] = n
        f.attrs["source_content_hash"] = source_hash


def _perm_pairs(m: Manifest) -> list[tuple[str, str]]:
    """(permutation, inverse) dataset names the store's perm file holds."""
    if m.kind in ("rows", "edges"):
        return [("perm", "iperm")]
    return ([("row_perm", "row_iperm")] if m.row_perm else []) + (
        [("col_perm", "col_iperm")] if m.col_perm else []
    )


def read_perm(manifest: Manifest | str | os.PathLike) -> dict[str, np.ndarray]:
    """The permutations of a store (`perm.h5`), validated; {} for an unpermuted blocks2d store.

    Keys: ``perm``/``iperm`` (rows) or ``row_perm``/``row_iperm``/``col_perm``/``col_iperm``
    (blocks2d, those present). ``perm[new] = original``, ``iperm[original] = new``.  An edges
    store adds its cut: ``edge_part`` (graph entry order), ``root`` (original ids) and, when
    the graph's rows were not sorted by column, ``entry_order`` (`read_cut_arrays`).
    """
    m = as_manifest(manifest, check_files=False)
    if m.perm_file is None:
        return {}
    path = m.listed_file(m.perm_file, "perm file")
    where = str(path)
    pairs = _perm_pairs(m)
    out = {}
    with open_h5(path, "perm file") as f:
        check_format(f.attrs, PERM_FORMAT, where)
        if int_attr(f.attrs, "n", where) != m.n:
            raise FormatError(
                f"perm file has n = {int(f.attrs['n'])} but the manifest says {m.n}", where
            )
        if str_attr(f.attrs, "source_content_hash", where) != m.source_content_hash:
            raise FormatError("perm file belongs to a different store", where)
        for p, ip in pairs:
            out[p] = read_dataset(f, p, where)
            out[ip] = read_dataset(f, ip, where)
        if m.kind == "edges":
            out.update(read_cut_arrays(f, m, where))
    for p, ip in pairs:
        validate_permutation(out[p], m.n, where, p)
        validate_permutation(out[ip], m.n, where, ip)
        if not np.array_equal(out[ip][out[p]], np.arange(m.n)):
            raise FormatError(f"{ip} is not the inverse of {p}", where)
        out[p] = out[p].astype(np.int64, copy=False)
        out[ip] = out[ip].astype(np.int64, copy=False)
    if m.kind == "edges" and not np.array_equal(
        out["perm"], np.argsort(out["root"], kind="stable")
    ):
        raise FormatError("perm does not sort the vertices by root part (see root)", where)
    return out


def read_cut_arrays(f, m: Manifest, where: str) -> dict[str, np.ndarray]:
    """``edge_part``, ``root`` and the optional ``entry_order`` of an edges store's perm file,
    checked (part ids in ``[0, P)``, lengths nnz / n, `entry_order` a permutation)."""
    out = {}
    for name, size in (("edge_part", m.nnz), ("root", m.n)):
        a = read_dataset(f, name, where)
        _check_part_ids(a, size, m.num_parts, name, where)
        out[name] = a.astype(np.int64, copy=False)
    order = read_dataset(f, "entry_order", where, required=False)
    if order is not None:
        validate_permutation(order, m.nnz, where, "entry_order")
        out["entry_order"] = order.astype(np.int64, copy=False)
    return out


def _check_part_ids(a: np.ndarray, size: int, P: int, name: str, where: str) -> None:
    """A 1-D integer array of length `size` with values in ``[0, P)``."""
    if not isinstance(a, np.ndarray) or a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise FormatError(f"{name} must be a 1-D integer array", where)
    if a.shape[0] != size:
        raise FormatError(f"{name} has length {a.shape[0]}, expected {size}", where)
    if a.size and (int(a.min()) < 0 or int(a.max()) >= P):
        raise FormatError(f"{name} has part ids outside [0, {P})", where)
