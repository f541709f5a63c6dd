"""The one training runner for every scheme (serial included).

`run_job` agrees on the configuration and loads this rank's data under one collective
verdict, sets the scheme up, trains with `gcntrain.model.trainer.fit` (the model is the same
for every scheme; only the Ops differ), reduces the job summary and writes the outputs of the
canonical rows.  Schemes are reached only through the registry.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from gcntrain import status
from gcntrain.comm.agree import agree, on_root
from gcntrain.comm.counters import Tally
from gcntrain.comm.launch import launched_world_size
from gcntrain.comm.node import auto_threads, ranks_on_node
from gcntrain.data import setup_phases
from gcntrain.job.drift import measure_drift
from gcntrain.job.features import counted_bytes, keeps_raw, raw_features
from gcntrain.job.numbering import handed_numbering, numbering_once, own_numbering
from gcntrain.job.progress import EVERY_SECONDS
from gcntrain.job.report import epoch_comm, gather_phases, summarize_ranks
from gcntrain.job.spec import JobOutputs, JobSpec, resolve
from gcntrain.kernels.warm import start_numba
from gcntrain.model.normalize import support_kind
from gcntrain.model.ops import PROTOCOL
from gcntrain.model.phase import Phase
from gcntrain.model.run import check_widths, model_summary, result_summary
from gcntrain.model.trainer import model_layers
from gcntrain.model.wrappers import FaultOps, OpsProxy
from gcntrain.schemes import registry
from gcntrain.schemes.loading import DEFAULT_SOURCE, check_classes, open_source
from gcntrain.schemes.loading.numbering import partition_label
from gcntrain.status import QUIET_SECONDS


class EpochMarks(OpsProxy):
    """Snapshots the communicator's tally at every ``begin_epoch`` and ``end_epoch``, and
    measures, per epoch, the communication seconds spent inside graph products and inside
    dense products (``inside``: one {"graph": s, "dense": s} per epoch), so that the
    trainer's aggregation and dense times can be split into compute and communication."""

    def __init__(self, inner, tally: Tally):
        super().__init__(inner)
        self.tally = tally
        self.begins: list[Tally] = []
        self.ends: list[Tally] = []
        self.inside: list[dict[str, float]] = []

    def _call(self, name, fn, args, kwargs):
        if name == "begin_epoch":
            self.begins.append(self.tally.snapshot())
            self.inside.append({"graph": 0.0, "dense": 0.0})
        cat = PROTOCOL[name]
        if cat in ("graph", "dense") and self.inside:
            c0 = self.tally.comm_seconds()
            out = fn(*args, **kwargs)
            self.inside[-1][cat] += self.tally.comm_seconds() - c0
            return out
        out = fn(*args, **kwargs)
        if name == "end_epoch":
            self.ends.append(self.tally.snapshot())
        return out


def maybe_fault(ops, rank: int):
    """Test hook: ``GCNTRAIN_FAULT=R:N`` makes rank R raise in its N-th aggregation."""
    spec = os.environ.get("GCNTRAIN_FAULT")
    if not spec:
        return ops
    r, n = spec.split(":")
    return FaultOps(ops, int(n)) if int(r) == rank else ops


@dataclass
class Run:
    """What one rank trained and measured."""

    result: object  # TrainResult of the local block
    ops: object
    layout: object
    local: object  # LocalGraph
    config: object  # the scheme's typed configuration (`SchemeConfig`)
    source: object
    tally_setup: Tally  # load agreement, setup exchanges, the training prelude
    epoch_tallies: list[Tally]  # one per epoch (begin_epoch .. end_epoch)
    tally_final: Tally  # final evaluation and parameter gathering
    setup_seconds: float
    agreements: int = 1
    epoch_inside: list = field(default_factory=list)  # EpochMarks.inside
    extra: dict = field(default_factory=dict)
    #: this rank's seconds per setup phase (`gcntrain.data.setup_phases`)
    setup_phases: dict = field(default_factory=dict)
    #: bytes of the raw node features the `LocalGraph` let go of once the trainer held its
    #: prepared copy (`gcntrain.job.features`), else 0: `held_data` counts them still
    features_bytes: int = 0

    def phases(self) -> Tally:
        """Everything this rank moved through the end of training."""
        t = self.tally_setup
        for e in self.epoch_tallies:
            t = t.merged(e)
        return t.merged(self.tally_final)


