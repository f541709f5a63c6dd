"""The prepared GPU check (`scripts/gpu_check.py`, docs/gpu.md) does not rot: its smallest
dry-run part runs here on the host emulation, and the comparison it makes on a GPU flags
what is outside the issue's tolerances."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def fake_run(weights: dict, losses: list, predictions):
    history = [
        SimpleNamespace(loss=v, val_loss=v, train_acc=0.5, val_acc=0.5, test_acc=0.5)
        for v in losses
    ]
    result = SimpleNamespace(weights=[weights], history=history, predictions=predictions)
    return SimpleNamespace(result=result)


def test_the_gpu_comparison_takes_the_issue_tolerances():
    from gpu_check_schemes import TOL, compare

    rng = np.random.default_rng(0)
    w = {"W0": rng.standard_normal((5, 3)), "W1": rng.standard_normal((3, 2))}
    pred = rng.integers(0, 3, 20)
    cpu = fake_run(w, [1.0, 0.9], pred)
    near = fake_run({k: v * (1 + 1e-6) for k, v in w.items()}, [1.0, 0.9 * (1 + 1e-6)], pred)
    figures, problems = compare(cpu, near, TOL["float32"])
    assert problems == [] and 0 < figures["weights_rel"] < 1e-5, (figures, problems)
    _, problems = compare(cpu, near, TOL["float64"])
    assert any("weights differ" in p for p in problems)
    assert any("losses differ" in p for p in problems)
    flipped = pred.copy()
    flipped[3] = (flipped[3] + 1) % 3
    _, problems = compare(cpu, fake_run(w, [1.0, 0.9], flipped), TOL["float64"])
    assert problems == ["predictions differ at 1 of 20 rows"]


def test_the_first_and_the_other_cases_cover_the_device_cases():
    from gpu_check import scheme_cases

    from tests.test_device_schemes import device_cases

    first, rest = scheme_cases(2, True), scheme_cases(2, False)
    assert len(first) == len({c[0] for c in first})  # one case per scheme
    assert {c[0] for c in first} == {c[0] for c in device_cases(2)}
    assert sorted(map(repr, first + rest)) == sorted(map(repr, device_cases(2)))


def test_the_dry_run_k1_part_writes_its_report(tmp_path, monkeypatch):
    monkeypatch.delenv("GCNTRAIN_CACHE_DIR", raising=False)
    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "run", str(out)]
    cmd += ["--emulated", "--parts", "k1", "--k1-rows", "3000", "--budget", "120"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads((out / "gpu_check.json").read_text())
    k1 = report["parts"]["k1"]
    assert list(report["parts"]) == ["k1"] and "error" not in k1, k1
    assert k1["rows"] == 3000 and k1["nnz"] == 3000 * 16
    for dtype in ("float32", "float64"):
        assert k1[f"equal_scipy_{dtype}"]["ok"], k1
    assert set(k1["mean_ms"]) >= {"gcntrain CsrOnDevice", "gcntrain backend.spmm"}
    assert report["summary"]["k1 ok"] is True
    assert "== k1" in (out / "gpu_check.log").read_text()
