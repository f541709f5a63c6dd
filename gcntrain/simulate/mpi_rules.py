"""Which algorithm an MPI library's default decision logic runs for a collective.

A machine profile names its rule set with ``[network] mpi_rules``:

* ``"min"`` (the default): no library; `gcntrain.simulate.collectives` prices the cheapest
  of the textbook algorithms (a lower bound of a well-tuned library), as it always has;
* ``"mpich"``: MPICH 4.x's built-in selection (`MPICH`, `mpich_choice`);
* ``"openmpi"``: Open MPI's ``coll/tuned`` fixed decision rules, 4.1 / 5.0 (the ``OMPI_*``
  tables), and ``coll/libnbc`` for the non-blocking Ialltoallv.

`select` gives, for a communicator of `p` ranks and a message size, the algorithm's name;
`gcntrain.simulate.collectives` prices each name (its messages and bytes on the critical
path) and `one_way` says whether an all-to-all algorithm drives one direction of a torus cut
at a time (`gcntrain.simulate.topology`).  Only commutative, built-in reductions are
tabulated (the runtime sums).  The message size each library decides on differs and is
documented per collective in `select`.

What is not modelled here: MPICH's node-aware compositions (ch4 may first split a
communicator spanning several nodes into node and leader communicators), Open MPI 5's
``coll/han`` (hierarchical, at a higher priority than ``tuned`` for Allreduce, Bcast and
Allgather where it is enabled), vendor libraries' own algorithms (Fujitsu MPI is Open MPI
based but offloads Barrier, Allreduce, Reduce and Bcast to Tofu hardware: docs/validation.md)
and segmentation (the fixed rules pass a segment size of 0, so the segmented ring is the
ring and the trees send whole messages).
"""

from __future__ import annotations

import numpy as np

from gcntrain.errors import InputError

#: rule sets a profile may name
RULES = ("min", "mpich", "openmpi")
#: collectives `select` knows
COLLECTIVES = (
    "allreduce",
    "bcast",
    "allgather",
    "allgatherv",
    "reduce_scatter",
    "alltoall",
    "alltoallv",
    "ialltoallv",
)
INF = float("inf")
#: bytes of one element of the runtime's reductions (float32), for MPICH's count rule
ITEMSIZE = 4

# -- MPICH 4.x ----------------------------------------------------------------------------
#: MPICH 4.3.2's default selection (``MPII_coll_generic_json`` in
#: src/mpi/coll/src/csel_json_autogen.c, generated from maint/tuning/coll/mpir/generic.json),
#: read in the mpich-4.3.2 release copy of wesley-miqueias/Conceitos-HPC-MPI (commit
#: 6a4e72c) and pmodels/mpich maint/tuning/coll/mpir/generic.json (commit 0f75f27, which
#: has the same Allreduce, Allgather(v), Reduce-scatter and Alltoall(v) rules); the
#: figures equal the defaults of the CVARs named, which MPICH 3.x's decision code read.
MPICH = {
    # Bcast: binomial below 8 ranks (MPIR_CVAR_BCAST_MIN_PROCS) or up to 12288 bytes
    # (MPIR_CVAR_BCAST_SHORT_MSG_SIZE); a power of two up to 524288 bytes
    # (MPIR_CVAR_BCAST_LONG_MSG_SIZE) scatters and recursive-doubling allgathers; else
    # scatter and ring allgather
    "bcast_min_procs": 8,
    "bcast_short": 12288,
    "bcast_long": 524288,
    # Allreduce: recursive doubling up to 8 bytes or while the element count is below the
    # largest power of two <= p; else Rabenseifner (reduce-scatter + allgather).  The JSON
    # says 8 where MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE (2048) was MPICH 3's cut
    "allreduce_short": 8,
    # Allgather(v), on p x the block: a power of two below 524288 bytes
    # (MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE) recursive doubling; another p below 81920
    # (MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE) Bruck; else ring
    "allgather_short": 81920,
    "allgather_long": 524288,
    # Reduce-scatter (commutative), on the whole vector: recursive halving below 524288
    # bytes (MPIR_CVAR_REDSCAT_COMMUTATIVE_LONG_MSG_SIZE), else pairwise
    "redscat_long": 524288,
    # Alltoall, on the bytes per destination: from 8 ranks Bruck up to 256 bytes
    # (MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE); scattered (isend/irecv in blocks) up to 32768
    # (MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE); else pairwise
    "alltoall_min_procs": 8,
    "alltoall_short": 256,
    "alltoall_medium": 32768,
    # Alltoallv is always "scattered" and Ialltoallv "blocked": isend/irecv to the next
    # MPIR_CVAR_ALLTOALL_THROTTLE (32) ranks at a time (rank + 1, rank + 2, ...), a wait
    # between blocks, peers with nothing to send skipped
    "alltoall_throttle": 32,
}


