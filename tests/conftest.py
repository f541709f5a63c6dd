"""Suite-wide settings.

Tests run with one Numba thread per process: on CI's 2 cores (and with mpiexec ranks
oversubscribed) parallel regions on tiny test matrices spend far longer waking threads than
computing.  Tests of the parallel kernels set their own thread counts explicitly.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numba
import pytest

#: the profile every test that asks for ``--machine local`` gets (no calibration in tests,
#: except where a test empties the cache on purpose): a 2-core machine with measured
#: thread scaling
LOCAL_PROFILE = Path(__file__).parent / "golden" / "local-profile.toml"


def local_profile_text(cores: int) -> str:
    """`LOCAL_PROFILE` with `cores` cores (so that a cache of it is taken on this host)."""
    text = LOCAL_PROFILE.read_text(encoding="utf-8")
    text = text.replace("cores = 2\n", f"cores = {cores}\n").replace(
        "ranks = 2\n", f"ranks = {cores}\n"
    )
    if cores < 2:  # the golden tables name 2 threads
        text = text[: text.index("[compute.threads]")]
    return text


def _local_cache() -> None:
    """Point the profile cache (`gcntrain.simulate.local`) at a fresh directory holding
    `LOCAL_PROFILE` as this host's profile, for this process and every one it starts."""
    from gcntrain.comm.env import host_cores
    from gcntrain.simulate.local import cache_path

    os.environ["GCNTRAIN_CACHE_DIR"] = tempfile.mkdtemp(prefix="gcntrain-cache-")
    text = local_profile_text(host_cores())
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


_local_cache()
# status lines (`gcntrain.status`) show after 1.5 s without output, so on a busy machine a
# command's stderr would hold them or not by chance: off for every process the suite starts,
# except where a test of them turns them on
os.environ["GCNTRAIN_STATUS"] = "off"
# the suite oversubscribes 2-4 ranks per core: MPICH's waiting ranks then sleep briefly
# (nanosleep) between polls instead of sched_yield, which hands the core straight back to
# a spinning rank.  Measured on the `batchnorm` MPI case at np 4 on 2 cores, in turn with
# the default at load 4.7-5.6: 29.3-34.6 s against 42.9-43.9 s.  A user's own launches
# are not affected (only processes the suite starts inherit it)
os.environ.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")


@pytest.fixture(autouse=True, scope="session")
def one_numba_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    # Mt-KaHyPar too: its process-wide initializer takes the thread count of its first use,
    # which would otherwise be whichever test came first (the node's cores by default), and
    # its DEFAULT preset partitions differently on 2 threads from run to run
    from gcntrain.partition.mtk import mtkahypar_initializer

    mtkahypar_initializer(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture(scope="session")
def worker_batches(request):
    """MPI worker cases run one launch per rank count (tests/mpi/batch.py)."""
    from tests.mpi.batch import WorkerBatches

    return WorkerBatches(request.session.items)


@pytest.fixture(scope="session")
def ck_graph_file(tmp_path_factory):
    """The checkpoint tests' R-MAT graph (tests/shared_runs.py), written once."""
    from tests.shared_runs import write_ck_graph

    return write_ck_graph(tmp_path_factory.mktemp("ckgraph"))


@pytest.fixture(scope="session")
def ck_checkpoint_np3(ck_graph_file, tmp_path_factory):
    """(checkpoint directory, arguments) of one np 3 run of `ck_graph_file` with a
    checkpoint, for the tests that resume from damaged copies of it (never from it)."""
    from tests.shared_runs import checkpoint_np3

    ck = tmp_path_factory.mktemp("ck3") / "ck"
    return ck, checkpoint_np3(ck_graph_file, ck)
