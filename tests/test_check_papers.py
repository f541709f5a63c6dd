"""scripts/check_papers.py: the form of its output (every row listed, ratio = predicted /
paper as printed, reasons for the rows it does not price), never a predicted value.

Held-out rows are never priced here: they appear only under ``--dry`` (nothing planned) and,
for the shape checks, with a fake pricer whose numbers are made up (no plan, no model)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_papers.py"
sys.path.insert(0, str(ROOT / "scripts"))

from papercheck import evaluate, rows  # noqa: E402
from papercheck.price import Priced  # noqa: E402


def run(*args: str, cache: Path) -> str:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def heads(text: str) -> dict[str, str]:
    """{row id: its first line} of the output's row blocks."""
    ids = {r.id for r in rows.read_rows()}
    out = {}
    for line in text.splitlines():
        first = line.split("  ", 1)[0]
        if first in ids:
            assert first not in out, f"{first} printed twice"
            out[first] = line
    return out


def test_dry_held_out_lists_every_row_and_plans_nothing(tmp_path):
    cache = tmp_path / "cache"
    text = run("--dry", "--half", "held-out", cache=cache)
    held = [r for r in rows.read_rows() if r.half == "held-out"]
    got = heads(text)
    assert set(got) == {r.id for r in held}
    assert len(held) == 112
    for line in got.values():
        assert re.search(r"  (would price \((numeric|shape)\)|not priced: \S.*)$", line), line
    # a priced row says what it compares and how; a reason is one line
    assert text.count("    compares: ") == sum("would price" in x for x in got.values())
    summary = text[text.index("== summary") :]
    m = re.search(r"held-out: 112 rows; would price (\d+) numeric, (\d+) shapes", summary)
    assert m
    nots = re.search(r"not priced (\d+): (.*)", summary)
    assert int(m.group(1)) + int(m.group(2)) + int(nots.group(1)) == 112
    assert "GPU run, no profile" in nots.group(2)
    assert not cache.exists()  # nothing generated, nothing partitioned


def test_every_row_has_a_recipe():
    """Each row of each half goes through a family's branch (or a reason)."""
    for r in rows.read_rows():
        rec = rows.recipe(r)
        assert rec.kind in ("numeric", "shape", "none"), r.id
        if rec.kind == "none":
            assert rec.reason and rec.reason_key in rows.REASONS, r.id
        else:
            assert rec.compares and rec.how, r.id
        if rec.kind == "numeric":
            assert rec.paper_value is not None and rec.paper_value > 0, r.id


def _ratio_lines(text: str) -> list[tuple[str, float, float, float]]:
    out = []
    for line in text.splitlines():
        m = re.match(
            r"(\S+)  \[\S+\]  paper (\S+) .*  predicted (\S+)  ratio (\S+)  "
            r"(within \dx|BEYOND 4x)$",
            line,
        )
        if m:
            out.append((m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))))
    return out


def test_informing_rows_print_ratio_and_what_dominates(tmp_path):
    """tofud (single steps), Table 5 (calibration), a GPU row, a row without a stand-in and
    soc-Slashdot0902's METIS rows (a partition statistic and a ratio of two plans)."""
    prefixes = (
        "tofud",
        "supergcn-t5-pre_aggr",
        "cagnet-s6b-reddit",
        "distgnn-t4-proteins-p4",
        "hypergraph-t2-soc-slashdot0902-gp",
    )
    text = run("--rows", ",".join(prefixes), cache=tmp_path / "cache")
    want = [
        r
        for r in rows.read_rows()
        if r.half in ("informing", "calibration") and r.id.startswith(prefixes)
    ]
    got = heads(text)
    assert set(got) == {r.id for r in want}  # held-out rows of these prefixes left out
    priced = _ratio_lines(text)
    assert {p[0] for p in priced} >= {
        "tofud-ajima2018-put-latency-8b",
        "supergcn-t5-pre_aggr-time-p2048",
        "hypergraph-t2-soc-slashdot0902-gp-p512-time_ratio",
        "hypergraph-t2-soc-slashdot0902-gp-p512-volume_avg",
    }
    for rid, paper, predicted, ratio in priced:
        assert ratio == pytest.approx(predicted / paper, rel=2e-3), rid
    blocks = text.split("\n")
    for rid, *_ in priced:
        i = next(k for k, x in enumerate(blocks) if x.startswith(rid + "  "))
        assert blocks[i + 1].startswith("    dominates: "), rid
    assert "cagnet-s6b-reddit-2d-scaling-stop  [scaling_shape]  not priced: GPU run" in text
    assert "distgnn-t4-proteins-p4-replication  [replication_factor]  not priced: no stand-in" in (
        text
    )
    assert "supergcn-t5-pre_aggr-vol-p2048  [comm_volume]  not priced: the volume is the " in text
    summary = text[text.index("== summary") :]
    assert re.search(r"informing: \d+ rows; priced \d+ numeric: within 2x \d+", summary)
    assert "calibration: 2 rows" in summary


class FakePricer:
    """Made-up predictions (no plan, no model): each run's epoch grows with its P as
    `epoch_of` says, communication is half of it."""

    def __init__(self, epoch_of):
        self.epoch_of = epoch_of

    def run(self, run):
        e = self.epoch_of(run)
        parts = {"spmm": 0.3 * e, "alltoall": 0.5 * e, "wait": 0.2 * e}
        return Priced(e, parts, 0.5 * e, 0.1, 0.0)


SHAPES = [r for r in rows.read_rows() if rows.recipe(r).kind == "shape"]


@pytest.mark.parametrize("row", SHAPES, ids=[r.id for r in SHAPES])
def test_shape_checks_print_a_shape_and_a_verdict(row):
    """Every sweep check runs on made-up numbers and says pass or fail with a shape."""
    rec = rows.recipe(row)
    out = evaluate.outcome(rec, FakePricer(lambda r: 1.0 / r.P + 0.001 * (r.scheme == "1d")))
    assert out.verdict in ("pass", "fail") and out.shape


def test_rmat_standin_without_isolated_vertices_keeps_its_size():
    """`min_degree=1` (the hypergraph paper's edge-list graphs): every vertex has an edge,
    and the stand-in keeps its nodes and stored entries, symmetric, without self-loops."""
    import numpy as np
    import scipy.sparse as sp
    from papers_findings import rmat_graph

    plain = rmat_graph("t", 5000, 40000, seed=3)
    g = rmat_graph("t", 5000, 40000, seed=3, min_degree=1)
    assert (np.diff(plain.indptr) == 0).any()  # R-MAT leaves vertices without an edge
    assert (np.diff(g.indptr) > 0).all()
    assert (g.n, g.nnz) == (plain.n, plain.nnz)
    A = sp.csr_matrix((np.ones(g.nnz), g.indices, g.indptr), shape=(g.n, g.n))
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0 and A.max() == 1
    again = rmat_graph("t", 5000, 40000, seed=3, min_degree=1)
    assert np.array_equal(again.indices, g.indices) and np.array_equal(again.indptr, g.indptr)