def load_rank(world, spec: JobSpec, handed=None):
    """Validate the configuration of the resolved job `spec` (its scheme named: ``auto`` is
    the registry's default for the ranks, no search), check that this rank's share fits
    in its memory (`gcntrain.job.memory_guard`, or ``spec.max_memory`` bytes) and load this
    rank's data, under one collective verdict: a failure on any rank raises the same
    `AgreedError` on every rank.  `handed`: (numbering key, `Numbering`) sent to every rank
    before the run's counters started (`gcntrain.job.numbering`: the one ``--scheme auto``'s
    search computed, or a slow partitioner's run by rank 0), taken where its key is the
    job's own instead of partitioning the graph again.

    Returns (the scheme's configuration, the source, the layout, this rank's `LocalGraph`).
    """
    from gcntrain.comm.node import ranks_on_node
    from gcntrain.job.memory_guard import check_rank

    scheme, config, options = spec.scheme_of(world.size), spec.config, dict(spec.options)
    per_node = ranks_on_node(world)  # collective: before the agreement, never inside

    def load():
        sc = registry.configured(scheme, world.size, options, config)
        src = open_source(spec.source)
        meta = src.meta()
        check_widths(meta, src.label)
        with setup_phases.phase("partition"):
            numbering = handed_numbering(handed, scheme, world.size, sc, spec)
            numbering = numbering or own_numbering(scheme, world.size, sc, spec, src)
            layout = scheme.layout(
                numbering,
                meta,
                world.size,
                sc,
                model_layers(config, meta.num_features, meta.num_classes),
            )
        req = layout.request(world.rank)
        widths = [meta.num_features, *config.hidden, meta.num_classes or 2]
        itemsize = np.dtype(config.dtype).itemsize
        check_rank(meta, req, widths, itemsize, per_node, spec.max_memory)
        return sc, src, layout, numbering, req

    # every rank measures its memory before any rank loads (one verdict), then all load
    sc, src, layout, numbering, req = agree(world, load)

    def read():
        with setup_phases.phase("read"):
            return check_classes(src.load(req, numbering))

    local = agree(world, read)
    return sc, src, layout, local


def check_job(out_dir, per_rank, machine, source, partition) -> None:
    """What a job can check before loading anything (`InputError`): ``-o`` can become an
    output directory, ``--per-rank`` an output file that is none of the inputs (the graph,
    the partition file), ``--machine`` names a profile (``local`` is always one: measured
    when first priced)."""
    if out_dir is not None:
        from gcntrain.model.output import check_out_dir

        check_out_dir(out_dir)
    if per_rank is not None:
        from gcntrain.data.atomic import check_output_file

        check_output_file(per_rank, (source, partition), "--per-rank")
    if machine is not None and str(machine) != DEFAULT_MACHINE:
        from gcntrain.simulate.local import load_machine

        load_machine(machine)


def verify_source(world, source) -> None:
    """On several ranks, rank 0 checks a graph file's content hash (streamed) while the
    others sleep, before any rank reads its rows: row-selective reads cannot check the hash,
    and a file serial training refuses must be refused under MPI too, with the same line
    and status on every rank."""
    if world.size == 1:
        return

    def check():
        src = open_source(source)
        check_widths(src.meta(), src.label)  # the widths first, as `load_rank` on one rank
        if getattr(src, "kind", "") == "file":
            src.verify()

    if world.rank != 0:  # the waiting ranks start Numba meanwhile, on the cores it leaves
        start_numba()
    on_root(world, check)


