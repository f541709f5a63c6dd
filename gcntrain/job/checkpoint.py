"""Checkpoints and resume for every scheme, coordinated over the job's ranks.

Each rank stages its own `TrainState` (its parameter shards, Adam's moments, the scheme's
state) under one collective verdict; then rank 0 publishes the checkpoint
(`gcntrain.data.checkpoint.publish`: metadata, rename, ``LATEST``, older ones removed), again
under one verdict.  A failure on any rank (a full disk included) removes what was staged and
becomes the same one-line error, exit status 2, on every rank; the previous checkpoint stays
the latest.

Resuming takes the newest complete checkpoint (the one ``LATEST`` names, or, when writing
``LATEST`` failed after the checkpoint was published, the newest complete ``epoch-N/``, said
in one line on rank 0) and checks, before any rank loads its state, that the checkpoint
was written by the same graph (content hash), scheme, scheme options, rank count, partition
and training configuration (the number of epochs may grow); anything else is refused with a
line naming what differs.  The state of a rank is its shard of the layout, so another rank
count or scheme cannot resume it.  Each rank's arrays must agree among themselves
(`TrainState.inconsistency`) and, once the model is built, fit its parameters
(`RankState.check_model`: a file written for another model); either failure is refused on
every rank, before training, with one line naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields

import numpy as np

from gcntrain.comm.agree import agree
from gcntrain.data import checkpoint as ckio
from gcntrain.errors import AgreedError, InputError, Preempted
from gcntrain.job.signals import PREEMPT_SIGNALS
from gcntrain.model.state import TrainState

#: configuration keys a resumed run may change
MAY_CHANGE = ("epochs", "eval_cache")


def partition_digest(partition) -> str:
    """A partition file's SHA-256 (its contents, not its path); "" for a method name."""
    import hashlib
    import os

    if not isinstance(partition, (str, os.PathLike)) or not os.path.isfile(partition):
        return ""
    h = hashlib.sha256()
    with open(partition, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: partition methods that run METIS (the hypergraph partitioner and MVC start from it)
METIS_METHODS = ("metis", "hypergraph", "mvc")


def _backend(partition: str) -> dict:
    """``{"partition_backend": "mtkahypar"}`` for a METIS partition made without pymetis."""
    if partition not in METIS_METHODS:
        return {}
    from gcntrain.partition.metis import metis_backend_name

    name = metis_backend_name()
    return {} if name == "pymetis" else {"partition_backend": name}


def run_identity(
    scheme: str,
    ranks: int,
    options: dict,
    partition: str,
    config,
    graph_hash,
    partition_seed: int = 0,
    partition_file: str = "",
):
    """What a checkpoint must match to be resumed by a run (JSON-ready).  A partition
    that runs METIS made by its fallback (`gcntrain.partition.metis.metis_backend_name`:
    no pymetis) records ``partition_backend``: another backend's parts differ."""
    cfg = {k: v for k, v in config.to_dict().items() if k not in MAY_CHANGE}
    ident = {
        "scheme": scheme,
        "ranks": int(ranks),
        "scheme_options": {k: str(v) for k, v in sorted(options.items())},
        "partition": str(partition),
        "partition_seed": int(partition_seed),
        "partition_file": str(partition_file),
        **_backend(str(partition)),
        "graph_hash": str(graph_hash),
        "config": cfg,
        "epochs": int(config.epochs),
    }
    return json.loads(json.dumps(ident, default=str))  # as a checkpoint's meta.json reads


def differences(saved: dict, wanted: dict) -> list[str]:
    """Human-readable differences between a checkpoint's identity and this run's."""
    out = []
    names = {
        "graph_hash": "graph (content hash)",
        "partition_file": "partition file (contents)",
        "partition_seed": "--partition-seed",
        "partition_backend": "METIS backend (pymetis unless named)",
    }
    for key in (
        "graph_hash",
        "scheme",
        "ranks",
        "scheme_options",
        "partition",
        "partition_seed",
        "partition_file",
        "partition_backend",
    ):
        if saved.get(key) != wanted.get(key):
            what = names.get(key, key.replace("_", " "))
            out.append(f"{what}: checkpoint {saved.get(key)!r}, this run {wanted.get(key)!r}")
    a, b = saved.get("config", {}), wanted["config"]
    grows = saved.get("epochs") is not None and saved.get("epochs") != wanted.get("epochs")
    stops = b.get("early_stopping") or b.get("patience")
    if grows and int(b.get("eval_every", 1)) > 1 and stops:
        out.append(
            "--epochs may change on resume only with --eval-every 1 or without early "
            "stopping (the last epoch of the first run was evaluated, which changes the "
            "stopping rule's history)"
        )
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append(f"--{k.replace('_', '-')}: checkpoint {a.get(k)!r}, this run {b.get(k)!r}")
    return out


class PreemptFlag:
    """Records the first preemption signal this process receives (handlers installed by
    `install`, previous ones restored by `restore`)."""

    def __init__(self):
        self.signum = 0
        self._old: dict = {}

    def install(self) -> None:
        import signal

        def handler(signum, frame):
            if not self.signum:
                self.signum = int(signum)

        for name in PREEMPT_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                self._old[sig] = signal.signal(sig, handler)

    def restore(self) -> None:
        import signal

        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


@dataclass
class Checkpointer:
    """`fit`'s checkpoint hook: every `every` epochs (and at the last) into `root`; with a
    `flag`, after every epoch the ranks agree (one Allreduce, phase ``control``) whether any
    received a preemption signal, and if so checkpoint now and raise `Preempted`."""

    world: object
    root: str
    every: int
    identity: dict
    flag: PreemptFlag | None = None
    stop_signal: int = 0
    last: bool = False

    def due(self, done: int, last: bool) -> bool:
        self.last = last
        if self.flag is not None:
            got = np.array([self.flag.signum], dtype=np.int64)
            self.stop_signal = int(self.world.allreduce(got, "control", op="max")[0])
            if self.stop_signal:
                return True
        return done % self.every == 0 or last

    def save(self, state: TrainState) -> None:
        arrays = state.to_arrays()
        world, root, epoch = self.world, self.root, state.epoch

        def write():
            ckio.write_rank(root, epoch, world.rank, arrays)
            _kill_hook(world.rank, epoch)

        def publish():
            if world.rank == 0:
                ckio.publish(root, epoch, {**self.identity}, ranks=world.size)

        try:
            agree(world, write)
            agree(world, publish)
        except AgreedError:
            if world.rank == 0:
                ckio.discard(root, epoch)
            raise
        if self.stop_signal and not self.last:  # on the last epoch the run just finishes
            import signal

            name = signal.Signals(self.stop_signal).name
            raise Preempted(
                f"stopped by {name} after epoch {epoch}; checkpoint written to {root}: "
                f"continue with the same command and --resume {root}",
                128 + self.stop_signal,
            )


def _kill_hook(rank: int, epoch: int) -> None:
    """Test hook: ``GCNTRAIN_KILL_IN_CHECKPOINT=R:E`` kills rank R (SIGKILL) right after it
    staged its file of the checkpoint of epoch E, before that checkpoint is published."""
    import os

    spec = os.environ.get("GCNTRAIN_KILL_IN_CHECKPOINT")
    if spec and spec == f"{rank}:{epoch}":
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def prepare_root(world, root) -> None:
    """Check (rank 0) that the checkpoint root is a writable directory and drop staging
    directories an interrupted write left behind; one verdict for every rank."""

    def check():
        if world.rank == 0:
            ckio.check_root(root)
            ckio.remove_stale(root)

    agree(world, check)


@dataclass
class RankState(TrainState):
    """A rank's `TrainState` read from its checkpoint file `path`, whose fit to the model
    (`check_model`, in `gcntrain.model.trainer.fit`, before training) is one verdict for
    every rank of `world`: a file written for another model (another hidden width or
    layer count, a parameter replaced by another of consistent shape) is refused on every
    rank with one line naming it, exit status 2."""

    world: object = None
    path: str = ""

    def check_model(self, weights: list[dict]) -> None:
        def check():
            why = self.model_mismatch(weights)
            if why is not None:
                raise InputError(f"inconsistent checkpoint file {self.path}: {why}")

        agree(self.world, check)


def load_state(world, root, identity: dict, epochs: int) -> tuple[TrainState, dict]:
    """This rank's state of the newest checkpoint under `root`, after checking that it
    belongs to this run and leaves epochs to train (of `epochs`); one verdict for every
    rank.  Returns (state, metadata); the state is a `RankState`, whose parameters the
    trainer checks against the model's, again under one verdict."""

    def load():
        ckpt, meta, note = ckio.find_latest(root)
        diff = differences(meta, identity)
        if diff:
            raise InputError(f"cannot resume from {ckpt}: " + "; ".join(diff))
        path = ckio.rank_file(ckpt, world.rank)
        try:
            read = TrainState.from_arrays(ckio.read_rank(ckpt, world.rank))
        except (KeyError, ValueError, TypeError, UnicodeDecodeError) as e:
            raise InputError(f"inconsistent checkpoint file {path}: {e!r}") from None
        fields = {f.name: getattr(read, f.name) for f in dataclass_fields(TrainState)}
        state = RankState(**fields, world=world, path=str(path))
        why = state.inconsistency()
        if why is not None:
            raise InputError(f"inconsistent checkpoint file {path}: {why}")
        if state.stopped:
            raise InputError(
                f"cannot resume from {ckpt}: early stopping ended that run at epoch {state.epoch}"
            )
        if state.epoch >= epochs:
            raise InputError(
                f"cannot resume from {ckpt}: it is at epoch {state.epoch} and --epochs is "
                f"{epochs}; nothing is left to train (raise --epochs to continue)"
            )
        return state, meta, note

    state, meta, note = agree(world, load)
    if note and world.rank == 0:
        import sys

        sys.stderr.write(f"gcntrain: {note}\n")
        sys.stderr.flush()
    return state, meta
