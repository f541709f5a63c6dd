"""The job's options declared once (`gcntrain.job.options`): the commands and the API are
built from them, and their defaults are `TrainConfig`'s."""

from __future__ import annotations

import dataclasses

import click

from gcntrain.cli.simulate_cmd import simulate as simulate_cmd
from gcntrain.cli.train_cmd import train as train_cmd
from gcntrain.job import options as O
from gcntrain.model.trainer import TrainConfig


def test_model_option_defaults_are_the_train_config_defaults():
    """Resolving every model option at its default gives `TrainConfig()`."""
    command = click.Command("x", params=O.params(O.MODEL))
    values = dict(command.make_context("x", []).params)  # what a callback gets: no flags
    assert set(values) == set(O.MODEL_KEYS)
    assert dataclasses.asdict(O.train_config(values)) == dataclasses.asdict(TrainConfig())


def test_the_commands_carry_exactly_the_declared_options_in_order():
    for command, declared in ((train_cmd, O.train_options()), (simulate_cmd, O.simulate_options())):
        names = [p.name for p in command.params if isinstance(p, click.Option)]
        names = [n for n in names if n != "config_file"]  # --config, added to every command
        assert names == list(O.names(declared)), command.name


def test_the_api_takes_every_option_but_the_output_format():
    train = {p.name for p in O.params(O.train_options(), api_only=True)}
    assert "as_json" not in train and {"epochs", "scheme", "checkpoint", "quiet"} <= train
    sim = {p.name for p in O.params(O.simulate_options(), api_only=True)}
    assert "top" not in sim and "as_json" not in sim and {"ranks", "sweep", "nodes"} <= sim