def _rows(*rows) -> tuple:
    """((p below, ((bytes below, algorithm), ...), algorithm above), ...) of rows written
    as (p below, "alg <bytes alg <bytes ... alg")."""
    out = []
    for below, spec in rows:
        words = spec.split()
        cuts = tuple((int(words[i + 1][1:]), words[i]) for i in range(0, len(words) - 1, 2))
        out.append((below, cuts, words[-1]))
    return tuple(out)


# -- Open MPI 4.1 / 5.0 coll/tuned ----------------------------------------------------------
# Rows: (communicator sizes below, "alg <bytes alg <bytes ... alg"): the first algorithm
# below the first bound, the next below the next, the last above them all; a row applies
# from the previous row's bound, the smallest communicators first.  Read in
# ompi/mca/coll/tuned/coll_tuned_decision_fixed.c of BullSequana/OpenMPI5 (commit c3318e2),
# a fork of Open MPI 5.0 whose fixed rules carry upstream's note that they were averaged
# from the ompi-collectives-tuning measurements (the tables upstream adopted in 4.1); the
# per-rank Allgatherv size is upstream main's as well.  Commutative operations only.

#: Allreduce, on the vector's bytes
OMPI_ALLREDUCE = _rows(
    (
        4,
        "ring <8 recursive_doubling <4096 ring <8192 recursive_doubling <16384 "
        "ring <65536 segmented_ring <262144 rabenseifner",
    ),
    (8, "ring <16 recursive_doubling <8192 rabenseifner"),
    (16, "recursive_doubling <8192 rabenseifner"),
    (32, "segmented_ring <64 recursive_doubling <4096 rabenseifner"),
    (64, "segmented_ring <128 rabenseifner"),
    (128, "recursive_doubling <262144 rabenseifner"),
    (256, "nonoverlapping <131072 recursive_doubling <262144 rabenseifner"),
    (512, "nonoverlapping <4096 rabenseifner"),
    (2048, "nonoverlapping <2048 recursive_doubling <16384 rabenseifner"),
    (4096, "nonoverlapping <2048 segmented_ring <4096 recursive_doubling <16384 rabenseifner"),
    (INF, "nonoverlapping <2048 segmented_ring <16384 recursive_doubling <32768 rabenseifner"),
)

#: Bcast, on the message's bytes (knomial: radix 4; chain: fan-out 4, the defaults)
OMPI_BCAST = _rows(
    (
        4,
        "pipeline <32 binary_tree <256 pipeline <512 knomial <1024 linear "
        "<32768 binary_tree <131072 chain <262144 linear <524288 binomial "
        "<1048576 binary_tree",
    ),
    (8, "binary_tree <64 binomial <128 binary_tree <2048 binomial <8192 linear <1048576 chain"),
    (16, "knomial <8 binary_tree <64 knomial <4096 binary_tree <16384 binomial <32768 linear"),
    (32, "knomial <4096 binomial <1048576 scatter_allgather"),
    (64, "binomial <2048 knomial"),
    (128, "knomial"),
    (256, "binomial <2 binary_tree <16384 linear <32768 binary_tree <65536 knomial"),
    (1024, "knomial <16384 split_binary_tree <32768 knomial"),
    (2048, "knomial <524288 scatter_allgather"),
    (4096, "knomial <262144 scatter_allgather"),
    (INF, "knomial <8192 binary_tree <16384 knomial <262144 scatter_allgather"),
)