def train_with(
    world,
    spec: JobSpec,
    *,
    callback=None,
    agreements: int = 0,
    checkpoint=None,
    checkpoint_every: int = 1,
    resume=None,
    preempt=None,
    on_start=None,
    before: dict | None = None,
    backend=None,
    numbering=None,
) -> Run:
    """Configure and load (`load_rank`, with the `numbering` sent before the counters:
    `gcntrain.job.numbering`), set up and train the resolved job `spec` on `world`
    (its scheme: ``spec.scheme_of(world.size)``); with `checkpoint` (a directory) save the
    training state every `checkpoint_every` epochs and at the last; with `resume` (a
    directory) continue from its newest checkpoint (`gcntrain.job.checkpoint`).

    The setup is timed by phase (`gcntrain.data.setup_phases`) into ``Run.setup_phases``;
    `before` holds phases the caller timed before this call (the content hash check of
    `verify_source`), counted in the setup's phases and seconds.  `on_start`, when given,
    is called with {"setup_seconds", "setup_phases"} (this rank's) before the first epoch.
    `backend` (None: the host) is this rank's device backend (`gcntrain.job.device_run`),
    handed to the scheme's setup."""
    from gcntrain.job import checkpoint as ck
    from gcntrain.model.trainer import fit

    scheme, config, partition = spec.scheme_of(world.size), spec.config, spec.partition
    t0 = perf_counter()
    setup_phases.start()
    start = world.tally.snapshot()
    try:
        sc, src, layout, local = load_rank(world, spec, numbering)
        with setup_phases.phase("ops"):
            kind = support_kind(config.model, config.aggregator)
            local.values_dtype = np.dtype(config.dtype).name
            on = {} if backend is None else {"backend": backend}
            ops = scheme.setup(world, layout, local, kind, **on)
    finally:
        phases = setup_phases.stop()
    # the Ops keep what they need of the loaded rows; the raw adjacency is not held on
    local.indptr = local.indices = local.data = None
    before = dict(before or {})
    phases = {
        k: phases.get(k, 0.0) + before.get(k, 0.0)
        for k in setup_phases.PHASES
        if k in phases or k in before
    }
    setup_s = perf_counter() - t0 + sum(before.values())
    marks = EpochMarks(maybe_fault(ops, world.rank), world.tally)
    saver = state = resumed = None
    if checkpoint is not None or resume is not None:
        ident = ck.run_identity(
            scheme.name,
            world.size,
            sc.to_dict(),
            partition_label(partition, src.kind == "store", scheme),
            config,
            src.meta().content_hash,
            spec.partition_seed,
            ck.partition_digest(partition),
        )
        if resume is not None:
            state, resumed = ck.load_state(world, resume, ident, config.epochs)
            agreements += 1
        if checkpoint is not None:
            ck.prepare_root(world, checkpoint)
            saver = ck.Checkpointer(world, checkpoint, int(checkpoint_every), ident, preempt)
            agreements += 1
    if on_start is not None:
        on_start({"setup_seconds": setup_s, "setup_phases": phases})
    features_bytes = 0 if keeps_raw(scheme, sc) else counted_bytes(ops, local)
    # the epoch lines come at least every `EVERY_SECONDS` while epochs are shorter
    with status.phase("training", quiet=EVERY_SECONDS + QUIET_SECONDS):
        result = fit(
            marks,
            raw_features(scheme, sc, local),
            local.labels,
            local.masks,
            local.num_classes,
            config,
            callback=callback,
            num_features=local.num_features,
            checkpoint=saver,
            resume=state,
            max_memory=spec.max_memory,
        )
    ops.close(phase=Phase("control"))  # every rank, after its last product
    end = world.tally.snapshot()
    epochs = [b.since(a) for a, b in zip(marks.begins, marks.ends)]
    # an approximate configuration's drift: one more pass, after the counters stopped
    drift = measure_drift(scheme, sc, ops, local, config, result)
    return Run(
        result=result,
        ops=ops,
        layout=layout,
        local=local,
        config=sc,
        source=src,
        tally_setup=marks.begins[0].since(start),
        epoch_tallies=epochs,
        tally_final=end.since(marks.ends[-1]),
        setup_seconds=setup_s,
        setup_phases=phases,
        features_bytes=features_bytes,
        agreements=agreements + 1,
        epoch_inside=marks.inside[: len(epochs)],
        extra={
            **({"resumed_from": resumed} if resumed else {}),
            **({"drift": drift} if drift is not None else {}),
        },
    )


