"""Read `manifest.json` and check it completely (docs/format.md) into a `Manifest`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gcntrain.data.shards.fields import check_ranges, get_count, get_field, is_int
from gcntrain.data.shards.layout import (
    KINDS,
    MANIFEST_NAME,
    STORE_FORMAT,
    block_label,
    nodes_label,
    plain_name,
    shard_label,
)
from gcntrain.data.shards.manifest import Manifest
from gcntrain.data.validate import check_format
from gcntrain.errors import FormatError, InputError


def open_manifest(path: str | os.PathLike, *, check_files: bool = True) -> Manifest:
    """Read and validate a store manifest.

    Parameters
    ----------
    path : path-like
        The store directory or its `manifest.json`.
    check_files : bool
        Also check that every listed file exists (a rank holding only its own shard passes
        False; the shard readers check their own file).

    Returns
    -------
    Manifest

    Raises
    ------
    FormatError
        Invalid JSON, wrong format/version/kind, inconsistent ranges or counts, a listed file
        missing.
    """
    p = Path(path)
    if p.is_dir():
        p = p / MANIFEST_NAME
        if not p.exists():
            raise InputError(
                f"no shard manifest ({MANIFEST_NAME}) in this directory", str(p.parent)
            )
    where = str(p)
    if not p.exists():
        raise InputError("no such manifest file", where)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise FormatError("manifest is not UTF-8 text", where) from None
    except json.JSONDecodeError as e:
        raise FormatError(f"manifest is not valid JSON (line {e.lineno}: {e.msg})", where) from None
    if not isinstance(d, dict):
        raise FormatError("manifest is not a JSON object", where)
    check_format(d, STORE_FORMAT, where)
    kind = get_field(d, "kind", str, where)
    if kind not in KINDS:
        raise FormatError(f"unknown store kind '{kind}' (expected rows, blocks2d or edges)", where)
    n = get_count(d, "n", where)
    nnz = get_count(d, "nnz", where)
    num_classes = get_field(d, "num_classes", int, where, nullable=True)
    m = Manifest(
        path=p,
        kind=kind,
        n=n,
        nnz=nnz,
        name=get_field(d, "name", str, where),
        num_features=get_count(d, "num_features", where),
        num_classes=num_classes,
        directed=get_field(d, "directed", bool, where),
        has_data=get_field(d, "has_data", bool, where),
        source_content_hash=get_field(d, "source_content_hash", str, where),
        content_hash=get_field(d, "content_hash", str, where),
        perm_file=get_field(d, "perm_file", str, where, nullable=True),
        shards=get_field(d, "shards", list, where),
        raw=d,
    )
    if m.perm_file is not None and not plain_name(m.perm_file):
        raise FormatError(f"perm_file '{m.perm_file}' must be a plain file name", where)
    for idx, entry in enumerate(m.shards):
        if not isinstance(entry, dict):
            raise FormatError(f"shard entry {idx} is not an object", where)
    if kind == "rows":
        _check_rows_manifest(m, d, where)
    elif kind == "edges":
        _check_edges_manifest(m, d, where)
    else:
        _check_blocks_manifest(m, d, where)
    total = sum(get_count(e, "nnz", where, what="shard entry") for e in m.shards)
    if total != nnz:
        raise FormatError(f"shard nnz sum to {total} but the manifest says nnz = {nnz}", where)
    if check_files:
        _check_files_exist(m)
    return m


def as_manifest(manifest: Manifest | str | os.PathLike, *, check_files: bool) -> Manifest:
    """`manifest` itself when already open, else `open_manifest(manifest, check_files=...)`."""
    if isinstance(manifest, Manifest):
        return manifest
    return open_manifest(manifest, check_files=check_files)


def _check_entry_file(entry: dict, label: str, where: str, hash_what: str | None = None) -> None:
    """The `file` (a plain name) and `content_hash` fields of a file's entry."""
    name = get_field(entry, "file", str, where, what=label)
    if not plain_name(name):
        raise FormatError(f"{label} file name '{name}' must be a plain file name", where)
    get_field(entry, "content_hash", str, where, what=hash_what or label)


