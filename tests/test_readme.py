"""README.md's command lines run as written.

`## A short tour`: its block runs in order through one bash script, as a user types it: from
a directory standing for the checkout, with a `shared/` (the data) beside it, the first line
(`mkdir -p ../tour && cd ../tour`) making the scratch directory the others work in; with
`gcntrain` and `mpiexec` from this environment and an empty profile cache, so that the tour
calibrates this host itself.  No line is left out.  Each line must exit 0, and what a line
promises must be there: every `-o` / `--out` / `--per-rank` / `--checkpoint` output, `--json`
that parses, the planned per-rank table equal to the measured one ("same table"), the resumed
run's result equal to a 200-epoch run's.

`## Set up on a fresh machine`: its lines (a) and (b) create a virtual environment and
install the package, which the suite cannot do from inside itself.  `.ci/run` runs (b) on a
fresh clone (checked here: the README's (b) is the command it runs); (a)'s training command
is run whole by `scripts/check_readme_default.py` and for 5 epochs by tests/test_mpi_cli.py.
`## Quick start` is run by tests/test_quickstart.py.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.node import KINDS
from tests.readme_lines import REPO, cli_env, command_lines, fenced_block, fenced_blocks, shared_dir

TOUR = "A short tour"
SETUP = "Set up on a fresh machine"
#: options whose value is a file or directory the line writes (in the tour's directory)
OUTPUT_OPTIONS = ("-o", "--out", "--per-rank", "--checkpoint")
MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".h5": b"\x89HDF\r\n\x1a\n"}
#: the rows of a training summary that are its result
RESULT_ROWS = ("epochs", "final loss", "train acc", "val loss / acc", "test acc")


def tour_lines(readme: str) -> list[str]:
    """The command lines of the `## A short tour` block."""
    return command_lines(fenced_block(readme, TOUR))


def tour_script(lines: list[str], log: Path) -> str:
    """A bash script that runs `lines` in order in one shell (so that `cd` carries), each
    line's stdout and stderr into ``log/<i>.out`` / ``.err`` and a ``log/status`` line
    ``i rc start end``; it stops at the first line that fails.  (`bash -e` would not: a
    failing command left of ``&&`` does not end it.)  Standard input is /dev/null, as mpiexec
    would otherwise read the caller's."""
    out = ["exec </dev/null"]
    q = shlex.quote(str(log))
    for i, line in enumerate(lines):
        out += [
            "t0=$EPOCHREALTIME",
            "{",
            line,  # on its own line: a trailing comment ends with it, as typed
            f"}} >{q}/{i}.out 2>{q}/{i}.err",
            "rc=$?",
            f'echo "{i} $rc $t0 $EPOCHREALTIME" >>{q}/status',
            '[ "$rc" -eq 0 ] || exit "$rc"',
        ]
    return "\n".join(out) + "\n"


def outputs(line: str) -> list[str]:
    """The paths a line names as outputs (the values of `OUTPUT_OPTIONS`), in order."""
    words = shlex.split(line, comments=True)
    return [b for a, b in zip(words, words[1:]) if a in OUTPUT_OPTIONS]


def summary_rows(text: str) -> dict[str, str]:
    """The ``label  value`` rows of a human training summary that are its result."""
    rows = {}
    for ln in text.splitlines():
        for label in RESULT_ROWS:
            m = re.match(rf"{re.escape(label)}\s{{2,}}(\S.*)$", ln)
            if m:
                rows[label] = m.group(1).strip()
    return rows


def test_tour_helpers():
    text = "x\n## A short tour\nsay\n```\nmkdir -p ../t && cd ../t\n\na -o f.h5  # c -o no\n```\n"
    assert tour_lines(text) == ["mkdir -p ../t && cd ../t", "a -o f.h5  # c -o no"]
    assert outputs("a x.h5 -o y && b --per-rank m.csv --checkpoint ck  # -o z") == [
        "y",
        "m.csv",
        "ck",
    ]
    rows = summary_rows("epochs               200\nfinal loss           0.5953\nmodel  gcn\n")
    assert rows == {"epochs": "200", "final loss": "0.5953"}


def test_tour_script_stops_at_a_failing_line_and_carries_cd(tmp_path):
    (tmp_path / "repo").mkdir()
    log = tmp_path / "log"
    log.mkdir()
    lines = ["mkdir -p ../t && cd ../t", "pwd  # here", "false && true", "echo never"]
    res = subprocess.run(
        ["bash", "-c", tour_script(lines, log)], cwd=tmp_path / "repo", capture_output=True
    )
    assert res.returncode == 1
    status = [ln.split()[:2] for ln in (log / "status").read_text().splitlines()]
    assert status == [["0", "0"], ["1", "0"], ["2", "1"]]
    assert (log / "1.out").read_text().strip() == str((tmp_path / "t").resolve())


def test_readme_setup_b_is_what_ci_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    a, b = (command_lines(x) for x in fenced_blocks(readme, SETUP)[:2])
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert len(b) == 1 and b[0] in ci, (b, ci)
    assert b[0].endswith("&& python -m pytest -q")
    venv = "python3 -m venv .venv && . .venv/bin/activate && pip install -e "
    assert a[0].startswith(venv) and b[0].startswith(venv)
    assert a == [venv + "'.[mpich]' && mpiexec -n 4 gcntrain train"]


