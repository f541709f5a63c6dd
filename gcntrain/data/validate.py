"""Pure checks on graph arrays; each failure raises one `FormatError` naming `where`.

Shared by the graph store, the sharded stores and the converters. Every function takes the
arrays as read and a `where` string (usually the file path) that prefixes the message.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gcntrain.errors import FormatError, InputError

#: Version of every file format gcntrain reads and writes (docs/format.md).
FORMAT_VERSION = 1

#: Rows examined per step by the chunked finiteness check (bounds temporary memory).
_CHUNK_ELEMS = 1 << 24

MASK_NAMES = ("train_mask", "val_mask", "test_mask")


def _as_str(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def check_format(attrs: Mapping, expected: str, where: str) -> None:
    """Check the root attributes `format` and `format_version` of a gcntrain file.

    Parameters
    ----------
    attrs : mapping
        Root attributes (h5py `AttributeManager` or a dict from a JSON manifest).
    expected : str
        Required value of `format`, e.g. ``"gcntrain-graph"``.
    where : str
        File named in the error.
    """
    if "format" not in attrs:
        raise FormatError(
            f"not a gcntrain file (no 'format' attribute; expected '{expected}')", where
        )
    fmt = _as_str(attrs["format"])
    if fmt != expected:
        raise FormatError(f"format is '{fmt}', expected '{expected}'", where)
    if "format_version" not in attrs:
        raise FormatError("missing 'format_version' attribute", where)
    version = attrs["format_version"]
    try:
        version_int = int(version)
    except (TypeError, ValueError):
        raise FormatError(f"format_version {version!r} is not an integer", where) from None
    if version_int != FORMAT_VERSION:
        raise FormatError(
            f"format version {version_int} is not supported "
            f"(this gcntrain reads version {FORMAT_VERSION})",
            where,
        )


def _require_int_1d(a: np.ndarray, name: str, where: str) -> None:
    if not isinstance(a, np.ndarray) or a.ndim != 1:
        shape = getattr(a, "shape", None)
        raise FormatError(f"{name} must be a 1-D array (shape is {shape})", where)
    if not np.issubdtype(a.dtype, np.integer):
        raise FormatError(f"{name} must have an integer dtype (is {a.dtype})", where)


def validate_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    n_cols: int,
    where: str,
    *,
    n_rows: int | None = None,
    nnz: int | None = None,
) -> None:
    """Check a CSR structure.

    Parameters
    ----------
    indptr, indices : numpy.ndarray
        Row pointers and column ids.
    n_cols : int
        Column ids must lie in ``[0, n_cols)``.
    where : str
        File named in the error.
    n_rows, nnz : int, optional
        Expected row count (``len(indptr) == n_rows + 1``) and entry count.

    Raises
    ------
    FormatError
        On the first violated property: dtypes, lengths, ``indptr[0] != 0``, a decrease in
        `indptr` (the row is named), ``indptr[-1] != len(indices)``, a column out of range (row
        and value named).
    """
    _require_int_1d(indptr, "indptr", where)
    _require_int_1d(indices, "indices", where)
    if indptr.shape[0] < 1:
        raise FormatError("indptr is empty (needs n + 1 >= 1 entries)", where)
    if n_rows is not None and indptr.shape[0] != n_rows + 1:
        raise FormatError(
            f"indptr has length {indptr.shape[0]}, expected n + 1 = {n_rows + 1}", where
        )
    if int(indptr[0]) != 0:
        raise FormatError(f"indptr[0] is {int(indptr[0])}, expected 0", where)
    if indptr.shape[0] > 1:
        dec = np.flatnonzero(indptr[1:] < indptr[:-1])
        if dec.size:
            row = int(dec[0])
            raise FormatError(
                f"indptr is not monotone (decreases at row {row}: "
                f"{int(indptr[row])} -> {int(indptr[row + 1])})",
                where,
            )
    last = int(indptr[-1])
    if last != indices.shape[0]:
        raise FormatError(f"indptr[-1] is {last} but indices has {indices.shape[0]} entries", where)
    if nnz is not None and last != nnz:
        raise FormatError(f"the arrays hold {last} entries but nnz is {nnz}", where)
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= n_cols:
            bad = int(np.flatnonzero((indices < 0) | (indices >= n_cols))[0])
            row = int(np.searchsorted(indptr, bad, side="right")) - 1
            raise FormatError(
                f"column index {int(indices[bad])} out of range [0, {n_cols}) "
                f"in row {row} (entry {bad})",
                where,
            )


def _first_nonfinite_row(x: np.ndarray) -> int:
    """Index of the first row of 2-D `x` holding a NaN or infinity, or -1."""
    step = max(1, _CHUNK_ELEMS // max(1, x.shape[1]))
    for start in range(0, x.shape[0], step):
        block = x[start : start + step]
        ok = np.isfinite(block).all(axis=1)
        if not ok.all():
            return start + int(np.argmin(ok))
    return -1


def validate_values(data: np.ndarray, nnz: int, where: str, name: str = "data") -> None:
    """Check edge values: 1-D floating array of length `nnz`, all finite."""
    if not isinstance(data, np.ndarray) or data.ndim != 1:
        raise FormatError(
            f"{name} must be a 1-D array (shape is {getattr(data, 'shape', None)})", where
        )
    if not np.issubdtype(data.dtype, np.floating):
        raise FormatError(f"{name} must have a float dtype (is {data.dtype})", where)
    if data.shape[0] != nnz:
        raise FormatError(f"{name} has {data.shape[0]} entries, expected nnz = {nnz}", where)
    if data.size and not np.isfinite(data).all():
        bad = int(np.flatnonzero(~np.isfinite(data))[0])
        raise FormatError(f"{name} has a non-finite value ({data[bad]}) at entry {bad}", where)


def validate_features(features: np.ndarray, n: int, where: str) -> None:
    """Check node features: 2-D floating, `n` rows, finite (first bad row named)."""
    if not isinstance(features, np.ndarray) or features.ndim != 2:
        raise FormatError(
            f"features must be a 2-D array (n x f), shape is {getattr(features, 'shape', None)}",
            where,
        )
    if not np.issubdtype(features.dtype, np.floating):
        raise FormatError(f"features must have a float dtype (is {features.dtype})", where)
    if features.shape[0] != n:
        raise FormatError(f"features has {features.shape[0]} rows, expected n = {n}", where)
    row = _first_nonfinite_row(features)
    if row >= 0:
        col = int(np.flatnonzero(~np.isfinite(features[row]))[0])
        raise FormatError(
            f"features has a non-finite value ({features[row, col]}) in row {row} (column {col})",
            where,
        )


def validate_labels(labels: np.ndarray, n: int, num_classes: int | None, where: str) -> None:
    """Check labels: 1-D integer of length `n` in ``[-1, num_classes)``."""
    _require_int_1d(labels, "labels", where)
    if labels.shape[0] != n:
        raise FormatError(f"labels has {labels.shape[0]} entries, expected n = {n}", where)
    if not labels.size:
        return
    low = np.flatnonzero(labels < -1)
    if low.size:
        node = int(low[0])
        raise FormatError(
            f"label {int(labels[node])} of node {node} is < -1 (-1 marks unlabeled)", where
        )
    if num_classes is None:
        if int(labels.max()) >= 0:
            raise FormatError("labels are present but num_classes is not set", where)
        return
    high = np.flatnonzero(labels >= num_classes)
    if high.size:
        node = int(high[0])
        raise FormatError(
            f"label {int(labels[node])} of node {node} is >= num_classes ({num_classes})", where
        )


def validate_mask(mask: np.ndarray, n: int, name: str, where: str) -> None:
    """Check one node mask: 1-D bool or integer 0/1 of length `n`."""
    if not isinstance(mask, np.ndarray) or mask.ndim != 1:
        raise FormatError(
            f"{name} must be a 1-D array (shape is {getattr(mask, 'shape', None)})", where
        )
    if mask.shape[0] != n:
        raise FormatError(f"{name} has length {mask.shape[0]}, expected n = {n}", where)
    if mask.dtype == np.bool_:
        return
    if not np.issubdtype(mask.dtype, np.integer):
        raise FormatError(f"{name} must be bool or 0/1 integers (dtype is {mask.dtype})", where)
    bad = np.flatnonzero((mask != 0) & (mask != 1))
    if bad.size:
        node = int(bad[0])
        raise FormatError(
            f"{name} has value {int(mask[node])} at node {node} (expected 0 or 1)", where
        )


def validate_masks_disjoint(masks: Mapping[str, np.ndarray | None], where: str) -> None:
    """Check that the given masks share no node (names the two masks and one node)."""
    present = [(k, np.asarray(v, dtype=bool)) for k, v in masks.items() if v is not None]
    for a in range(len(present)):
        for b in range(a + 1, len(present)):
            (na, ma), (nb, mb) = present[a], present[b]
            both = np.flatnonzero(ma & mb)
            if both.size:
                nodes = f"{both.size} node{'s' if both.size > 1 else ''}"
                raise FormatError(
                    f"{na} and {nb} overlap ({nodes} in both, e.g. node {int(both[0])})",
                    where,
                )


def validate_node_data(
    n: int,
    where: str,
    *,
    features: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    num_classes: int | None = None,
    train_mask: np.ndarray | None = None,
    val_mask: np.ndarray | None = None,
    test_mask: np.ndarray | None = None,
) -> None:
    """Check every present node array for `n` nodes (absent arrays are skipped).

    Parameters
    ----------
    n : int
        Number of nodes (rows).
    where : str
        File named in the error.
    features, labels, num_classes, train_mask, val_mask, test_mask
        As in `Graph`.
    """
    if num_classes is not None and num_classes < 0:
        raise FormatError(f"num_classes is {num_classes} (must be >= 0)", where)
    if features is not None:
        validate_features(features, n, where)
    if labels is not None:
        validate_labels(labels, n, num_classes, where)
    masks = {"train_mask": train_mask, "val_mask": val_mask, "test_mask": test_mask}
    for name, m in masks.items():
        if m is not None:
            validate_mask(m, n, name, where)
    validate_masks_disjoint(masks, where)


def validate_permutation(perm: np.ndarray, n: int, where: str, name: str = "perm") -> None:
    """Check that `perm` is a permutation of ``0..n-1``."""
    _require_int_1d(perm, name, where)
    if perm.shape[0] != n:
        raise FormatError(f"{name} has length {perm.shape[0]}, expected n = {n}", where)
    if not n:
        return
    if int(perm.min()) < 0 or int(perm.max()) >= n:
        bad = int(np.flatnonzero((perm < 0) | (perm >= n))[0])
        raise FormatError(f"{name}[{bad}] = {int(perm[bad])} is out of range [0, {n})", where)
    seen = np.zeros(n, dtype=bool)
    seen[perm] = True
    if not seen.all():
        missing = int(np.argmin(seen))
        raise FormatError(f"{name} is not a permutation (id {missing} never appears)", where)


def validate_partition(part: np.ndarray, n: int, num_parts: int, where: str) -> None:
    """Check a partition vector: 1-D integer of length `n` with values in ``[0, num_parts)``."""
    _require_int_1d(part, "part", where)
    if part.shape[0] != n:
        raise FormatError(
            f"partition has {part.shape[0]} entries but the graph has {n} nodes", where
        )
    if num_parts < 1:
        raise FormatError(f"number of parts is {num_parts} (must be >= 1)", where)
    if part.size and (int(part.min()) < 0 or int(part.max()) >= num_parts):
        bad = int(np.flatnonzero((part < 0) | (part >= num_parts))[0])
        raise FormatError(f"part[{bad}] = {int(part[bad])} is out of range [0, {num_parts})", where)


def require_node_data(features, labels, train_mask, where: str) -> None:
    """Training needs node features, labels and a train mask: `InputError` naming what the
    graph lacks (e.g. "graph has no labels and no train mask")."""
    missing = [
        name
        for name, a in (("node features", features), ("labels", labels), ("train mask", train_mask))
        if a is None
    ]
    if missing:
        raise InputError(
            f"graph has no {' and no '.join(missing)}; training needs node features, "
            "labels and train/val/test masks",
            where,
        )