#: Allgather, on each rank's block (recursive doubling needs a power of two and neighbour
#: exchange an even p: Open MPI falls back to Bruck and ring)
OMPI_ALLGATHER = _rows(
    (3, "two_proc"),
    (32, "recursive_doubling"),
    (64, "recursive_doubling <1024 neighbor <65536 ring"),
    (128, "recursive_doubling <512 neighbor <65536 ring"),
    (256, "recursive_doubling <512 neighbor <131072 ring <524288 neighbor <1048576 ring"),
    (
        512,
        "recursive_doubling <32 bruck <128 recursive_doubling <1024 neighbor "
        "<131072 ring <524288 neighbor <1048576 ring",
    ),
    (1024, "recursive_doubling <64 bruck <256 recursive_doubling <2048 neighbor"),
    (
        2048,
        "recursive_doubling <4 bruck <8 recursive_doubling <16 bruck <32 "
        "recursive_doubling <256 bruck <512 recursive_doubling <4096 neighbor",
    ),
    (4096, "bruck <32 recursive_doubling <128 bruck <512 recursive_doubling <4096 neighbor"),
    (
        INF,
        "recursive_doubling <2 bruck <8 recursive_doubling <16 bruck <512 "
        "recursive_doubling <4096 neighbor",
    ),
)

#: Allgatherv, on the mean block (the total over p); "default" gathers to one rank and
#: broadcasts
OMPI_ALLGATHERV = _rows(
    (3, "ring <2048 two_proc <4096 ring <8192 two_proc"),
    (8, "default <256 neighbor <4096 ring <8192 neighbor <16384 bruck <262144 neighbor"),
    (16, "default <1024 bruck"),
    (32, "default <128 bruck <262144 ring"),
    (64, "default <256 bruck <8192 ring"),
    (128, "default <256 bruck <4096 ring"),
    (256, "bruck <1024 neighbor <65536 ring"),
    (512, "bruck <1024 ring"),
    (1024, "bruck <512 default <1024 bruck <4096 neighbor <1048576 ring"),
    (INF, "bruck <4096 neighbor"),
)

#: Reduce_scatter, on the whole vector's bytes ("nonoverlapping": reduce, then scatterv)
OMPI_REDUCE_SCATTER = _rows(
    (4, "ring <65536 butterfly <131072 ring"),
    (8, "nonoverlapping <8 recursive_halving <262144 ring"),
    (32, "recursive_halving <262144 ring"),
    (64, "nonoverlapping <64 recursive_halving <2048 butterfly <524288 ring"),
    (
        128,
        "nonoverlapping <256 recursive_halving <512 butterfly <2048 "
        "recursive_halving <4096 butterfly",
    ),
    (256, "nonoverlapping <256 recursive_halving <512 butterfly"),
    (512, "nonoverlapping <256 recursive_halving <1024 butterfly"),
    (
        1024,
        "nonoverlapping <512 recursive_halving <2048 butterfly <8192 "
        "recursive_halving <16384 butterfly",
    ),
    (
        2048,
        "nonoverlapping <512 recursive_halving <4096 butterfly <16384 "
        "recursive_halving <32768 butterfly",
    ),
    (4096, "nonoverlapping <512 recursive_halving <4096 butterfly"),
    (INF, "nonoverlapping <1024 recursive_halving <8192 butterfly"),
)

