"""Bad graph files and shard stores: `gcntrain inspect` exits 2 with ONE error line naming the
file and the problem. Bad files are built by writing arrays directly with h5py."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import shards as S
from gcntrain.data.graph import Graph
from gcntrain.data.store import write_graph
from gcntrain.data.validate import validate_csr, validate_node_data
from gcntrain.errors import FormatError

N = 10


def ring_arrays() -> dict[str, np.ndarray]:
    """A valid 10-node ring with features, labels (3 classes) and disjoint masks."""
    rng = np.random.default_rng(0)
    cols = np.sort(np.stack([(np.arange(N) - 1) % N, (np.arange(N) + 1) % N], axis=1), axis=1)
    return {
        "indptr": np.arange(0, 2 * N + 1, 2, dtype=np.int64),
        "indices": cols.ravel().astype(np.int32),
        "features": rng.standard_normal((N, 3)).astype(np.float32),
        "labels": rng.integers(0, 3, N).astype(np.int64),
        "train_mask": (np.arange(N) < 4).astype(np.uint8),
        "test_mask": (np.arange(N) >= 6).astype(np.uint8),
    }


def write_raw(path: Path, arrays: dict, **attrs) -> Path:
    """Write `arrays` and consistent root attributes (overridable) straight with h5py."""
    g = Graph(**{k: (v != 0 if k.endswith("mask") else v) for k, v in arrays.items()})
    base = {
        "format": "gcntrain-graph",
        "format_version": 1,
        "name": "ring",
        "n": len(arrays["indptr"]) - 1,
        "nnz": len(arrays["indices"]),
        "num_classes": 3,
        "content_hash": g.content_hash(),
    }
    base.update(attrs)
    with h5py.File(path, "w") as f:
        for k, v in arrays.items():
            f.create_dataset(k, data=v)
        for k, v in base.items():
            f.attrs[k] = v
    return path


def assert_one_error_line(capsys, argv: list[str], named: Path | str, *needles: str) -> str:
    code = run(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("gcntrain: error: "), err
    assert str(named) in err, err
    for needle in needles:
        assert needle in err, err
    return err


def inspect_fails(capsys, path: Path, *needles: str, named: Path | None = None) -> str:
    return assert_one_error_line(capsys, ["inspect", str(path)], named or path, *needles)


def test_raw_writer_makes_a_valid_file(tmp_path, capsys):
    """Guard: the unmodified raw file passes, so each failure below is due to its defect."""
    path = write_raw(tmp_path / "ok.h5", ring_arrays())
    assert run(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["num_nodes"] == N and info["num_edges"] == N


# --------------------------------------------------------------------------- graph files


def test_truncated_hdf5_file(tmp_path, capsys):
    path = tmp_path / "g.h5"
    g = Graph(**{k: (v != 0 if k.endswith("mask") else v) for k, v in ring_arrays().items()})
    write_graph(path, g)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    inspect_fails(capsys, path, "not a readable HDF5 file (truncated or corrupt?)")


def test_not_an_hdf5_file(tmp_path, capsys):
    path = tmp_path / "g.h5"
    path.write_text("hello\n")
    inspect_fails(capsys, path, "not a readable HDF5 file")


def test_wrong_format_version(tmp_path, capsys):
    path = write_raw(tmp_path / "g.h5", ring_arrays(), format_version=7)
    inspect_fails(capsys, path, "format version 7 is not supported (this gcntrain reads version 1)")


def test_missing_format_attribute(tmp_path, capsys):
    path = write_raw(tmp_path / "g.h5", ring_arrays())
    with h5py.File(path, "a") as f:
        del f.attrs["format"]
    inspect_fails(capsys, path, "no 'format' attribute")


def test_non_monotone_indptr(tmp_path, capsys):
    a = ring_arrays()
    a["indptr"][4] = 3  # indptr[3] = 6 > indptr[4] = 3: decreases at row 3
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, "indptr is not monotone (decreases at row 3")


def test_column_index_out_of_range(tmp_path, capsys):
    a = ring_arrays()
    a["indices"][9] = N  # entry 9 lies in row 4
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, f"column index {N} out of range [0, {N})", "row 4")


def test_indptr_length_differs_from_n(tmp_path, capsys):
    path = write_raw(tmp_path / "g.h5", ring_arrays(), n=N + 1)
    inspect_fails(capsys, path, f"indptr has length {N + 1}, expected n + 1 = {N + 2}")


def test_nan_feature(tmp_path, capsys):
    a = ring_arrays()
    a["features"][6, 2] = np.nan
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, "features has a non-finite value (nan) in row 6")


def test_integer_features_rejected(tmp_path, capsys):
    a = ring_arrays()
    a["features"] = np.ones((N, 3), np.int32)
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, "features must have a float dtype")


def test_label_not_below_num_classes(tmp_path, capsys):
    a = ring_arrays()
    a["labels"][5] = 3
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, "label 3 of node 5 is >= num_classes (3)")


def test_overlapping_masks(tmp_path, capsys):
    a = ring_arrays()
    a["test_mask"][2] = 1  # node 2 is also in train_mask
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, "train_mask and test_mask overlap", "node 2")


def test_mask_of_wrong_length(tmp_path, capsys):
    a = ring_arrays()
    a["train_mask"] = np.ones(N - 1, np.uint8)
    path = write_raw(tmp_path / "g.h5", a)
    inspect_fails(capsys, path, f"train_mask has length {N - 1}, expected n = {N}")


def test_content_hash_mismatch(tmp_path, capsys):
    path = write_raw(tmp_path / "g.h5", ring_arrays(), content_hash="ab" * 32)
    inspect_fails(capsys, path, "content hash mismatch")


def test_missing_file(tmp_path, capsys):
    inspect_fails(capsys, tmp_path / "nope.h5", "no such file")


# --------------------------------------------------------------------------- shard stores


def _store(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    a = ring_arrays()
    g = Graph(**{k: (v != 0 if k.endswith("mask") else v) for k, v in a.items()})
    S.write_row_shards(g, rng.integers(0, 3, N), tmp_path / "store", num_parts=3)
    return tmp_path / "store"


def _edit_manifest(store: Path, edit) -> Path:
    path = store / "manifest.json"
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    return path


def test_missing_shard_file(tmp_path, capsys):
    store = _store(tmp_path)
    (store / "shard-00001.h5").unlink()
    inspect_fails(
        capsys,
        store,
        "shard 1 file 'shard-00001.h5' listed in manifest is missing",
        named=store / "manifest.json",
    )


def test_manifest_shard_mismatch(tmp_path, capsys):
    """Manifest consistent by itself, but it moves the boundary between shards 0 and 1."""
    store = _store(tmp_path)

    def shift(d):
        d["shards"][0]["row_stop"] += 1
        d["shards"][1]["row_start"] += 1

    _edit_manifest(store, shift)
    m = S.open_manifest(store)  # the manifest alone is valid
    e = m.shards[0]
    inspect_fails(
        capsys,
        store,
        f"shard 0 has rows [0, {e['row_stop'] - 1}) but the manifest says [0, {e['row_stop']})",
        named=store / "shard-00000.h5",
    )


def test_inconsistent_row_ranges_in_manifest(tmp_path, capsys):
    store = _store(tmp_path)
    _edit_manifest(
        store, lambda d: d["shards"][2].update(row_start=d["shards"][2]["row_start"] + 1)
    )
    inspect_fails(capsys, store / "manifest.json", "inconsistent row ranges: range 2 starts at")


def test_wrong_manifest_version(tmp_path, capsys):
    store = _store(tmp_path)
    _edit_manifest(store, lambda d: d.update(format_version=7))
    inspect_fails(capsys, store, "format version 7 is not supported", named=store / "manifest.json")


def test_manifest_not_json(tmp_path, capsys):
    store = _store(tmp_path)
    (store / "manifest.json").write_text('{"format": ')
    inspect_fails(capsys, store / "manifest.json", "manifest is not valid JSON")


def test_shard_from_another_store(tmp_path, capsys):
    store = _store(tmp_path)
    with h5py.File(store / "shard-00002.h5", "a") as f:
        f.attrs["source_content_hash"] = "cd" * 32
    inspect_fails(
        capsys, store, "shard 2 belongs to a different store", named=store / "shard-00002.h5"
    )


def test_tampered_shard_data(tmp_path, capsys):
    store = _store(tmp_path)
    with h5py.File(store / "shard-00000.h5", "a") as f:
        f["features"][0, 0] = 123.0
    inspect_fails(capsys, store, "content hash mismatch", named=store / "shard-00000.h5")


def test_truncated_shard_file(tmp_path, capsys):
    store = _store(tmp_path)
    p = store / "shard-00001.h5"
    p.write_bytes(p.read_bytes()[:600])
    inspect_fails(capsys, store, "not a readable HDF5 file", named=p)


# --------------------------------------------------------------------------- pure checks


def test_validate_functions_name_the_place():
    with pytest.raises(FormatError, match=r"^src: indptr\[0\] is 1, expected 0$"):
        validate_csr(np.array([1, 2]), np.array([0, 0]), 3, "src")
    with pytest.raises(FormatError, match="must have an integer dtype"):
        validate_csr(np.array([0, 1]), np.array([0.5]), 3, "src")
    with pytest.raises(FormatError, match=r"label -2 of node 1 is < -1"):
        validate_node_data(2, "src", labels=np.array([0, -2]), num_classes=2)
    with pytest.raises(FormatError, match=r"val_mask has value 2 at node 0"):
        validate_node_data(2, "src", val_mask=np.array([2, 0], np.uint8))
    validate_node_data(
        2,
        "src",
        labels=np.array([-1, 1]),
        num_classes=2,
        train_mask=np.array([True, False]),
        test_mask=np.array([0, 1]),
    )