def run_job(
    spec: JobSpec,
    outputs: JobOutputs | None = None,
    *,
    comm=None,
    callback=None,
    on_start=None,
    notice=None,
) -> tuple[object, dict]:
    """Train the job `spec` on every rank of `comm` (default: the launcher's job), writing
    `outputs`.

    Parameters
    ----------
    spec : the job (`gcntrain.job.spec.JobSpec`): ``scheme="auto"`` trains serially on one
        rank and, on several, with the recommender's choice (`gcntrain.job.auto.choose`:
        the exact configuration with the least predicted epoch time on ``spec.machine``,
        default `DEFAULT_MACHINE`); ``threads``: Numba threads per rank (default: cores /
        ranks on the node); ``max_memory``: bytes one rank may use (default: the node's
        available memory divided by its ranks): a rank whose estimated share exceeds it is
        refused before loading.
    outputs : what to write (`gcntrain.job.spec.JobOutputs`; None: nothing).
    comm : a counted communicator (tests); default MPI_COMM_WORLD or none for serial.
    callback : per-epoch hook (progress); its ``finish(stopped_early)``, where it has one,
        is called after the last epoch.
    on_start : called on every rank once the data are loaded and the scheme set up, right
        before the first epoch, with {"ranks_per_node", "threads_per_rank", "node_cores"}
        (progress: the oversubscription note, watching Numba compile).
    notice : called on rank 0 with a line of progress text (``--scheme auto``: the search
        and its choice); None: silent.

    Returns
    -------
    (TrainResult of the local block, job summary identical on every rank)
    """
    outputs = JobOutputs() if outputs is None else outputs
    size = comm.size if comm is not None else launched_world_size()
    world = spec.scheme_of(size).world(comm)
    stop = None
    if outputs.checkpoint is None:
        from gcntrain.job.signals import NoCheckpointStop

        stop = NoCheckpointStop(world.rank, world.size)
        stop.install()
    try:
        return _run(world, size, spec, outputs, callback, on_start, notice)
    finally:
        if stop is not None:
            stop.restore()


