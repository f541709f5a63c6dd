"""The `train --json` key table of docs/cli.md equals the real output: every key of every
scheme's output is documented, every documented key occurs, and "always" keys occur in
every run (serial in process; every scheme valid on 4 ranks under mpiexec, one launch)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.job.report import KINDS
from tests.mpi.launch import REPO, run_mpi

#: objects whose keys are names (phases, kinds, options), written <phase> etc. in the table
NAMED = {
    "scheme_options": "<option>",
    "comm_seconds_max": "<kind>",
    "comm_phases": "<phase>",
    "comm_collectives": "<kind>",
    "values": "<option>",
}


def doc_table() -> dict[str, str]:
    """{key pattern: present} of the table between the train-json-keys markers."""
    text = (REPO / "docs" / "cli.md").read_text()
    body = text.split("<!-- train-json-keys -->")[1].split("<!-- /train-json-keys -->")[0]
    rows = [ln for ln in body.splitlines() if ln.startswith("| `")]
    out = {}
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        out[cells[0].strip("`")] = cells[1]
    assert len(out) == len(rows), "a key is documented twice"
    return out


def flatten(obj: dict, prefix: str = "") -> set[str]:
    """Dotted keys of a --json object; names inside NAMED objects become placeholders,
    the kinds inside epoch_breakdown <kind>, elements of lists of objects `a[]`; an empty
    object adds no key."""
    keys: set[str] = set()
    for k, v in obj.items():
        parent = prefix.rstrip(".").rsplit(".", 1)[-1]
        name = NAMED.get(parent, k)
        if parent == "epoch_breakdown" and k in KINDS:
            name = "<kind>"
        key = prefix + name
        if isinstance(v, dict):  # an empty one (serial: no communication) adds no key
            keys |= flatten(v, key + ".")
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                keys |= flatten(item, key + "[].")
        else:
            keys.add(key)
    return keys


def matcher(pattern: str) -> re.Pattern:
    """`L<i>.<dir>.t_pre` -> a regular expression (a placeholder matches a dotted name)."""
    parts = re.split(r"(<[^>]+>)", pattern)
    rx = "".join("(<[a-z]+>|[^\\[\\]]+)" if p.startswith("<") else re.escape(p) for p in parts if p)
    return re.compile(rx + "$")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("keys")
    path = tmp / "g.h5"
    write_graph(path, rmat(7, edge_factor=8, seed=3, num_features=8, num_classes=3))
    worker = str(REPO / "tests" / "mpi" / "keys_worker.py")
    res = run_mpi(4, [sys.executable, worker, str(path), str(tmp)], timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    return got


def _serial(capsys) -> dict:
    assert run(["train", "--epochs", "2", "--quiet", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_output_key_is_documented_and_every_documented_key_occurs(outputs, capsys):
    table = doc_table()
    rx = {p: matcher(p) for p in table}
    runs = {**outputs, "serial": _serial(capsys)}
    assert set(outputs) >= {"p2p", "1.5d", "2d", "3d", "plexus", "vertexcut", "hier"}
    seen: set[str] = set()
    for label, out in runs.items():
        assert "exit_status" not in out, (label, out)
        keys = flatten(out)
        undocumented = [k for k in keys if not any(r.match(k) for r in rx.values())]
        assert undocumented == [], f"{label}: keys missing from docs/cli.md: {undocumented}"
        for p, r in rx.items():
            if any(r.match(k) for k in keys):
                seen.add(p)
        absent = [
            p for p, when in table.items() if when == "always" and not any(map(rx[p].match, keys))
        ]
        assert absent == [], f"{label}: 'always' keys absent: {absent}"
    assert set(table) - seen == set(), f"documented but never output: {set(table) - seen}"


def test_flatten_and_matcher_on_a_known_object():
    obj = {
        "a": 1,
        "comm_phases": {"L0.fwd.agg": {"bytes_max": 3}},
        "epoch_breakdown": {"bcast": 0.1, "dense": 0.2},
        "grid_search": [{"grid": "2x2"}],
        "hidden": [16],
        "comm_seconds_max": {},
    }
    assert flatten(obj) == {
        "a",
        "comm_phases.<phase>.bytes_max",
        "epoch_breakdown.<kind>",
        "epoch_breakdown.dense",
        "grid_search[].grid",
        "hidden",
    }
    assert matcher("L<i>.<dir>.t_pre").match("L0.fwd.t_pre")
    assert not matcher("L<i>.<dir>.t_pre").match("L0.fwd.t_post")
    assert matcher("comm_phases.<phase>.bytes_max").match("comm_phases.<phase>.bytes_max")
