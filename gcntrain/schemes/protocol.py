"""The Scheme protocol: what every distribution scheme provides (docs/architecture.md).

A scheme is a small object registered in `gcntrain.schemes.registry.SCHEMES`.  It declares its
options, validates them, computes a pure layout from the graph's metadata, the numbering and P
(no MPI), says what each rank must load, builds the rank's Ops, and describes every
communicating call as exchange steps (`gcntrain.comm.exchange`), which its Ops execute at run
time and the simulator prices for all ranks at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.exchange import BcastStages, Groups
from gcntrain.errors import InputError
from gcntrain.model.ops import PROTOCOL
from gcntrain.partition.reorder import AUTO_RCM_ROWS
from gcntrain.schemes.config import ConfigValue, SchemeConfig, SchemeOption, config_class
from gcntrain.schemes.graphs import GraphMeta, LoadRequest, LocalGraph, Numbering  # noqa: F401

#: `Scheme.overlaps`: the exchange travels while the same call multiplies its local block
OVERLAP_CALL = "call"
#: `Scheme.overlaps`: delayed exchanges complete while later epochs compute
OVERLAP_EPOCHS = "epochs"


def parse_order(value, size: int = 0, scheme=None) -> str:
    """The locality order of ``--reorder`` (None: "auto"); raises `InputError` for an
    unknown order."""
    from gcntrain.partition.reorder import CHOICES

    order = value or "auto"
    if order not in CHOICES:
        raise InputError(f"--reorder must be one of {', '.join(CHOICES)}, got {order!r}")
    return order


def auto_order_of(source, numbering) -> str:
    """The order ``--reorder auto`` stands for on `numbering` of `source`
    (`gcntrain.partition.reorder.auto_order`): "none" where the source fixes its own row
    order (a shard store, or a plan of one)."""
    from gcntrain.partition.reorder import auto_order

    if numbering.perm is None or getattr(source, "held_rows", False):
        return "none"
    return auto_order(int(np.diff(numbering.offsets).max(initial=0)))


#: ``--reorder``: the locality order of the rows inside each part
#: (`gcntrain.partition.reorder`), declared by the schemes whose layouts come from a vertex
#: partition of a graph file (printed only when it is not "auto")
REORDER_OPTION = SchemeOption(
    "reorder",
    ("--reorder",),
    "auto",
    "Order of the rows inside each part, for the locality of the sparse products: auto "
    f"(rcm where a part of a graph file holds more than {AUTO_RCM_ROWS:,} rows, else none), none, "
    "degree (most entries first) or rcm (reverse Cuthill-McKee); a renumbering only (results "
    "equal up to summation order, outputs in original ids); an explicit order needs a graph "
    "file.",
    str,
    "auto|none|degree|rcm",
    parse=parse_order,
    omit=("auto",),
)


@dataclass
class PlanContext:
    """Everything a plan may use: the layout, the support matrix's pattern in the new
    numbering (sorted rows; its values are stand-ins that no plan reads:
    `gcntrain.simulate.support`), whether the support is symmetric (values included), and a
    cache for derived quantities (halo pairs, block nonzero tables) so that each is computed
    once."""

    layout: Any
    support: sp.csr_matrix
    symmetric: bool
    #: stored feature nonzeros per node (new numbering), for the flops of sparse inputs
    feature_nnz: np.ndarray | None = None
    #: bytes per stored feature value of the source (schemes that move features in setup)
    feature_itemsize: int = 4
    #: node masks the graph has (train, val, test: bool arrays a rank holds)
    masks: int = 3
    #: the source is a shard store: at run time its numbering has no perm / inv arrays (the
    #: plan's has them, from the store's permutation file)
    store: bool = False
    #: the support kind (gcn, sage-mean, sage-gcn): where a layout splits S's entries, whether
    #: the identity is separate from a stored self-loop
    kind: str = "gcn"
    cache: dict = field(default_factory=dict)

    @property
    def P(self) -> int:
        return int(self.layout.size)

    def cached(self, name: str, fn):
        if name not in self.cache:
            self.cache[name] = fn()
        return self.cache[name]

    def feature_density(self, width: int) -> float:
        """The stored share of a `width`-column input with `feature_nnz` entries per node
        (1 where they are not known)."""
        if self.feature_nnz is None:
            return 1.0
        cells = float(self.feature_nnz.shape[0]) * width
        return float(self.feature_nnz.sum()) / cells if cells > 0 else 1.0

    def transpose(self) -> sp.csr_matrix:
        def make():
            T = self.support.T.tocsr()
            T.sort_indices()
            return T

        return self.support if self.symmetric else self.cached("transpose", make)


def decide_step(P: int) -> BcastStages:
    """`Ops.agree`: rank 0 broadcasts one byte to the world."""
    return BcastStages(
        Groups.world(P),
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.ones(1, dtype=np.int64),
    )


#: the Ops protocol categories whose calls may communicate: a scheme prices every such method
#: (``steps_<method>``) or declares that it moves nothing (`Scheme.silent`)
PRICED_CATEGORIES = ("control", "dense", "graph", "reduce", "rowwise")
#: the categories whose compute every scheme prices (``work_<method>``)
WORK_CATEGORIES = ("dense", "graph")


def pricing_table(cls: type) -> dict:
    """{protocol method: the name of `cls`'s ``steps_<method>``, or None where `cls.silent`
    declares that the method moves nothing} over every method of `PRICED_CATEGORIES`.

    Raises `TypeError` (at import, through the registry) when a communicating method is
    neither priced nor declared silent, when it is both, when a ``steps_`` or ``work_``
    method names no protocol method (a misspelling would otherwise price as nothing), or
    when a graph or dense product has no ``work_`` (its compute would price as zero)."""
    name = getattr(cls, "name", "") or cls.__name__
    priced = {m[len("steps_") :] for m in dir(cls) if m.startswith("steps_")}
    work = {m[len("work_") :] for m in dir(cls) if m.startswith("work_")}
    silent = set(cls.silent)
    problems = [f"steps_{m} names no Ops method" for m in sorted(priced - set(PROTOCOL))]
    problems += [f"work_{m} names no Ops method" for m in sorted(work - set(PROTOCOL))]
    problems += [f"silent names no Ops method: {m}" for m in sorted(silent - set(PROTOCOL))]
    table = {}
    for method, cat in PROTOCOL.items():
        if cat in WORK_CATEGORIES and method not in work:
            problems.append(f"{method}: no work_{method} (its compute would price as zero)")
        if cat not in PRICED_CATEGORIES:
            continue
        if method in priced and method in silent:
            problems.append(f"{method}: both priced (steps_{method}) and declared silent")
        elif method not in priced and method not in silent:
            problems.append(f"{method}: neither priced (steps_{method}) nor declared silent")
        table[method] = f"steps_{method}" if method in priced else None
    if problems:
        raise TypeError(f"scheme {name}: " + "; ".join(problems))
    return table


class Scheme:
    """Base class of the registered schemes (see the module docstring).

    Subclasses set `name`, `summary`, `options`, and implement `layout`, `setup`, and the
    pricing of their communicating calls, ``steps_<method>(ctx, call) -> [Step]``, plus
    `setup_steps`; every communicating protocol method is either priced or named in
    `silent` (`pricing_table`, checked when the registry loads the scheme).

    Every subclass gets its typed configuration class ``Config`` generated from its
    declarations (`config_declarations`: its options and `config_values`) unless it defines
    one (a `gcntrain.schemes.config.SchemeConfig` subclass); `configure` builds one.
    """

    #: the communicating protocol methods that move nothing in this scheme's layout: the row
    #: layout's (weights replicated, whole rows with all their columns)
    silent: frozenset = frozenset(
        {"gather_param", "param_sum_sq", "row_normalize", "predict", "matmul", "matmul_grads"}
    )

    name: str = ""
    summary: str = ""
    options: tuple[SchemeOption, ...] = ()
    #: fields of the configuration that no option sets (`check_training` completes them)
    config_values: tuple[ConfigValue, ...] = ()
    #: the typed configuration (generated for every subclass: `__init_subclass__`)
    Config: type[SchemeConfig]
    #: whether the scheme runs under MPI (False: one process, no MPI library needed)
    uses_mpi: bool = True
    #: the partition used without --partition
    default_partition: str = "block"
    #: the partitions ``simulate --sweep`` tries by default (each must suit `numbering`)
    sweep_partitions: tuple[str, ...] = ("block", "random", "metis")
    #: whether every rank holds whole rows of the node-wise matrices (all feature columns);
    #: LayerNorm and the label embedding (`TrainConfig.norm`, ``label_prop``) need it
    whole_rows: bool = True
    #: the work of planning one configuration in a configuration search (its bound, and its
    #: full price where the bound does not prune it), in the units of
    #: `gcntrain.simulate.deal` (about 30 ms on soc-Slashdot0902 at P = 4 on the 2-core
    #: development VM; each scheme's figure measured there, docs/simulator.md): what the
    #: deal balances the searching processes' shares by
    plan_cost: float = 1.0

    def plan_weight(self, config: SchemeConfig) -> float:
        """`plan_cost` of configuration `config` (a scheme whose options change its plan's
        work says so here)."""
        return float(self.plan_cost)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "Config" not in cls.__dict__:
            cls.Config = config_class(cls, cls.config_declarations())

    # -- options ---------------------------------------------------------------------------
    @classmethod
    def config_declarations(cls) -> tuple:
        """The fields of the configuration, in order: the scheme's own options, then its
        `config_values`, then the shared ``--reorder`` where declared (the order its printed
        configuration keeps)."""
        own = tuple(o for o in cls.options if o is not REORDER_OPTION)
        shared = (REORDER_OPTION,) if REORDER_OPTION in cls.options else ()
        return (*own, *cls.config_values, *shared)

    def configure(self, size: int, values: dict) -> SchemeConfig:
        """This scheme's typed configuration on `size` ranks from its option values, each
        parsed and validated once (`SchemeConfig.parse`: a bad value is one `InputError`);
        a scheme adds the checks that involve several options."""
        return self.Config.parse(self, size, values)

    def row_parts(self, size: int, config: SchemeConfig) -> int:
        """Parts of the row partition this scheme consumes."""
        return size

    def col_parts(self, size: int, config: SchemeConfig) -> int | None:
        """Column parts of a 2D block layout (None: rows only)."""
        return None

    #: the option holding the scheme's process grid (``--grid``), None without one: what
    #: ``--grid auto`` searches and `with_grid` sets, so no caller reads an option by name
    grid_option: str | None = None
    #: the value of `grid_option` that asks for the search
    GRID_AUTO = "auto"

    def wants_grid_search(self, values: dict | None) -> bool:
        """Whether the option `values` ask for ``--grid auto``."""
        return self.grid_option is not None and (values or {}).get(self.grid_option) == (
            self.GRID_AUTO
        )

    def with_grid(self, values: dict | None, grid: str) -> dict:
        """The option `values` with the process grid set to `grid`."""
        if self.grid_option is None:
            raise InputError(f"--scheme {self.name} has no process grid")
        return {**(values or {}), self.grid_option: grid}

    def locality_order(self, config: SchemeConfig) -> str:
        """The locality order (`REORDER_OPTION`) of the configured scheme's numbering:
        "none" for a scheme without the option."""
        return getattr(config, REORDER_OPTION.name) if REORDER_OPTION in self.options else "none"

    def grid_candidates(self, size: int) -> list[str]:
        """The `--grid` values possible on `size` ranks, for ``--grid auto`` (which plans
        each and keeps the least volume); empty for a scheme without a process grid."""
        return []

    def sweep_options(self, size: int) -> list[dict]:
        """The option values ``simulate --sweep`` (and the recommender) plan on `size` ranks:
        by default one per process grid, or the defaults.  Each is completed by `configure`;
        values the user gave replace these."""
        return [self.with_grid({}, g) for g in self.grid_candidates(size)] or [{}]

    def test_configurations(self, size: int) -> list[tuple[dict, str | None]]:
        """(options, partition or None for the default) that the generated MPI tests train
        on `size` ranks (tests/mpi: each equals serial training where `is_exact`, and its
        measured traffic equals the plan on every rank and phase); empty where the scheme
        does not run on `size` ranks.  By default every `sweep_options` value with the
        default partition."""
        return [(opts, None) for opts in self.sweep_options(size)]

    def is_exact(self, config: SchemeConfig) -> bool:
        """Whether training with this configuration equals serial training (within float
        tolerance); approximate modes (delayed or quantized messages) report their drift."""
        return True

    # -- layout and setup ------------------------------------------------------------------
    def numbering(
        self, source, parts: int, spec, seed: int, col_parts: int | None = None, order="none"
    ):
        """The `Numbering` of a run: by default the source's (the partition `spec` renumbered
        part by part, or a store's own), its rows ordered inside each part by the locality
        order `order` (``--reorder``); a vertex-cut scheme derives it from an edge assignment
        instead (and attaches the assignment as `Numbering.cut`)."""
        if getattr(source, "cut_store", False):
            raise InputError(
                "store holds vertex-cut (edge) shards written by `gcntrain shard -m libra`; "
                f"--scheme {self.name} reads row or block stores",
                source.path,
            )
        numbering = source.numbering(parts, spec, seed, col_parts)
        if order in (None, "auto"):
            order = auto_order_of(source, numbering)
        if order == "none":
            return numbering
        if numbering.perm is None:
            raise InputError(
                "a shard store fixes its own row order; --reorder applies to graph files",
                getattr(source, "path", None),
            )
        if getattr(source, "held_rows", False):  # a plan of a store, numbered as its file
            raise InputError(
                f"--reorder {order} needs the whole graph's structure, which a plan from a "
                "shard store does not hold: plan the graph file the store was written from, "
                "or leave out --reorder",
                source.path,
            )
        from gcntrain.data import setup_phases
        from gcntrain.partition.reorder import order_key, reorder_within_parts
        from gcntrain.schemes.loading import graph_structure

        with setup_phases.phase("reorder"):
            key = order_key(*graph_structure(source), order)
            perm, inv = reorder_within_parts(numbering.perm, numbering.offsets, key)
        return replace(numbering, perm=perm, inv=inv)

    def check_training(self, config: SchemeConfig, train) -> SchemeConfig | None:
        """Validate the scheme's configuration against the training configuration `train`
        (a `TrainConfig`: epochs, model, ...); raise `InputError`.  Returns the configuration
        completed from it (its `config_values`: the hier scheme's rounding seed is the run's
        seed), or None where nothing changes."""
        return config

    def layout(
        self,
        numbering: Numbering,
        meta: GraphMeta,
        size: int,
        config: SchemeConfig,
        model: tuple[dict, ...] | None = None,
    ):
        """The pure layout.  `model`: the network's layers (`Network.describe`: kind, f_in,
        f_out, order, ...), for a scheme whose layout follows the model (Plexus rotates its
        axes layer by layer); the others ignore it."""
        raise NotImplementedError

    def setup(self, world, layout, local: LocalGraph, kind: str):
        raise NotImplementedError

    def world(self, comm=None):
        """The communicator the scheme runs on (default MPI_COMM_WORLD)."""
        if comm is not None:
            return comm
        from gcntrain.comm.communicator import Comm

        return Comm()

    # -- exchange description --------------------------------------------------------------
    def price_key(self, ctx: PlanContext, call) -> tuple:
        """What identifies a call's price: `Call.key` (not the epoch, the direction or the
        training flag).  A scheme whose traffic depends on them (DistGNN's delayed
        exchanges) adds what it needs."""
        return call.key

    def steps(self, ctx: PlanContext, call) -> list:
        """Steps of one recorded Ops call (`gcntrain.model.wrappers.Call`)."""
        table = _TABLES.get(type(self))
        if table is None:
            table = _TABLES[type(self)] = pricing_table(type(self))
        fn = table.get(call.method)  # None: declared silent; absent: a local or hook method
        return [] if fn is None else getattr(self, fn)(ctx, call)

    def steps_agree(self, ctx: PlanContext, call) -> list:
        return [decide_step(ctx.P)]

    def setup_steps(self, ctx: PlanContext) -> list[tuple[str, Any]]:
        """(phase, step) of the scheme's setup exchanges."""
        return []

    # -- compute and memory (simulator) ----------------------------------------------------
    def work(self, ctx: PlanContext, call) -> np.ndarray:
        """int64 (P, 4): SpMM nonzeros, SpMM flops, dense flops and dense rows (the long
        dimension summed over the call's GEMMs: their k * n is flops / (2 x rows), which
        sets their rate) of one call on every rank (``work_<method>`` of the graph and dense
        products, which every scheme has: `pricing_table`; zero for the other methods)."""
        if PROTOCOL.get(call.method) not in WORK_CATEGORIES:
            return np.zeros((ctx.P, 4), dtype=np.int64)
        return getattr(self, f"work_{call.method}")(ctx, call)

    def overlaps(self, ctx: PlanContext, call) -> str:
        """How the sparse exchanges (`Pairs` steps) of `call` overlap its local compute:
        ``""`` not at all (the default); `OVERLAP_CALL` within the call (non-blocking sends
        and Waitany, Ialltoallv while the local block is multiplied: the time model ends the
        call at the later of its compute and its exchange, but the part of the exchange the
        rank's own CPU does, intra-node copies and oversubscribed waits, adds to its compute);
        `OVERLAP_EPOCHS` across epochs (delayed exchanges progressing inside later MPI calls:
        the whole exchange overlaps).  Truthy when the call overlaps at all."""
        return ""

    def plan_table_bytes(self, P: int, n: int, nnz: int) -> tuple[int, str]:
        """(bytes, what) of the tables over rank pairs a plan of this scheme on `P` ranks of
        a graph of `n` nodes and `nnz` stored entries holds beside the support's pattern
        (`gcntrain.simulate.planmemory`); (0, "") where it holds none beyond its passes
        over S."""
        return 0, ""

    def quant_elements(self, ctx: PlanContext, call) -> np.ndarray:
        """int64 (P,): elements every rank quantizes or dequantizes in one call (zero for a
        scheme without quantized messages)."""
        return np.zeros(ctx.P, dtype=np.int64)

    def spmm_rows(self, ctx: PlanContext, call) -> np.ndarray:
        """int64 (P,): rows every rank's SpMM kernels sweep in one call, whatever their
        entries (each row costs the kernel its pointers and its output row: the profile's
        ``spmm_row_ns``).  Default: a product with S sweeps the rank's rows of the output
        once (`output_rows`); other calls sweep none.  A scheme that runs a product as
        several kernels over the same rows (2D's SUMMA stages) says so."""
        if PROTOCOL.get(call.method) != "graph":
            return np.zeros(ctx.P, dtype=np.int64)
        return np.asarray(self.output_rows(ctx), dtype=np.int64)

    def output_rows(self, ctx: PlanContext) -> np.ndarray:
        """(P,) rows of the output every rank's products with S write: `footprint`'s
        ``rows``.  A scheme whose footprint costs more to build than its rows says them
        directly, so that a search's bound (`spmm_rows`) need not build the footprint."""
        return self.cached_footprint(ctx)["rows"]

    def cached_footprint(self, ctx: PlanContext) -> dict:
        """`footprint` of a plan, computed once per plan context (the time model, the
        summary, a search's bound and `spmm_rows` all read it; nobody changes it)."""
        return ctx.cached("footprint", lambda: self.footprint(ctx))

    def stream_bytes(self, ctx: PlanContext, call) -> np.ndarray:
        """int64 (P,): bytes every rank moves through memory in one call beyond its kernels'
        work (2D's accumulation of stage products and unpacking of received sparse pieces);
        the time model prices them at the rank's share of the node's memory bandwidth."""
        return np.zeros(ctx.P, dtype=np.int64)

    def held_estimate(self, ctx: PlanContext, itemsize: int) -> np.ndarray | None:
        """(P,) bytes of graph data each rank holds while training in a run of this dtype
        (`itemsize`): its adjacency structures, node data and layout arrays, as
        `gcntrain.schemes.held.held_bytes` measures them on the Ops and the `LocalGraph`;
        None where the scheme gives no estimate."""
        return None

    def replication_factor(self, ctx: PlanContext) -> float | None:
        """Node rows held per node where ranks hold replicas that count once (what `train`
        reports as ``replication_factor``); None where the scheme has none."""
        return None

    def plan_notes(self, ctx: PlanContext) -> dict:
        """Choices the plan made from the graph that the options do not show (p2p: how the
        backward product moves its rows), for `simulate --json` ``plan_notes``; empty by
        default."""
        return {}

    def footprint(self, ctx: PlanContext) -> dict:
        """Per-rank sizes the memory estimate needs (`gcntrain.simulate.work.memory`):
        int64 (P,) arrays "rows" (local rows of node-wise matrices), "adjacency" (stored
        entries of S and S^T), "buffer_rows" (rows of other ranks' blocks held at once), and
        a float (P,) "col_fraction" (share of a node-wise matrix's columns held locally);
        optionally "kept_buffer_rows" (rows of the message buffers a rank keeps across calls,
        one set per layer width: the row schemes' `Scratch`)."""
        raise NotImplementedError


Scheme.Config = config_class(Scheme, Scheme.config_declarations())

#: `pricing_table` of each Scheme class, built once
_TABLES: dict = {}


def check_model_support(scheme: Scheme, train) -> None:
    """Raise `InputError` when the model needs whole feature rows (LayerNorm, label
    propagation) and `scheme` splits them over ranks."""
    if scheme.whole_rows:
        return
    for flag, on in (("--norm layer", train.norm == "layer"), ("--label-prop", train.label_prop)):
        if on:
            raise InputError(
                f"{flag} needs whole feature rows on every rank; --scheme {scheme.name} "
                "splits feature columns over ranks"
            )


def check_only_own_options(scheme: Scheme, all_options: dict[str, SchemeOption], values: dict):
    """Raise `InputError` if an option of another scheme was given a non-default value."""
    own = {o.name for o in scheme.options}
    for name, value in values.items():
        opt = all_options.get(name)
        if opt is not None and name not in own and opt.given(value):
            flag = opt.flags[0] if opt.cli else f"{opt.flags[0]} {value}"
            raise InputError(
                f"{flag} does not apply to --scheme {scheme.name}"
                f" (it is an option of another scheme)"
            )