def _run(world, size, spec: JobSpec, outputs: JobOutputs, callback, on_start, notice):
    """`run_job`'s body, under its signal handling."""
    from gcntrain.device.mpi import check_override

    check_override()  # every rank alike: the launcher gives them one environment
    t0 = time.perf_counter()
    per_node = ranks_on_node(world)
    nthreads = auto_threads(world, spec.threads, per_node)
    if spec.threads is not None and nthreads < spec.threads and notice is not None:
        if world.rank == 0:  # Numba's pool was sized when the process started
            notice(
                f"note: --threads {spec.threads}: a rank here runs at most {nthreads} Numba "
                f"threads (NUMBA_NUM_THREADS or the cores when it started); training on "
                f"{nthreads}"
            )
    node = {
        "ranks_per_node": per_node,
        "threads_per_rank": nthreads,
        "node_cores": os.cpu_count() or 1,
    }
    checks = 0
    if outputs.out_dir is not None or outputs.per_rank is not None or spec.machine is not None:
        # before any rank loads: the outputs can be written and are no input, the profile
        # exists (one line, exit 2, every rank; the `checks` of the plan: with -o)
        job = (outputs.out_dir, outputs.per_rank, spec.machine, spec.source, spec.partition)
        agree(world, lambda: check_job(*job) if world.rank == 0 else None, False)
        checks = int(outputs.out_dir is not None)
    chosen = None
    if spec.device != "cpu":  # --device gpu|auto: one verdict on every rank (docs/gpu.md)
        from gcntrain.job import device_run

        chosen = device_run.resolve(world, spec.device)
        if chosen.note and notice is not None and world.rank == 0:
            notice(chosen.note)
    t_verify = time.perf_counter()
    verify_source(world, spec.source)  # before the auto search: it plans a checked file
    verified = {"verify": time.perf_counter() - t_verify} if world.size > 1 else {}
    with status.phase("choosing the configuration"):
        job = resolve(spec, size, world, per_node, notice, DEFAULT_MACHINE)
    spec, sch = job.spec, job.scheme
    handed = job.numbering
    if handed is None:  # a slow partitioner or an order: rank 0 alone, before the counters
        setup_phases.start()
        with status.phase("partitioning the graph"), setup_phases.phase("partition"):
            handed = numbering_once(world, spec, sch)
        once = setup_phases.stop()  # partition, and reorder where rank 0 ordered the rows
        if handed is not None:
            verified.update(once)
    backend = None  # the host; a device backend, made once per rank, with --device gpu
    if chosen is not None and chosen.kind != "cpu":
        device_run.check_supported(chosen, sch, spec.options, size)
        backend = device_run.backend_for(world, chosen, per_node)
    # with checkpoints, SIGTERM / SIGUSR1 end the run after the epoch (without: `NoCheckpointStop`)
    preempt = None
    if outputs.checkpoint is not None:
        from gcntrain.job.checkpoint import PreemptFlag

        preempt = PreemptFlag()
        preempt.install()
    try:
        run = train_with(
            world,
            spec,
            callback=callback,
            agreements=checks,
            checkpoint=outputs.checkpoint,
            checkpoint_every=outputs.checkpoint_every,
            resume=outputs.resume,
            preempt=preempt,
            on_start=None if on_start is None else (lambda s: on_start({**node, **s})),
            before=verified,
            backend=backend,
            numbering=handed,
        )
    finally:
        if preempt is not None:
            preempt.restore()
    res, local = run.result, run.local
    finish = getattr(callback, "finish", None)
    if finish is not None:  # the progress printer: the last epoch's line
        finish(bool(res.stopped_early))
    held = world.allgatherv(np.array([held_data(run)], dtype=np.int64), [1] * world.size, "report")
    scheme_report = epoch_stats(world, run)
    comm_report = epoch_comm(world, run.epoch_tallies, run.epoch_inside, res.history)
    stats = summarize_ranks(
        world,
        run.epoch_tallies,
        run.tally_setup,
        result_summary(res)["epoch_seconds"],
        run.setup_seconds,
        run.setup_phases,
    )
    summary = {
        **result_summary(res),
        "scheme": sch.name,
        "ranks": world.size,
        "scheme_options": run.config.to_dict(),
        "partition": partition_label(spec.partition, run.source.kind == "store", sch),
        "threads_per_rank": nthreads,
        "ranks_per_node": per_node,
        "node_cores": node["node_cores"],
        **stats,
        "total_seconds": time.perf_counter() - t0,
        **model_summary(spec.config),
        "graph": local.name,
        "source": DEFAULT_SOURCE if spec.source is None else run.source.label,
        "num_nodes": local.n,
        "nnz": local.nnz,
        "num_features": local.num_features,
        "num_classes": local.num_classes,
        "held_bytes_max": int(held.max()),
        "held_bytes_mean": float(held.mean()),
        "mpi_buffers": "host" if backend is None else backend.mpi_buffers,
        **scheme_report,
        **comm_report,
    }
    if "drift" in run.extra:
        summary["drift"] = run.extra["drift"]
    if outputs.checkpoint is not None:
        summary["checkpoint"] = os.fspath(outputs.checkpoint)
        summary["checkpoint_every"] = int(outputs.checkpoint_every)
    if outputs.resume is not None:
        summary["resume"] = os.fspath(outputs.resume)
        summary["resumed_from_epoch"] = int(run.extra["resumed_from"]["epoch"])
    if job.grid_search is not None:
        summary["grid_search"] = job.grid_search
    if job.recommendation is not None:
        summary["recommendation"] = job.recommendation
    if outputs.per_rank is not None:
        phases = gather_phases(world, run.phases())

        def write_table():
            if world.rank == 0:
                from gcntrain.simulate.table import write_table as write

                write(outputs.per_rank, phases)

        agree(world, write_table, name_rank=False)
        summary["per_rank"] = os.fspath(outputs.per_rank)
    if outputs.out_dir is not None:
        out = outputs.out_dir
        _write_outputs(world, run, spec.config, summary, out, outputs.config_toml)
        summary["out"] = os.fspath(out)
    return res, summary


