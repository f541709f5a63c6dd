"""Adding a scheme: a throwaway one, kept in this file, joins the registry through
``GCNTRAIN_SCHEMES`` and the MPI cases generated from the registry (`case_registry` of
tests/mpi/worker_fast.py, over each scheme's `test_configurations`) train it at np 1-4 and
compare it with serial training and with its plan, with no other file touched.

The registry case runs once per rank count for the session: this module's tests add both
schemes to it (``@worker_case("registry", schemes=...)``: the case loads them as the
registry loads ``GCNTRAIN_SCHEMES``, for its own runs only) and tests/test_mpi_schemes.py
reads the registered schemes' rows of the same verdict.

`Checked` is CAGNET 1D with one Allreduce more: after each weight gradient's sum, the ranks
compare a checksum of the summed gradient (its largest value over the ranks must be their
own: the replicas agree).  `Mispriced` does the same but its pricing forgets that Allreduce,
so the generated cases must report its plan differing from what it measured.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from gcntrain.comm.exchange import Allreduce, Groups
from gcntrain.model.phase import phase_key
from gcntrain.schemes.one_d import OneD, OneDOps
from tests.mpi.batch import worker_case
from tests.mpi.launch import REPO

pytestmark = pytest.mark.mpi

#: this module, as the workers import it (the repository on their path)
MODULE = "tests.test_scheme_plugin"
#: the throwaway schemes, as ``GCNTRAIN_SCHEMES`` names them
PLUGINS = f"{MODULE}:Checked,{MODULE}:Mispriced"
#: the one element the replicas' check reduces, in float64
CHECK_BYTES = 8


class CheckedOps(OneDOps):
    """1D with the replica check after each weight gradient's sum."""

    def reduce_weight_grad(self, dW, spec, *, phase):
        g = super().reduce_weight_grad(dW, spec, phase=phase)
        mine = np.array([float(np.abs(g).sum())])
        top = self.world.allreduce(mine, phase_key(phase), op="max")
        if top[0] != mine[0]:
            raise RuntimeError(f"rank {self.world.rank}: gradient replicas differ")
        return g


class Checked(OneD):
    name = "checked-1d"
    summary = "CAGNET 1D and a replica check of every weight gradient (a test's scheme)"
    ops_class = CheckedOps

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        check = Allreduce(Groups.world(ctx.P), np.array([1]), CHECK_BYTES)
        return [*self._array_sum(ctx, call), check]


class Mispriced(Checked):
    name = "mispriced-1d"
    summary = "Checked with the check's Allreduce left out of its pricing (a test's scheme)"

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        return self._array_sum(ctx, call)


def test_the_environment_adds_the_schemes_to_the_registry_and_the_cli():
    """``GCNTRAIN_SCHEMES`` read where the registry is built (a fresh process): both
    schemes registered after the package's own, and ``--scheme`` offers them."""
    # (not at module level: the registry imports this module while it is being built)
    from gcntrain.schemes.registry import SCHEMES

    env = {**os.environ, "GCNTRAIN_SCHEMES": PLUGINS, "PYTHONPATH": str(REPO)}
    code = "from gcntrain.schemes.registry import SCHEMES; print(*SCHEMES)"
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    names = res.stdout.split()
    assert names == [*SCHEMES, "checked-1d", "mispriced-1d"], names
    res = subprocess.run(
        [sys.executable, "-m", "gcntrain.cli.main", "train", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and "checked-1d" in res.stdout and "mispriced-1d" in res.stdout


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
@worker_case("registry", schemes=PLUGINS)
def test_a_scheme_added_through_the_registry_is_trained_by_the_generated_cases(
    worker_batches, nprocs
):
    """The generated registry case at `nprocs` ranks with both throwaway schemes added."""
    verdict = worker_batches.verdict(nprocs, "registry")
    assert verdict["ranks"] == nprocs
    rows = verdict["details"]
    assert all("scheme" in d for d in rows), rows  # the job did not abort
    checked = [d for d in rows if d["scheme"] == "checked-1d"]
    assert checked and all(d["exact"] for d in checked)
    assert all(d["rel_err"] <= 1e-5 and not d["plan_diffs"] for d in checked), checked
    # every other scheme passes; the mispriced one fails on its plan wherever the check's
    # Allreduce moves bytes (more than one rank), and only there
    others = [d for d in rows if d["scheme"] not in ("checked-1d", "mispriced-1d")]
    assert others and all(not d["plan_diffs"] for d in others), others
    bad = [d for d in rows if d["scheme"] == "mispriced-1d" and d["plan_diffs"]]
    if nprocs == 1:
        assert verdict["ok"] and not bad
    else:
        assert not verdict["ok"] and {d["rank"] for d in bad} == set(range(nprocs))
        for d in bad:  # the weight gradients' phases of both layers, more measured than planned
            phases = sorted(diff.split(":")[0] for diff in d["plan_diffs"])
            assert phases == ["L0.wgrad", "L1.wgrad"], d
            for diff in d["plan_diffs"]:
                got, planned = (json.loads(x) for x in re.findall(r"\[[^]]*\]", diff))
                assert got[0] > planned[0] and got[2] > planned[2], diff
