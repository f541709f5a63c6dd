"""`gcntrain train`'s human summary: the per-phase exchange lines of a hierarchical scheme
(hier) show their sizes in a unit that shows the value (Cora's are a few hundred bytes, which
printed as ``0.000 + 0.000 MB``)."""

from __future__ import annotations

import pytest

from gcntrain.cli.train_cmd import byte_size, exchange_rows


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (46, "46 B"),
        (92.5, "92 B"),
        (999, "999 B"),
        (1000, "1.00 kB"),
        (1249, "1.25 kB"),
        (12_345, "12.3 kB"),
        (416_000, "416 kB"),
        (999_499, "999 kB"),
        (999_500, "1.00 MB"),
        (3_400_000, "3.40 MB"),
        (1.5e9, "1.50 GB"),
        (2e12, "2.00 TB"),
    ],
)
def test_byte_size_picks_the_unit_that_shows_the_value(n, text):
    assert byte_size(n) == text


def _phase(prefix: str, pre: float, pre_param: float, post: float, post_param: float) -> dict:
    return {
        f"{prefix}.pre_bytes": pre,
        f"{prefix}.pre_param_bytes": pre_param,
        f"{prefix}.post_bytes": post,
        f"{prefix}.post_param_bytes": post_param,
        f"{prefix}.t_pre": 0.00033,
        f"{prefix}.t_post": 0.00675,
    }


def test_hier_exchange_rows_on_cora_sizes_are_not_zero():
    # the medians of `mpiexec -n 4 gcntrain train cora.h5 --scheme hier --quant-bits 2 ...`
    s = {"scheme": "hier", **_phase("L1.fwd", 46, 184, 208, 832)}
    s.update(_phase("L0.fwd", 92, 184, 416, 832))
    rows = exchange_rows(s)
    assert [label for label, _ in rows] == ["L0.fwd pre / post", "L1.fwd pre / post"]
    text = rows[0][1]
    assert text.startswith("92 B + 184 B in 0.33 ms / 416 B + 832 B in 6.75 ms (")
    assert "0.000" not in text
    assert rows[1][1].startswith("46 B + 184 B in 0.33 ms / 208 B + 832 B in")


def test_exchange_rows_scale_to_megabytes_and_are_absent_without_the_keys():
    (row,) = exchange_rows(_phase("L0.bwd", 826_368, 0, 1_666_624, 0))
    assert row[1].startswith("826 kB + 0 B in 0.33 ms / 1.67 MB + 0 B in 6.75 ms")
    assert exchange_rows({"scheme": "p2p", "bytes_sent_max": 10}) == []


def test_threads_beyond_the_pool_are_said(capsys):
    """--threads above what Numba's pool holds (sized when the process started) trains on
    the pool and says so, instead of quietly running fewer (issue 51, item 8)."""
    from gcntrain.cli.main import run
    from gcntrain.kernels.threads import max_threads

    assert run(["train", "--epochs", "1", "--threads", "1000"]) == 0
    err = capsys.readouterr().err
    assert f"note: --threads 1000: a rank here runs at most {max_threads()} Numba threads" in err
    assert run(["train", "--epochs", "1", "--threads", str(max_threads())]) == 0
    assert "note: --threads" not in capsys.readouterr().err


def test_huge_times_print_with_an_exponent():
    """A profile with an absurd rate (1e-300 Gelem/s) predicts 1e295 ms: printed as
    3.467e+295 ms, not 300 digits (issue 51, item 12)."""
    from gcntrain.cli.display import _ms

    assert _ms(0.5) == "500.000 ms" and _ms(999.0) == "999000.000 ms"
    assert _ms(3.4671e292) == "3.467e+295 ms"
    assert _ms(-2e4) == "-2e+07 ms"


@pytest.mark.mpi
def test_threads_beyond_the_pool_are_said_once_at_np_3():
    """The --threads note at np 3: one line (rank 0's), and the job trains."""
    from tests.mpi.launch import gcntrain_exe, run_mpi

    argv = [*gcntrain_exe(), "train", "--epochs", "1", "--threads", "1000", "--json"]
    res = run_mpi(3, argv, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    notes = [ln for ln in res.stderr.splitlines() if ln.startswith("note: --threads 1000")]
    assert len(notes) == 1, res.stderr
