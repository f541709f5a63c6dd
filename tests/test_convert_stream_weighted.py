"""`convert` of edge lists with values builds the CSR row by row from blocks (issue 36):
tiny text blocks (many chunks) give the arrays of the whole-list build it replaced
(``coo_to_csr`` + ``symmetrize`` + ``set_self_loops`` over every entry at once), for SNAP and
CSV lists with a weight column (merged by maximum) and real, integer, symmetric and
skew-symmetric Matrix Market files (summed), with repeated entries and self-loops.

Sums of three or more repeated values are now taken in the file's order, where the whole-list
build took numpy's unstable sort order: files whose values sum exactly in any order (dyadic
values, integers) must give the old arrays byte for byte; files of arbitrary decimals give
byte for byte the whole-list build with a stable sort, and the old one to float32 rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import preprocess
from gcntrain.data.convert import convert_edges
from gcntrain.data.formats import chunks
from gcntrain.data.formats.chunks import line_blocks
from gcntrain.data.formats.textparse import parse_edges
from gcntrain.errors import FormatError
from gcntrain.kernels.edgevalues import pairwise_sum

OPTIONS = [
    {},
    {"symmetrize": True},
    {"self_loops": "drop"},
    {"self_loops": "add"},
    {"symmetrize": True, "self_loops": "add"},
]


def _values(rng, m: int, exact: bool, integer: bool = False) -> list[str]:
    if integer:
        return [str(int(v)) for v in rng.integers(-9, 10, m)]
    if exact:  # dyadic: every float32 sum of a few of them is exact, whatever the order
        return [repr(float(v) / 8) for v in rng.integers(-40, 41, m)]
    return [f"{v:.7g}" for v in rng.standard_normal(m) * 10.0 ** rng.integers(-2, 3, m)]


def _pairs(rng, ids: np.ndarray, m: int, lower: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`m` entries over a few pairs (many repeated three times or more) and self-loops;
    `lower` 1: mostly i >= j (symmetric storage), 2: i > j (skew)."""
    u, v = rng.choice(ids, m), rng.choice(ids, m)
    rep = rng.integers(0, m, m // 2)  # repeat earlier entries, shuffled in among the rest
    u[m // 2 :], v[m // 2 :] = u[rep], v[rep]
    u[::11] = v[::11]  # self-loops
    if lower:
        u, v = np.maximum(u, v), np.minimum(u, v)
        if lower == 1:  # a few in the upper triangle: summed with the lower's transposes
            u[::5], v[::5] = v[::5].copy(), u[::5].copy()
        if lower == 2:
            keep = u != v
            u, v = u[keep], v[keep]
    order = rng.permutation(u.size)
    return u[order], v[order]


def _write_files(tmp_path, seed: int, exact: bool) -> list[tuple]:
    """(path, format, duplicates) of one SNAP, one CSV and four Matrix Market files."""
    rng = np.random.default_rng(seed)
    out = []
    ids = np.sort(rng.choice(1000, 40, replace=False))  # sparse ids: relabelled
    u, v = _pairs(rng, ids, 500)
    w = _values(rng, u.size, exact)
    snap = tmp_path / f"w{seed}.txt"
    snap.write_text("# weighted\n" + "".join(f"{a}\t{b} {c}\n" for a, b, c in zip(u, v, w)))
    out.append((snap, "snap", "max"))
    csv = tmp_path / f"w{seed}.csv"
    csv.write_text("src,dst,w\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(u, v, w)))
    out.append((csv, "csv", "max"))
    ids = np.arange(1, 31)
    for name, field, symmetry, lower in (
        ("general", "real", "general", 0),
        ("integer", "integer", "general", 0),
        ("symmetric", "real", "symmetric", 1),
        ("skew", "real", "skew-symmetric", 2),
    ):
        u, v = _pairs(rng, ids, 400, lower)
        w = _values(rng, u.size, exact, integer=field == "integer")
        path = tmp_path / f"{name}{seed}.mtx"
        head = f"%%MatrixMarket matrix coordinate {field} {symmetry}\n% c\n30 30 {u.size}\n"
        path.write_text(head + "".join(f"{a} {b} {c}\n" for a, b, c in zip(u, v, w)))
        out.append((path, "mtx", "sum"))
    return out


def _whole_list(path, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The entry list in the old order (COO of the whole file; Matrix Market: the entries,
    then the transposes of a symmetric file's off-diagonal entries) and n."""
    text = path.read_bytes()
    if fmt != "mtx":
        start = text.index(b"\n") + 1  # the comment (snap) or header (csv) line
        src, dst, w, status, _ = parse_edges(text, "," if fmt == "csv" else None, start)
        assert status == 0
        ids = np.unique(np.concatenate([src, dst]))
        return np.searchsorted(ids, src), np.searchsorted(ids, dst), w, ids.size
    lines = text.split(b"\n")
    symmetry = lines[0].split()[4].decode()
    n = int(lines[2].split()[0])
    src, dst, w, status, _ = parse_edges(b"\n".join(lines[3:]))
    assert status == 0
    src, dst = src - 1, dst - 1
    if symmetry != "general":
        off = src != dst
        sign = -1 if symmetry == "skew-symmetric" else 1
        src, dst = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]])
        w = np.concatenate([w, sign * w[off]])
    return src, dst, w, n


def _merge(rows, cols, vals, n, duplicates, stable):
    """`coo_to_csr` with values as the converters had it; `stable`: its sort made stable."""
    if not stable:
        return preprocess.coo_to_csr(rows, cols, vals, n, n, duplicates)
    key = rows * n + cols
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    merge = np.add if duplicates == "sum" else np.maximum
    data = merge.reduceat(vals[order], starts).astype(np.float32)
    indptr = np.r_[0, np.cumsum(np.bincount(rows[order][starts], minlength=n))]
    return indptr.astype(np.int64), cols[order][starts].astype(np.int32), data


def _reference(path, fmt, duplicates, opts, stable):
    rows, cols, vals, n = _whole_list(path, fmt)
    indptr, indices, data = _merge(rows, cols, vals, n, duplicates, stable)
    if opts.get("symmetrize"):
        indptr, indices, data = preprocess.symmetrize(indptr, indices, data)
    loops = opts.get("self_loops", "keep")
    indptr, indices, data = preprocess.set_self_loops(indptr, indices, data, loops)
    symmetric = preprocess.is_symmetric(indptr, indices, data)
    return indptr, indices, data, symmetric


def _streamed(path, fmt, opts):
    g, counts = convert_edges(str(path), fmt, **opts)
    assert counts["self_loops"] == int(np.count_nonzero(g.indices == preprocess.csr_rows(g.indptr)))
    return g.indptr, g.indices, g.data, not g.directed


def _same(a, b) -> bool:
    """Same structure (bytes), values (equal as numbers: a zero's sign may differ, see
    `test_zeros_merge_alike_in_any_order`) and symmetry."""
    structure = all(np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip(a, b[:2]))
    return structure and np.array_equal(a[2], b[2]) and a[3] == b[3]


@pytest.mark.parametrize("exact", [True, False])
def test_weighted_lists_stream_to_the_whole_list_arrays(tmp_path, monkeypatch, exact):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64)
    files = _write_files(tmp_path, 7 if exact else 8, exact)
    assert len(list(line_blocks(str(files[0][0])))) > 50  # many chunks
    differ = repeats = 0
    for path, fmt, duplicates in files:
        for opts in OPTIONS:
            got = _streamed(path, fmt, opts)
            old = _reference(path, fmt, duplicates, opts, stable=False)
            assert got[2].dtype == np.float32 and got[1].dtype == np.int32
            if exact:  # the old arrays (values equal as numbers)
                assert _same(got, old), (path.name, opts)
                continue
            stable = _reference(path, fmt, duplicates, opts, stable=True)
            assert _same(got, stable), (path.name, opts)
            for mine, theirs in zip(got[:2], old[:2]):  # the old structure, to float32 rounding
                assert mine.tobytes() == theirs.tobytes(), (path.name, opts)
            np.testing.assert_allclose(got[2], old[2], rtol=2e-6, atol=1e-6)
            differ += int(np.count_nonzero(got[2] != old[2]))
            rows, cols, _, n = _whole_list(path, fmt)
            repeats = max(repeats, int(np.bincount(rows * n + cols).max()))
    if not exact:  # entries repeated three times and more were merged (and compared)
        assert repeats >= 3
        print(f"values that differ from the unstable whole-list sort: {differ}")


def test_pairwise_sum_is_numpys_reduceat():
    rng = np.random.default_rng(5)
    for size in (1, 2, 3, 7, 8, 9, 15, 16, 17, 100, 128, 129, 130, 300, 1031):
        a = (rng.standard_normal(size) * 10.0 ** rng.integers(-4, 5, size)).astype(np.float32)
        want = np.add.reduceat(a, [0])[0]
        got = a[0] + pairwise_sum(a, 1, size - 1) if size > 1 else a[0]
        assert np.float32(got).tobytes() == want.tobytes(), size


@pytest.mark.parametrize(
    "name, text, where",
    [
        ("neg.txt", "0 1 1.5\n1 2 2\n2 -3 1\n", "negative node id at line 3"),
        ("word.csv", "a,b,w\n0,1,1\n1,2,x\n", "unparsable line at line 3"),
        ("cols.txt", "0 1 1.5\n1 2\n", "wrong number of columns at line 2"),
        (
            "neg.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n-2 1 1\n",
            "negative node id at line 4",
        ),
    ],
)
def test_bad_weighted_lines_are_one_line_and_status_2(
    tmp_path, monkeypatch, capfd, name, text, where
):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4)
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FormatError, match=where):
        convert_edges(str(path))
    capfd.readouterr()
    out = tmp_path / "out.h5"
    assert run(["convert", str(path), "-o", str(out)]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and where in err[0] and str(path) in err[0], err
    assert not out.exists()


def test_zeros_merge_alike_in_any_order(tmp_path):
    """Merging by maximum keeps +0.0 over -0.0 whichever comes first (numpy's ``maximum``
    over the whole list kept the first after an unstable sort)."""
    files = []
    for i, text in enumerate(("0,1,-0\n0,1,0\n1,0,-0\n", "0,1,0\n0,1,-0\n1,0,-0\n")):
        files.append(tmp_path / f"z{i}.csv")
        files[-1].write_text(text)
    got = [convert_edges(str(f))[0].data for f in files]
    assert got[0].tobytes() == got[1].tobytes()
    assert not np.signbit(got[0][0]) and np.signbit(got[0][1])
