"""This host's cached ``--machine local`` profile (issue 51, item 15): `gcntrain bench` writes
its ``-o`` file (or stdout) and never the cache; only a ``--machine local`` run that finds no
cache measures and writes it, with the date it was measured and the gcntrain that did;
`gcntrain info` and ``train --scheme auto`` name the cached profile and its date.

No test measures anything: `gcntrain.simulate.calibrate.calibrate` is replaced by one that
returns a profile written by `profile_text` from made-up figures, and each test has a cache
directory of its own (``GCNTRAIN_CACHE_DIR``)."""

from __future__ import annotations

import json

import pytest

from gcntrain.cli.main import run
from gcntrain.comm.env import host_cores
from gcntrain.simulate import calibrate, local
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.profile_text import profile_text
from tests.conftest import local_profile_text
from tests.test_timing import sample_figs

WHEN = "2031-04-05 06:07"


def figures(when: str = WHEN) -> dict:
    """Made-up figures of this host (its core count, no thread tables to exceed it)."""
    figs = sample_figs(host="testhost")
    figs.update(when=when, cores=host_cores(), version="9.9.9")
    figs.pop("threads")
    figs.pop("node_scaling")
    return figs


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory of this test's own; (its profile path, calibrate's calls)."""
    monkeypatch.setenv("GCNTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    calls: list = []

    def fake(name="local", mpiexec=None, log=print, quick=False):
        calls.append((name, quick))
        figs = figures()
        return profile_text(name, figs), figs

    monkeypatch.setattr(calibrate, "calibrate", fake)
    return local.cache_path(), calls


def test_bench_o_writes_its_file_and_leaves_the_cache_as_it_was(cache, tmp_path):
    path, calls = cache
    path.parent.mkdir(parents=True)
    before = local_profile_text(host_cores())
    path.write_text(before, encoding="utf-8")
    stamp = path.stat().st_mtime_ns
    out = tmp_path / "mine.toml"
    assert run(["bench", "--quick", "-o", str(out)]) == 0
    assert calls == [("mine", True)]
    assert parse_machine(out.read_text(), str(out)).name == "mine"
    assert path.read_text(encoding="utf-8") == before and path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_bench_o_on_an_empty_cache_caches_nothing(cache, tmp_path):
    path, _ = cache
    assert run(["bench", "--quick", "-o", str(tmp_path / "mine.toml")]) == 0
    assert not path.exists()
    assert not path.parent.exists() or not any(path.parent.iterdir())


def test_bench_without_o_prints_the_profile_and_caches_nothing(cache, capsys):
    path, _ = cache
    assert run(["bench", "--quick", "--name", "here"]) == 0
    got = capsys.readouterr()
    m = parse_machine(got.out, "<stdout>")
    assert m.name == "here" and m.measured == WHEN
    assert "cached" not in got.err
    assert not path.exists()


def test_a_bench_profile_records_when_and_by_what_it_was_measured(cache, tmp_path):
    out = tmp_path / "mine.toml"
    assert run(["bench", "--quick", "-o", str(out)]) == 0
    m = parse_machine(out.read_text(), str(out))
    assert m.measured == WHEN
    assert m.measured_by.startswith("gcntrain 9.9.9 from ")


def test_machine_local_measures_once_and_caches_with_its_date(cache, capsys):
    path, calls = cache
    m = local.load_machine("local")
    assert calls == [("local", True)] and path.is_file()
    assert "measuring this machine once" in capsys.readouterr().err
    cached = parse_machine(path.read_text(encoding="utf-8"), str(path))
    assert cached.measured == WHEN and cached.measured_by.startswith("gcntrain 9.9.9 from ")
    assert m.measured == WHEN and m.path == str(path)
    again = local.load_machine("local")  # read back: nothing measured again
    assert calls == [("local", True)] and again.measured == WHEN


def test_info_names_the_cached_profile_and_its_date(cache, capsys):
    path, calls = cache
    local.load_machine("local")
    capsys.readouterr()
    assert run(["info", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["local_profile"]
    assert got["path"] == str(path) and got["state"] == "cached"
    assert got["measured"] == WHEN and got["measured_by"].startswith("gcntrain 9.9.9 from ")
    assert run(["info"]) == 0
    text = capsys.readouterr().out
    assert str(path) in text and WHEN in text
    assert calls == [("local", True)]  # info never measures


def test_info_says_when_none_is_cached(cache, capsys):
    path, calls = cache
    assert run(["info", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["local_profile"]
    assert got["path"] == str(path) and got["state"].startswith("none cached")
    assert got["measured"] is None and calls == [] and not path.exists()


def test_a_profile_cached_before_the_date_key_gets_its_comment_date(cache):
    """A cache from an older gcntrain has no ``measured`` key; its first comment line (as
    `gcntrain bench` wrote it then) gives the date."""
    path, _ = cache
    text = profile_text("local", figures("2020-01-02 03:04"))
    old = "\n".join(ln for ln in text.splitlines() if not ln.startswith("measured"))
    path.parent.mkdir(parents=True)
    path.write_text(old + "\n", encoding="utf-8")
    state = local.cache_state()
    assert state["state"] == "cached" and state["measured"] == "2020-01-02 03:04"
    assert state["measured_by"] == "unknown"


def test_scheme_auto_names_the_cached_profile_and_its_date(cache, tmp_path):
    """``train --scheme auto``'s choice (its ``recommendation``) carries the profile's file
    and date, and its line on stderr names this host's cached profile and its date."""
    from gcntrain.comm.communicator import SelfComm
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph
    from gcntrain.job import auto
    from gcntrain.model.trainer import TrainConfig

    path, _ = cache
    graph = tmp_path / "g.h5"
    write_graph(graph, rmat(6, edge_factor=4, seed=1, num_features=4, num_classes=3))
    for cached in (False, True):  # planned, then the choice read back from its cache
        said: list[str] = []
        choice, _ = auto.choose(
            SelfComm(), str(graph), TrainConfig(epochs=2), {}, None, 0, "local", 1, said.append
        )
        assert choice["cached"] is cached
        assert choice["machine_file"] == str(path) and choice["machine_measured"] == WHEN
        line = said[-1]
        assert line.startswith("scheme auto:") and f"cached at {path}" in line, said
        assert f"measured {WHEN}" in line