def _line(lines: list[str], pattern: str) -> int:
    """The index of the one tour line that matches `pattern` (the test's checks name lines
    this way, so that a README edit that drops a checked line fails here)."""
    hits = [i for i, ln in enumerate(lines) if re.search(pattern, ln)]
    assert len(hits) == 1, f"{pattern!r} matches tour lines {hits}"
    return hits[0]


@pytest.mark.mpi
def test_readme_tour_runs_as_written(tmp_path):
    lines = tour_lines((REPO / "README.md").read_text(encoding="utf-8"))
    assert lines[0] == "mkdir -p ../tour && cd ../tour", lines[0]
    (tmp_path / "shared").symlink_to(shared_dir(), target_is_directory=True)
    checkout, work, log = tmp_path / "gcntrain", tmp_path / "tour", tmp_path / "log"
    checkout.mkdir()
    log.mkdir()
    env = cli_env()
    env["GCNTRAIN_CACHE_DIR"] = str(tmp_path / "cache")  # empty: --machine local measures
    script = tour_script(lines, log)
    res = subprocess.run(
        ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=900
    )
    status = [ln.split() for ln in (log / "status").read_text().splitlines()]
    times = [f"{float(e) - float(s):6.1f} s  {lines[int(i)][:90]}" for i, _, s, e in status]
    print("\n".join(times))
    if res.returncode != 0:
        i = int(status[-1][0])
        out, err = (log / f"{i}.out").read_text(), (log / f"{i}.err").read_text()
        pytest.fail(f"tour line {i} exit {status[-1][1]}: {lines[i]}\n{out[-2000:]}\n{err[-3000:]}")
    assert [int(r[0]) for r in status] == list(range(len(lines))), "not every line ran"
    stdout = [(log / f"{i}.out").read_text() for i in range(len(lines))]

    for i, line in enumerate(lines):
        for path in outputs(line):
            p = work / path
            assert p.exists(), f"{line}: no {path}"
            if p.is_dir():
                assert any(p.iterdir()), f"{line}: {path} is empty"
            elif p.suffix in MAGIC:
                assert p.read_bytes()[:8] == MAGIC[p.suffix], f"{line}: {path}"
            elif p.suffix == ".toml":
                assert tomllib.loads(p.read_text()), f"{line}: {path}"
            elif p.suffix == ".csv":
                rows = list(csv.DictReader(p.open()))
                assert rows and {"rank", "phase", "bytes_sent"} <= set(rows[0]), path
        if "--json" in shlex.split(line, comments=True):
            assert isinstance(json.loads(stdout[i]), dict), f"{line}: --json"

    inspect = json.loads(stdout[_line(lines, r"^gcntrain inspect cora\.h5 --json")])
    assert inspect["num_nodes"] == 2708, inspect
    p2p = json.loads(stdout[_line(lines, r"--scheme p2p --partition cora-p4\.h5 --json")])
    assert p2p["scheme"] == "p2p" and p2p["ranks"] == 4
    plan = json.loads(stdout[_line(lines, r"^gcntrain simulate .* --partition random --json")])
    assert plan["ranks"] > 4 and plan["bytes_sent_max"] > 0
    # "same table": the plan of the 2D run is its measurement, row for row
    _line(lines, r"--per-rank planned\.csv +# same table")
    assert (work / "planned.csv").read_text() == (work / "measured.csv").read_text()
    assert "lr = 0.02 " in stdout[_line(lines, r"config show --config run1/config\.toml")]
    assert "grid auto" in stdout[_line(lines, r"--scheme plexus --grid auto")]
    assert "recommended" in stdout[_line(lines, r"--sweep --top 10")]
    # the --machine local line measures this host once (`bench --quick`'s calibration, the
    # suite's one real run of it), caches it, and names the cached profile and its date
    local = _line(lines, r"--machine local")
    (cached,) = (tmp_path / "cache").glob("machine-*.toml")
    assert "scheme auto" in stdout[local]
    err = (log / f"{local}.err").read_text()
    assert "measuring this machine" in err and f"cached at {cached}, measured " in err
    m = parse_machine(cached.read_text(), str(cached))
    assert m.threads_source == "measured" and m.core_bandwidth > 0
    assert m.memory_bandwidth >= m.core_bandwidth
    for kind in KINDS:  # thread and node scaling measured at 1 and all cores
        assert m.scaling(kind).threads[0] == 1.0 and m.sharing(kind).speedups[0] == 1.0
    assert m.measured and m.measured_by.startswith("gcntrain ")
    # the checkpointed run stops at 100 epochs; the resumed one trains 101-200 and ends
    # where one 200-epoch run of the same scheme and seed ends
    ck, resume = _line(lines, r"--epochs 100 --checkpoint ck"), _line(lines, r"--resume ck")
    assert ck < resume
    assert summary_rows(stdout[ck])["epochs"] == "100"
    assert re.search(r"^resumed +from epoch 100 of ck$", stdout[resume], re.M), stdout[resume]
    whole = summary_rows(
        stdout[_line(lines, r"mpiexec -n 4 gcntrain train cora-store --scheme 1d")]
    )
    assert whole["epochs"] == "200" and set(whole) == set(RESULT_ROWS)
    assert summary_rows(stdout[resume]) == whole
