"""Typed scheme configurations (issue 34): every scheme class has a frozen ``Config``
generated from its option declarations, built and validated once by `configure` (through
`registry.configured`), whose fields hold parsed values (a grid is a tuple of ints) that
the schemes read; `to_dict` is the printed form, which parses back to an equal
configuration.  A plugin scheme gets its ``Config`` generated from its own options."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from gcntrain.data.generate import rmat
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes import registry
from gcntrain.schemes.config import SchemeConfig
from gcntrain.schemes.one_d import OneD
from gcntrain.schemes.protocol import SchemeOption
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget


def parse_fanout(value, size: int, scheme) -> int:
    """A plugin option's parser: an int between 1 and the ranks."""
    fanout = int(value)
    if not 1 <= fanout <= size:
        raise InputError(f"--fanout must be between 1 and {size}, got {fanout}")
    return fanout


class Fanned(OneD):
    """A plugin-like scheme with an option of its own and no Config class of its own."""

    name = "fanned-1d"
    options = (
        SchemeOption("fanout", ("--fanout",), 1, "a test option", int, parse=parse_fanout),
        *OneD.options,
    )


def test_block_grids_are_configured_as_tuples_and_printed_as_text():
    two_d, three_d, plexus = (registry.SCHEMES[n] for n in ("2d", "3d", "plexus"))
    c2 = registry.configured(two_d, 6, {"grid": "2X3", "reorder": "rcm"}, TrainConfig())
    assert c2.grid == (2, 3) and all(type(d) is int for d in c2.grid)
    assert c2.to_dict() == {"grid": "2x3", "reorder": "rcm"}
    assert (two_d.row_parts(6, c2), two_d.col_parts(6, c2), two_d.locality_order(c2)) == (
        2,
        3,
        "rcm",
    )
    assert two_d.configure(6, {}).grid == (2, 3)  # the most nearly square grid
    c3 = three_d.configure(8, {"grid": "2x1x4"})
    assert c3.grid == (2, 1, 4) and c3.to_dict() == {"grid": "2x1x4"}
    cp = plexus.configure(8, {"grid": "2x2x2", "load_grid": "4x2", "permute": "double"})
    assert (cp.grid, cp.load_grid, cp.permute, cp.permute_seed, cp.block_rows) == (
        (2, 2, 2),
        (4, 2),
        "double",
        0,
        0,
    )
    assert (plexus.row_parts(8, cp), plexus.col_parts(8, cp)) == (4, 2)
    assert plexus.configure(8, {}).to_dict()["load_grid"] == "8x1"
    # the schemes read the fields: a configuration made from tuples directly works
    direct = two_d.Config(grid=(3, 2), reorder="none")
    assert (two_d.row_parts(6, direct), two_d.col_parts(6, direct)) == (3, 2)
    assert plexus.col_parts(8, cp.replace(load_grid=(8, 1))) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        c2.grid = (3, 2)
    assert pickle.loads(pickle.dumps(cp)) == cp


def test_a_plan_parses_the_grid_once_and_lays_out_its_tuple(monkeypatch):
    import gcntrain.schemes.two_d.scheme as two_d_scheme

    parsed = []
    real = two_d_scheme.parse_dims
    monkeypatch.setattr(two_d_scheme, "parse_dims", lambda *a: parsed.append(a) or real(*a))
    g = rmat(6, edge_factor=4, seed=1, num_features=4, num_classes=3)
    target = PlanTarget(g, TrainConfig(epochs=1, hidden=[4]), "3d", 4, {"grid": "2x1x2"})
    sim = plan_training(target)
    assert len(parsed) == 1
    assert isinstance(sim.config, SchemeConfig) and sim.config.grid == (2, 1, 2)
    lay = sim.ctx.layout
    assert (lay.pr, lay.pc, lay.pz) == (2, 1, 2)
    assert sim.config.to_dict() == {"grid": "2x1x2"}


def test_completed_and_typed_values_print_as_before():
    hier, cut = registry.SCHEMES["hier"], registry.SCHEMES["vertexcut"]
    first = hier.configure(4, {"quant_bits": "4", "reorder": "degree"})
    done = registry.configured(
        hier, 4, {"quant_bits": "4", "reorder": "degree"}, TrainConfig(seed=7)
    )
    assert (first.seed, done.seed, done.quant_bits, done.quant_group) == (0, 7, 4, 1)
    assert list(done.to_dict().items()) == [
        ("aggr", "hybrid"),
        ("quant_bits", 4),
        ("quant_group", 1),
        ("seed", 7),
        ("reorder", "degree"),
    ]
    assert not hier.is_exact(done) and hier.is_exact(hier.configure(4, {}))
    off = cut.configure(4, {"delay": "none"})
    assert off.delay is None and off.to_dict() == {"delay": "none"}
    assert cut.configure(4, {"delay": "5"}).delay == 5
    assert cut.configure(4, {"delay": "0"}).to_dict() == {"delay": 0}
    # the printed form configures the same again (the seed: from the run, not an option)
    assert hier.configure(4, done.to_dict()) == first
    assert cut.configure(4, off.to_dict()) == off


def test_a_plugin_scheme_gets_a_config_generated_from_its_options():
    cls = Fanned.Config
    assert issubclass(cls, SchemeConfig) and dataclasses.is_dataclass(cls)
    assert cls.__qualname__ == "Fanned.Config"
    assert [f.name for f in dataclasses.fields(cls)] == ["fanout", "reorder"]
    sch = Fanned()
    cfg = sch.configure(4, {"fanout": "3"})
    assert cfg.fanout == 3 and cfg.to_dict() == {"fanout": 3}
    assert sch.configure(4, {}).fanout == 1
    assert sch.locality_order(sch.configure(4, {"reorder": "rcm"})) == "rcm"
    with pytest.raises(InputError, match="--fanout must be between 1 and 4, got 5"):
        sch.configure(4, {"fanout": 5})
    with pytest.raises(InputError, match="--reorder must be one of"):
        sch.configure(4, {"reorder": "sideways"})
    # the base classes keep their own: OneD's configuration has no fanout
    assert [f.name for f in dataclasses.fields(OneD.Config)] == ["reorder"]
