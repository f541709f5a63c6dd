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
    if m.kind == "rows":
        return [("perm", "iperm")]
    return ([("row_perm", "row_iperm")] if m.row_perm else []) + (
        [("col_perm", "col_iperm")] if m.col_perm else []
    )


def read_perm(manifest: Manifest | str | os.PathLike) -> dict[str, np.ndarray]:
    """The permutations of a store (`perm.h5`), validated; {} for an unpermuted blocks2d store.

    Keys: ``perm``/``iperm`` (rows) or ``row_perm``/``row_iperm``/``col_perm``/``col_iperm``
    (blocks2d, those present). ``perm[new] = original``, ``iperm[original] = new``.
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
    for p, ip in pairs:
        validate_permutation(out[p], m.n, where, p)
        validate_permutation(out[ip], m.n, where, ip)
        if not np.array_equal(out[ip][out[p]], np.arange(m.n)):
            raise FormatError(f"{ip} is not the inverse of {p}", where)
        out[p] = out[p].astype(np.int64, copy=False)
        out[ip] = out[ip].astype(np.int64, copy=False)
    return out
