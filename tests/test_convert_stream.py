"""`convert` of edge lists parses block by block: tiny blocks give the same files as one
block, for SNAP (comments, blank lines, tabs and spaces, CRLF, gzip members), Matrix Market
(pattern, real, integer; general, symmetric, skew) and CSV (header, weights) inputs."""

from __future__ import annotations

import gzip
from pathlib import Path

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.convert import convert_source
from gcntrain.data.formats import chunks
from gcntrain.data.formats.chunks import line_blocks
from gcntrain.errors import FormatError

SNAP = (
    "# Directed graph: toy\n# FromNodeId\tToNodeId\n0\t1\n1 2\n\n0\t 1\n  3 0\n"
    "# a comment between edges\n\n2\t2\n4\t1\n17 17\n9\t4\n4 9\n"
)
SNAP_W = "0 1 0.5\n1 2 2e0\n\n0 1 1.5\n2 0 -1.25\n3 3 4\n1 0 3\n"
CSV = "# c\nsrc,dst,weight\n0,1,0.5\n1 , 2,2e0\n0,1,1.5\n\n2,0,-1.25\n2,2,1\n7,1,2\n"
CSV_BARE = "# c\n\n0, 1\n1 ,2\n2,0\n2,2\n5,1\n"
MTX = {
    "pattern_symmetric.mtx": "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n"
    "5 5 6\n2 1\n3 2\n3 3\n5 1\n2 1\n% trailing\n4 4\n",
    "real_general.mtx": "%%MatrixMarket matrix coordinate real general\n%\n4 4 6\n"
    "1 2 0.25\n2 1 3\n3 3 -1e-1\n1 2 0.5\n4 1 0\n1 2 0.125\n",
    "real_symmetric.mtx": "%%MatrixMarket matrix coordinate real symmetric\n4 4 6\n"
    "2 1 0.1\n3 2 0.2\n3 3 5\n2 1 0.3\n4 1 0\n2 1 0.7\n",
    "integer_general.mtx": "%%MatrixMarket matrix coordinate integer general\n3 3 4\n"
    "1 2 3\n2 3 -4\n1 2 5\n3 3 7\n",
    "real_skew.mtx": "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n"
    "2 1 1.5\n3 1 -2\n",
}
OPTIONS = [[], ["--symmetrize"], ["--self-loops", "drop"], ["--symmetrize", "--self-loops", "add"]]


def _files(d: Path) -> list[Path]:
    out = []
    for name, text in [("toy.txt", SNAP), ("w.txt", SNAP_W), ("e.csv", CSV), ("b.csv", CSV_BARE)]:
        (d / name).write_text(text)
        out.append(d / name)
    crlf = d / "crlf.txt.gz"  # CRLF endings, three gzip members
    raw = SNAP.replace("\n", "\r\n").encode()
    crlf.write_bytes(b"".join(gzip.compress(raw[a:b]) for a, b in ((0, 7), (7, 50), (50, None))))
    out.append(crlf)
    for name, text in MTX.items():
        (d / name).write_text(text)
        out.append(d / name)
    return out


def _file_state(path: Path) -> tuple:
    with h5py.File(path) as f:
        attrs = {k: str(v) for k, v in f.attrs.items()}
        arrays = {k: f[k][()].tobytes() + str(f[k].dtype).encode() for k in f.keys()}
    return attrs, arrays


def _convert(src: Path, out: Path, opts: list[str]) -> tuple:
    assert run(["convert", str(src), "-o", str(out), *opts]) == 0
    state = _file_state(out)
    out.unlink()
    return state


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_tiny_blocks_give_the_same_files(tmp_path, monkeypatch, chunk):
    files = _files(tmp_path)
    wanted = {}
    for src in files:
        for opts in OPTIONS:
            wanted[src.name, tuple(opts)] = _convert(src, tmp_path / "one.h5", opts)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk)
    for src in files:
        for opts in OPTIONS:
            got = _convert(src, tmp_path / "tiny.h5", opts)
            assert got == wanted[src.name, tuple(opts)], (src.name, opts, chunk)


def test_streamed_file_equals_write_graph_of_convert_source(tmp_path):
    """The CLI's streamed writer gives the file `write_graph` gives for the same graph,
    with and without synthetic node data (`random_node_data`)."""
    from gcntrain.data.generate import random_node_data
    from gcntrain.data.store import write_graph

    for src in _files(tmp_path):
        for opts, synth in (([], None), (["--symmetrize"], (3, 2, 5))):
            extra = [] if synth is None else ["--features", "3", "--classes", "2", "--seed", "5"]
            got = _convert(src, tmp_path / "s.h5", opts + extra)
            g = convert_source(str(src), symmetrize=bool(opts))
            if synth is not None:
                g = random_node_data(g, *synth)
            write_graph(tmp_path / "w.h5", g)
            assert got == _file_state(tmp_path / "w.h5"), (src.name, opts)


def test_line_blocks_cover_the_file_in_whole_lines(tmp_path, monkeypatch):
    path = tmp_path / "lines.txt.gz"
    text = "".join(f"{i} {i + 1}\n" for i in range(500)) + "last 1"  # no final newline
    path.write_bytes(gzip.compress(text[:999].encode()) + gzip.compress(text[999:].encode()))
    for size in (1, 5, 64, 1 << 20):
        blocks = list(line_blocks(str(path), size))
        assert b"".join(b for b, _ in blocks).decode() == text
        line = 1
        for b, first in blocks:
            assert first == line and (b.endswith(b"\n") or b is blocks[-1][0])
            line += b.count(b"\n")


def test_errors_name_the_line_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4)
    path = tmp_path / "bad.txt"
    path.write_text("# c\n0 1\n1 2\n\n2 3 1.0\n")
    with pytest.raises(FormatError, match=r"wrong number of columns at line 5"):
        convert_source(str(path))
    path.write_text("0 1\n1 2\n2 x\n")
    with pytest.raises(FormatError, match=r"unparsable line at line 3"):
        convert_source(str(path))
    (tmp_path / "e.csv").write_text("a,b\n0,1\n1;2\n")
    with pytest.raises(FormatError, match="line 3"):
        convert_source(str(tmp_path / "e.csv"))
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n")
    with pytest.raises(FormatError, match="outside 1..3"):
        convert_source(str(bad))
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n3 1\n")
    with pytest.raises(FormatError, match="2 entries where the size line says 3"):
        convert_source(str(bad))
    path.write_bytes(gzip.compress(b"0 1\n" * 100)[:-12])
    with pytest.raises(FormatError, match="corrupt gzip"):
        convert_source(str(path), "snap")


def test_sparse_ids_relabelled_by_sort_and_by_bitmap_alike(tmp_path):
    """Ids far apart (sorted distinct ids) and close (a bitmap) number the nodes alike."""
    rng = np.random.default_rng(3)
    u, v = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    near, far = tmp_path / "near.txt", tmp_path / "far.txt"
    near.write_text("".join(f"{a} {b}\n" for a, b in zip(u, v)))
    far.write_text("".join(f"{a * 10**12} {b * 10**12}\n" for a, b in zip(u, v)))
    g1, g2 = convert_source(str(near)), convert_source(str(far))
    np.testing.assert_array_equal(g1.indptr, g2.indptr)
    np.testing.assert_array_equal(g1.indices, g2.indices)
    ids = g2.extra["original_ids"]
    assert ids.dtype == np.int64 and ids[-1] == int(max(u.max(), v.max())) * 10**12