def _check_rows_manifest(m: Manifest, d: dict, where: str) -> None:
    m.num_parts = get_count(d, "num_parts", where)
    if m.num_parts != len(m.shards):
        raise FormatError(
            f"num_parts is {m.num_parts} but {len(m.shards)} shards are listed", where
        )
    if m.perm_file is None:
        raise FormatError(f"a {m.kind} store needs a perm_file", where)
    ranges = []
    for k, e in enumerate(m.shards):
        if get_field(e, "id", int, where, what="shard entry") != k:
            raise FormatError(f"shard entry {k} has id {e['id']} (ids must be 0, 1, ...)", where)
        _check_entry_file(e, shard_label(k), where, hash_what=f"shard {k} entry")
        ranges.append([e.get("row_start"), e.get("row_stop")])
    check_ranges(ranges, m.n, "row", where)


def _check_edges_manifest(m: Manifest, d: dict, where: str) -> None:
    """As a rows store (root ranges), plus each shard's clone count (at least its roots)."""
    _check_rows_manifest(m, d, where)
    for k, e in enumerate(m.shards):
        clones = get_count(e, "clones", where, what=f"shard {k} entry")
        if clones < e["row_stop"] - e["row_start"]:
            raise FormatError(
                f"shard {k} lists {clones} clones but roots [{e['row_start']}, {e['row_stop']})",
                where,
            )


def _check_blocks_manifest(m: Manifest, d: dict, where: str) -> None:
    grid = get_field(d, "grid", list, where)
    if len(grid) != 2 or not all(is_int(v) for v in grid) or min(grid) < 1:
        raise FormatError(f"grid must be [r, c] with r, c >= 1 (is {grid})", where)
    r, c = grid
    m.grid = (r, c)
    m.row_ranges = check_ranges(get_field(d, "row_ranges", list, where), m.n, "row", where)
    m.col_ranges = check_ranges(get_field(d, "col_ranges", list, where), m.n, "column", where)
    if len(m.row_ranges) != r or len(m.col_ranges) != c:
        raise FormatError(
            f"grid is {r} x {c} but {len(m.row_ranges)} row and "
            f"{len(m.col_ranges)} column ranges are listed",
            where,
        )
    m.row_perm = get_field(d, "row_perm", bool, where)
    m.col_perm = get_field(d, "col_perm", bool, where)
    if (m.row_perm or m.col_perm) and m.perm_file is None:
        raise FormatError("the store is permuted but has no perm_file", where)
    if len(m.shards) != r * c:
        raise FormatError(f"grid is {r} x {c} but {len(m.shards)} shards are listed", where)
    for idx, e in enumerate(m.shards):
        i, j = divmod(idx, c)
        label = block_label(i, j)
        if (
            get_field(e, "block_row", int, where, what=label) != i
            or get_field(e, "block_col", int, where, what=label) != j
        ):
            raise FormatError(
                f"shard entry {idx} is block ({e['block_row']}, {e['block_col']}),"
                f" expected ({i}, {j}) (row-major order)",
                where,
            )
        _check_entry_file(e, label, where)
        got = [e.get("row_start"), e.get("row_stop"), e.get("col_start"), e.get("col_stop")]
        if got != m.row_ranges[i] + m.col_ranges[j]:
            raise FormatError(
                f"inconsistent ranges: {label} lists rows/cols {got}, the grid "
                f"gives {m.row_ranges[i] + m.col_ranges[j]}",
                where,
            )
    m.node_files = get_field(d, "node_files", list, where)
    if len(m.node_files) != r:
        raise FormatError(
            f"grid has {r} block rows but {len(m.node_files)} node files are listed", where
        )
    for i, e in enumerate(m.node_files):
        label = nodes_label(i)
        if not isinstance(e, dict) or e.get("block_row") != i:
            raise FormatError(f"node_files entry {i} is not block row {i}", where)
        _check_entry_file(e, label, where)
        if [e.get("row_start"), e.get("row_stop")] != m.row_ranges[i]:
            raise FormatError(
                f"inconsistent ranges: {label} lists rows "
                f"[{e.get('row_start')}, {e.get('row_stop')}), the grid gives "
                f"{m.row_ranges[i]}",
                where,
            )


def _check_files_exist(m: Manifest) -> None:
    for e in m.shards:
        if m.kind != "blocks2d":
            label = shard_label(e["id"])
        else:
            label = block_label(e["block_row"], e["block_col"])
        m.listed_file(e["file"], f"{label} file")
    for i, e in enumerate(m.node_files):
        m.listed_file(e["file"], nodes_label(i))
    if m.perm_file is not None:
        m.listed_file(m.perm_file, "perm file")