#: Alltoall, on the bytes per destination ("linear": all isend/irecv posted at once;
#: "linear_sync": the same with a bounded number outstanding)
OMPI_ALLTOALL = _rows(
    (
        3,
        "pairwise <2 two_proc <4 pairwise <16 two_proc <64 pairwise <256 "
        "two_proc <4096 pairwise <32768 linear_sync <262144 two_proc <1048576 "
        "pairwise",
    ),
    (
        8,
        "linear_sync <8192 linear <16384 linear_sync <65536 linear <524288 "
        "pairwise <1048576 linear",
    ),
    (16, "linear_sync <262144 linear"),
    (
        32,
        "linear_sync <4 bruck <512 linear_sync <8192 linear <32768 linear_sync "
        "<262144 linear <524288 linear_sync",
    ),
    (64, "bruck <512 linear <524288 linear_sync"),
    (128, "bruck <1024 linear <2048 linear_sync <4096 linear <262144 pairwise"),
    (256, "bruck <1024 linear_sync <2048 linear <262144 pairwise"),
    (512, "bruck <1024 linear_sync <8192 linear <32768 pairwise"),
    (
        1024,
        "bruck <512 linear_sync <8192 linear <16384 linear_sync <131072 linear <262144 pairwise",
    ),
    (
        2048,
        "bruck <512 linear_sync <1024 linear <2048 linear_sync <16384 linear <262144 linear_sync",
    ),
    (4096, "bruck <1024 linear_sync <4096 linear <8192 linear_sync <131072 linear"),
    (
        INF,
        "bruck <2048 linear_sync <8192 linear <16384 linear_sync <32768 linear <65536 linear_sync",
    ),
)

#: Alltoallv, by the communicator's size alone ("linear": Open MPI's basic linear)
OMPI_ALLTOALLV = _rows(
    (4, "pairwise"),
    (64, "linear"),
    (128, "pairwise"),
    (256, "linear"),
    (1024, "pairwise"),
    (INF, "linear"),
)

#: Ialltoallv: coll/tuned has no non-blocking collectives; coll/libnbc's Ialltoallv posts
#: every non-empty send and receive in one round (open-mpi/ompi
#: ompi/mca/coll/libnbc/nbc_ialltoallv.c, its linear schedule)
OMPI_IALLTOALLV = _rows((INF, "linear"))

OMPI = {
    "allreduce": OMPI_ALLREDUCE,
    "bcast": OMPI_BCAST,
    "allgather": OMPI_ALLGATHER,
    "allgatherv": OMPI_ALLGATHERV,
    "reduce_scatter": OMPI_REDUCE_SCATTER,
    "alltoall": OMPI_ALLTOALL,
    "alltoallv": OMPI_ALLTOALLV,
    "ialltoallv": OMPI_IALLTOALLV,
}


def _pow2(p: np.ndarray) -> np.ndarray:
    q = np.maximum(p, 1).astype(np.int64)
    return (q & (q - 1)) == 0


def _floor_pow2(p: np.ndarray) -> np.ndarray:
    """The largest power of two <= p (1 for p <= 1)."""
    return 2.0 ** np.floor(np.log2(np.maximum(p, 1.0)))


