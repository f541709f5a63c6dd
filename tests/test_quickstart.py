"""README.md's `## Quick start` runs as written: its ```sh block, line by line, in a fresh
scratch directory beside a `shared/` (the layout beside the checkout the README assumes), with
`gcntrain` and `mpiexec` from this environment; the figure it draws is a PNG whose legend has
every phase of the run's median steady epoch, each in its colour."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.readme_lines import REPO, cli_env, command_lines, fenced_block, shared_dir

pytestmark = pytest.mark.mpi


def quickstart_lines(readme: str) -> list[str]:
    """The commands of the first ```sh block under `## Quick start` (blank and comment lines
    left out)."""
    return command_lines(fenced_block(readme, "Quick start", "sh"))


def test_quickstart_lines_are_found():
    text = "intro\n## Quick start\nsay\n```sh\na x\n\n# note\nb y\n```\n```sh\nc\n```\n## Next\n"
    assert quickstart_lines(text) == ["a x", "b y"]


def test_readme_quickstart_runs_as_written(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from matplotlib.colors import to_rgba

    from gcntrain.cli.plot_runs import load_run, phase_color, run_figure

    lines = quickstart_lines((REPO / "README.md").read_text())
    assert any(ln.startswith("mpiexec -n 4 gcntrain train") for ln in lines), lines
    # the README is typed in a scratch directory that has ../shared/datasets beside it
    (tmp_path / "shared").symlink_to(shared_dir(), target_is_directory=True)
    work = tmp_path / "quick"
    work.mkdir()
    env = cli_env()
    for line in lines:
        res = subprocess.run(
            line, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        assert res.returncode == 0, f"{line}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"

    png = work / "run.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recs = [json.loads(x) for x in (work / "run" / "metrics.jsonl").read_text().splitlines()]
    # the median steady epoch by its critical rank's time, the sum of its breakdown
    parts = [{k: v for k, v in r["epoch_breakdown"].items() if k != "critical_rank"} for r in recs]
    steady = sorted(parts[1:], key=lambda b: sum(b.values()))
    phases = {k for k, v in steady[(len(steady) - 1) // 2].items() if v}  # 0: no bar, no entry
    assert {"aggregation", "dense", "other"} <= phases
    fig = run_figure([load_run(work / "run")])
    (ax,) = [a for a in fig.axes if a.get_label() == "breakdown"]
    legend = ax.get_legend()
    drawn = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert set(drawn) == phases
    for phase, handle in drawn.items():
        assert handle.get_facecolor() == to_rgba(phase_color(phase)), phase
