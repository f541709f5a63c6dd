"""scripts/newcomer_watchdog.py (too slow for the suite as a whole): its README reading and
its silence finding, on lines whose output times are known."""

from __future__ import annotations

import importlib.util
import os

from tests.readme_lines import REPO

spec = importlib.util.spec_from_file_location("watchdog", REPO / "scripts" / "newcomer_watchdog.py")
W = importlib.util.module_from_spec(spec)
spec.loader.exec_module(W)


def test_it_reads_every_readme_line_in_order():
    pairs = W.readme_lines((REPO / "README.md").read_text(encoding="utf-8"))
    sections = [s for s, _ in pairs]
    assert pairs[0] == ("set-up (a)", "mpiexec -n 4 gcntrain train")
    assert sections.index("quick start") < sections.index("tour")
    assert ("tour", "mkdir -p ../tour && cd ../tour") in pairs
    assert sum(s == "tour" for s in sections) >= 20


def test_it_finds_a_silent_stretch_and_the_exit_status(tmp_path):
    lines = ["echo a; sleep 0.1; echo b", "echo c; sleep 1.2; echo d", "sleep 0.1; false"]
    events = W.watch(W.shell_script(lines), tmp_path, dict(os.environ))
    report = W.silences(events, 1.0)
    assert sorted(report) == [0, 1, 2]
    assert report[0][0] == 0 and report[0][4] == []
    rc, wall, longest, prev, gaps = report[1]
    assert rc == 0 and len(gaps) == 1 and 1.0 < longest < 5 and prev == "c"
    assert report[2][0] == 1