def rows_choice(rows, p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The algorithm `rows` (an ``OMPI_*`` table) names for each (p, n)."""
    out = np.full(p.shape, rows[-1][2], dtype=object)
    low = 0.0
    for below_p, cuts, above in rows:
        alg = np.full(p.shape, above, dtype=object)
        for below_n, name in reversed(cuts):
            alg = np.where(n < below_n, name, alg)
        out = np.where((p >= low) & (p < below_p), alg, out)
        low = below_p
    return out


def mpich_choice(collective: str, p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The algorithm MPICH 4.x runs (`MPICH`) for each (p, n)."""
    t, pow2 = MPICH, _pow2(p)
    if collective == "allreduce":
        short = (n <= t["allreduce_short"]) | (n / ITEMSIZE < _floor_pow2(p))
        return np.where(short, "recursive_doubling", "rabenseifner").astype(object)
    if collective == "bcast":
        big = np.where(pow2 & (n <= t["bcast_long"]), "scatter_allgather", "scatter_ring_allgather")
        small = (p < t["bcast_min_procs"]) | (n <= t["bcast_short"])
        return np.where(small, "binomial", big).astype(object)
    if collective in ("allgather", "allgatherv"):
        total = p * n
        two = np.where(total < t["allgather_long"], "recursive_doubling", "ring")
        other = np.where(total < t["allgather_short"], "bruck", "ring")
        return np.where(pow2, two, other).astype(object)
    if collective == "reduce_scatter":
        return np.where(n < t["redscat_long"], "recursive_halving", "pairwise").astype(object)
    if collective == "alltoall":
        mid = np.where(n <= t["alltoall_medium"], "scattered", "pairwise")
        bruck = (p >= t["alltoall_min_procs"]) & (n <= t["alltoall_short"])
        return np.where(bruck, "bruck", mid).astype(object)
    if collective == "alltoallv":
        return np.full(p.shape, "scattered", dtype=object)
    if collective == "ialltoallv":
        return np.full(p.shape, "blocked", dtype=object)
    raise ValueError(f"no MPICH rule for {collective!r}")


def select(rules: str, collective: str, p, nbytes) -> np.ndarray:
    """The algorithm (object array of names) `rules` run for `collective` over `p` ranks.

    Parameters
    ----------
    rules : str
        One of `RULES`; ``"min"`` names no algorithm (every entry ``"min"``).
    collective : str
        One of `COLLECTIVES`.
    p : array_like
        Communicator sizes.
    nbytes : array_like
        The size each library decides on: Allreduce and Reduce-scatter the whole vector,
        Bcast the message, Allgather(v) each rank's (mean) block (MPICH multiplies it by p
        itself), Alltoall the bytes per destination; Alltoallv and Ialltoallv ignore it.

    Returns
    -------
    numpy.ndarray
        Algorithm names, the shape of ``p`` and ``nbytes`` broadcast.
    """
    p, n = np.broadcast_arrays(np.asarray(p, np.float64), np.asarray(nbytes, np.float64))
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}")
    if rules == "min":
        return np.full(p.shape, "min", dtype=object)
    if rules == "mpich":
        return mpich_choice(collective, p, n)
    if rules != "openmpi":
        raise ValueError(f"unknown MPI rules {rules!r}")
    out = rows_choice(OMPI[collective], p, n)
    if collective == "allgather":  # Open MPI's own fall-backs
        out = np.where((out == "recursive_doubling") & ~_pow2(p), "bruck", out)
    if collective in ("allgather", "allgatherv"):
        out = np.where((out == "neighbor") & (p % 2 == 1), "ring", out)
    return out


def one_way(rules: str, collective: str, p: float, nbytes: float = 0.0) -> bool:
    """Whether the all-to-all algorithm `rules` run for `collective` (``alltoall``,
    ``alltoallv``, ``ialltoallv``) over `p` ranks sends along one direction of a torus's
    cut at a time: each step (or block of posted messages) shifts every rank's data the
    same way round.  Pairwise and Bruck do; MPICH's blocks of `MPICH` ``alltoall_throttle``
    consecutive ranks do once p - 1 exceeds a block; linear algorithms, which post all at
    once, use both directions.  ``"min"``: one way (the model's choice before the rules)."""
    if rules == "min":
        return True
    alg = str(select(rules, collective, p, nbytes).item())
    if alg in ("scattered", "blocked"):
        return p - 1 > MPICH["alltoall_throttle"]
    return alg in ("pairwise", "bruck")


def rules_of(network: dict, path: str) -> str:
    """The ``mpi_rules`` of a profile's ``[network]`` table (absent: ``"min"``);
    `InputError` for anything but one of `RULES`."""
    v = network.get("mpi_rules", "min")
    if v not in RULES:
        raise InputError(
            f"machine profile: network.mpi_rules must be one of {', '.join(RULES)}, got {v!r}",
            path,
        )
    return v