#: the profile ``--scheme auto`` prices configurations with when none is given
DEFAULT_MACHINE = "local"


def epoch_stats(world, run: Run) -> dict:
    """Merge the scheme's per-epoch measurements (`Ops.epoch_stats`, maximum over ranks)
    into the epoch records; return their medians for the summary, plus, where local rows
    are replicated (`Ops.counted`), the replication factor (rows held / nodes)."""
    ops, hist = run.ops, run.result.history
    out: dict = {}
    if ops.counted is not None:
        held = world.allreduce(np.array([len(ops.rows)], dtype=np.int64), "report")
        out["replication_factor"] = float(held[0]) / max(ops.n_global, 1)
    stats = list(ops.epoch_stats)
    if stats and len(stats) == len(hist):
        keys = sorted(stats[0])
        table = np.array([[s[k] for k in keys] for s in stats], dtype=np.float64)
        table = world.allreduce(table, "report", op="max")
        for rec, row in zip(hist, table):
            rec.extra.update(zip(keys, map(float, row)))
        out.update({k: float(np.median(table[:, i])) for i, k in enumerate(keys)})
    if "replication_factor" in out:
        for rec in hist:
            rec.extra["replication_factor"] = out["replication_factor"]
    return out


def held_data(run: Run) -> int:
    """Bytes of graph data this rank holds after training: the Ops' structures, the node
    data and the layout (`held_bytes`; communicators and their counters, and the message
    buffers the row schemes keep across calls (`Scratch`), excluded); the node features
    as the trainer holds them (`Run.features_bytes`) where the `LocalGraph` let go of
    the raw ones."""
    from gcntrain.comm.communicator import Comm
    from gcntrain.schemes.base import Scratch
    from gcntrain.schemes.held import held_bytes

    return held_bytes(run.ops, run.local, skip=(Comm, Scratch)) + run.features_bytes


def _write_outputs(
    world, run: Run, config, summary: dict, out_dir, config_toml: str | None = None
) -> None:
    """Gather the predictions of the canonical rows to rank 0, which writes every file
    (config.toml too when `config_toml` is given)."""
    from gcntrain.model.output import write_outputs

    res, local = run.result, run.local
    owned = run.layout.owned(world.rank)
    # True / False: all or none of the local rows; an int k: the first k (vertex-cut roots)
    if isinstance(owned, (bool, np.bool_)):
        k = res.rows.size if owned else 0
    else:
        k = int(owned)
    ids = res.rows[:k]
    cols = np.stack([ids, res.predictions[:k], local.labels[:k]], axis=1)
    counts = world.allgatherv(np.array([ids.size], dtype=np.int64), [1] * world.size, "report")
    got = world.gatherv(np.ascontiguousarray(cols.astype(np.int64)), counts, 0, "report")

    def write():
        if world.rank != 0:
            return
        order = np.argsort(got[:, 0], kind="stable")
        g = got[order]
        keys = ("scheme", "ranks", "scheme_options", "partition", "graph", "source")
        resolved = {
            **config.to_dict(),
            **{k: summary[k] for k in keys},
            "num_nodes": summary["num_nodes"],
            "num_classes": summary["num_classes"],
            "support": support_kind(config.model, config.aggregator),
            "layers": res.layers,
            "bias": res.layers[0]["bias"],
        }
        write_outputs(
            out_dir,
            resolved,
            res.history,
            res.weights,
            g[:, 1],
            g[:, 0],
            labels=g[:, 2],
            layers=res.layers,
            config_toml=config_toml,
        )

    agree(world, write, name_rank=False)
