"""The stand-in graphs of the validation rows and their partitions, cached on disk.

Each graph a priced row names is stood in for by an R-MAT graph of the paper's node count
and stored entries, drawn by ``scripts/papers_findings.py``'s generator (`rmat_graph`:
Graph500 a, b, c = 0.57, 0.19, 0.19, folded onto exactly n vertices with a random vertex
permutation, symmetric, no self-loops), or by the real graph where it is here
(soc-Slashdot0902). Graphs are written once as gcntrain graph files under
``CACHE/graphs/``; partitions (the partitioners gcntrain's ``--partition`` runs, with the
same arguments) as gcntrain partition files with their ``partition --report`` dict under
``CACHE/parts/``, so a plan reads them as ``--partition FILE`` and a later run reuses them.
Delete ``CACHE/parts`` when a partitioner's defaults change (the file names carry the
defaults they were computed with).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the default cache folder (gitignored)
CACHE = ROOT / ".cache" / "papers"
SLASHDOT = ROOT.parent / "shared" / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"


@dataclass(frozen=True)
class StandIn:
    """A graph the rows name, as it is stood in for here.

    Attributes
    ----------
    key : the stand-in's name (cache file name)
    names : the graph names of the CSV's ``graph`` column it stands in for
    n, nnz : nodes and stored entries (the paper's; an R-MAT stand-in has about ``nnz``
        symmetric entries, an even number)
    generator : "rmat" (`papers_findings.rmat_graph`, seed `seed`) or "snap" (the real graph)
    papers : which papers use it, with the paper's own counts
    bias : what the stand-in gets wrong about the real graph
    """

    key: str
    names: tuple[str, ...]
    n: int
    nnz: int
    generator: str
    papers: str
    bias: str
    seed: int = 0

    @property
    def min_degree(self) -> int:
        """1 where the stand-in has no isolated vertex (`papers_findings.rmat_graph`'s
        ``min_degree``): the hypergraph paper's Table 1 graphs are edge lists (SNAP's;
        SuiteSparse's coPapersDBLP and flickr are taken as such), in which every vertex has
        an edge, while R-MAT at their densities leaves 52-71 % of the vertices without one
        (docs/measurements/papercheck-informing-2026-12-07.md); 0 else."""
        return int(self.generator == "rmat" and self.papers == "hypergraph T1")

    @property
    def file_key(self) -> str:
        """The stand-in's name in the cache (graph and partition files): the key, with
        ``-d1`` for a stand-in without isolated vertices (they replaced the earlier ones)."""
        return self.key + ("-d1" if self.min_degree else "")


_TABLE1 = (
    "no communities: METIS and the hypergraph partitioner gain far less over a random "
    "partition than on the real graph (volume and message ratios vs RP too high, time ratios "
    "too close to 1)"
)
_DIRECTED = _TABLE1 + "; the paper's directed matrix is stood in for by a symmetric one"
_RMAT_CUT = (
    "R-MAT has no communities: METIS/Libra cut far more than on the real graph (vertex-cut "
    "replication, p2p/hier volumes high); 1d/1.5d/2d/3d volumes depend only on n, f and P; "
    "the degree distribution (local SpMM time) differs"
)

STANDINS: dict[str, StandIn] = {
    s.key: s
    for s in (
        StandIn(
            "reddit",
            ("reddit",),
            232_965,
            114_615_892,
            "rmat",
            "SuperGCN, DistGNN, hypergraph (114,615,892); CAGNET, Plexus (114,848,857 nnz)",
            _RMAT_CUT,
        ),
        StandIn(
            "products",
            ("ogbn-products",),
            2_449_029,
            123_718_280,
            "rmat",
            "DistGNN (123,718,280 directed); SuperGCN (61,859,140 undirected); Plexus "
            "(126,167,053 nnz)",
            _RMAT_CUT + "; products' co-purchase clusters (METIS replication 1.5-5.7) are absent",
        ),
        StandIn(
            "products-14m",
            ("products-14m",),
            14_249_639,
            245_036_907,
            "rmat",
            "Plexus products-14m (245,036,907 nnz) = CAGNET's Amazon (230,788,269 edges)",
            _RMAT_CUT + "; METIS halos far larger than on co-purchase data",
        ),
        StandIn(
            "europe-osm",
            ("europe_osm",),
            50_912_018,
            159_021_338,
            "rmat",
            "Plexus europe_osm (54,054,660 edges, 159,021,338 nnz)",
            "a road network is near-planar and banded, R-MAT is skewed and randomly numbered: "
            "the unpermuted 2D imbalance of the real ordering cannot be reproduced, and the "
            "permuted imbalances reflect R-MAT's hubs, not a road network's uniform degrees",
        ),
        StandIn(
            "amazon0601", ("amazon0601",), 403_394, 3_387_388, "rmat", "hypergraph T1", _DIRECTED
        ),
        StandIn(
            "cit-patents",
            ("cit-patents",),
            3_774_768,
            16_518_948,
            "rmat",
            "hypergraph T1",
            _DIRECTED,
        ),
        StandIn(
            "copapersdblp",
            ("copapersdblp",),
            540_486,
            30_491_458,
            "rmat",
            "hypergraph T1",
            _TABLE1,
        ),
        StandIn(
            "com-amazon", ("com-amazon",), 334_863, 1_851_744, "rmat", "hypergraph T1", _TABLE1
        ),
        StandIn(
            "com-youtube", ("com-youtube",), 1_134_890, 5_975_248, "rmat", "hypergraph T1", _TABLE1
        ),
        StandIn("flickr", ("flickr",), 820_878, 9_837_214, "rmat", "hypergraph T1", _DIRECTED),
        StandIn(
            "roadnet-ca",
            ("roadnet-ca",),
            1_971_281,
            5_533_214,
            "rmat",
            "hypergraph T1",
            "a road network (degree 2-4, planar, partitions with 1 % of RP's volume) stood in for "
            "by a skewed R-MAT: every partition ratio vs RP is far too high",
        ),
        StandIn(
            "soc-slashdot0902",
            ("soc-slashdot0902",),
            82_168,
            948_464,
            "snap",
            "hypergraph T1 (the real graph, ../shared/datasets/snap/)",
            "none for structure (directed, 78,303 self-loops kept, as the SNAP file); "
            "features random, as in the paper",
        ),
    )
}

#: the hypergraph partitioner's options here (``gcntrain partition -m hypergraph --init none
#: --vcycles 0 --preset large_k``): the start-up default (a METIS start refined by a Jet
#: V-cycle) had not finished a 512-way partition of com-amazon's 1.85M entries after 16 CPU
#: minutes on this machine; Mt-KaHyPar's preset for large k took 7.4 CPU minutes
HG_OPTIONS = {"init": "none", "vcycles": 0, "preset": "large_k"}
#: stand-ins above this many entries get no hypergraph partition here (4 or more CPU minutes
#: per million entries at 512 parts, on a machine where this check gets a third of a core:
#: roadNet-CA to coPapersDBLP would take one to several hours each)
HG_MAX_ENTRIES = 4e6
#: stand-ins above this many entries are not generated here: reddit's 115M entries peaked at
#: 5.5 GB while drawn, so products-14m's 245M would need about 12 GB and its 256-way METIS
#: partition several more on a 24 GiB machine shared with other jobs
GENERATE_MAX_ENTRIES = 200e6

#: graphs the rows name that are not stood in for here: (stored entries, why)
NO_STANDIN: dict[str, str] = {
    "proteins": "1.31G entries",
    "protein": "2.1G entries (CAGNET)",
    "isolate-3-8m": "1.32G entries",
    "ogbn-papers100m": "1.6G entries",
    "ogb-lsc-mag240m": "2.6G entries",
    "igb260m": "4.0G entries",
    "amazon": "CAGNET's Amazon (231M edges): only GPU rows use it",
}


def standin_of(name: str) -> StandIn | None:
    """The stand-in of the CSV graph name `name`, or None."""
    for s in STANDINS.values():
        if name in s.names:
            return s
    return None


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def graph_path(key: str, cache: Path = CACHE, log=_log) -> Path:
    """The graph file of stand-in `key`, generated (or converted) and written on first use."""
    s = STANDINS[key]
    path = Path(cache) / "graphs" / f"{s.file_key}.h5"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if s.generator == "snap":
        from gcntrain.data.convert import convert_source

        log(f"converting {SLASHDOT} ...")
        g = convert_source(str(SLASHDOT))
        g.name = key
    else:
        sys.path.insert(0, str(ROOT / "scripts"))
        from papers_findings import rmat_graph

        log(f"generating the R-MAT stand-in of {key} ({s.n:,} nodes, {s.nnz:,} entries) ...")
        g = rmat_graph(key, s.n, s.nnz, 1.0, s.seed, min_degree=s.min_degree)
    from gcntrain.data.store import write_graph

    write_graph(path, g)
    log(f"{key}: {g.n:,} nodes, {g.nnz:,} stored entries ({time.perf_counter() - t0:.0f} s)")
    return path


def structure(path: Path):
    """(indptr, indices) of a graph file (original numbering) and its content hash."""
    from gcntrain.schemes.loading import open_source
    from gcntrain.schemes.loading.numbering import graph_structure

    src = open_source(str(path))
    indptr, indices = graph_structure(src)
    return indptr, indices, src.meta().content_hash


def _defaults(method: str) -> dict:
    """What a partition of `method` depends on beyond the graph, P and the seed: the
    arguments ``--partition METHOD`` passes and the partitioners' defaults."""
    from gcntrain.partition.methods import DEFAULT_IMBALANCE

    if method == "metis":
        from gcntrain.partition.metis import DEFAULT_VWEIGHTS, metis_backend_name

        return {
            "vweights": DEFAULT_VWEIGHTS,
            "imbalance": DEFAULT_IMBALANCE["metis"],
            "backend": metis_backend_name(),
        }
    if method == "hypergraph":
        from gcntrain.partition.metis import DEFAULT_VWEIGHTS

        return {
            "imbalance": DEFAULT_IMBALANCE["hypergraph"],
            **HG_OPTIONS,
            "vweights": DEFAULT_VWEIGHTS,
        }
    return {}


def _tag(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]


def partition_seed(key: str, method: str, seed: int) -> int:
    """The seed a partition of stand-in `key` is drawn with: `seed`, except a random
    partition of an R-MAT stand-in asked for with the stand-in's own seed, which takes the
    next one.  `papers_findings.rmat_graph` draws its vertex permutation first from
    ``default_rng(seed)``, and `gcntrain.partition.basic.random_partition` cuts the first
    permutation of ``default_rng(seed)`` into blocks: with the same seed the "random" parts
    are blocks of R-MAT's own numbering, the hubs together (amazon0601's stand-in at 512
    parts: one part held 39x the mean entries, the 788 heaviest rows)."""
    s = STANDINS.get(key)
    if method == "random" and s is not None and s.generator == "rmat" and seed == s.seed:
        return seed + 1
    return seed


def partition_file(
    key: str, method: str, P: int, seed: int = 0, cache: Path = CACHE, log=_log
) -> tuple[Path, dict]:
    """(file, report) of stand-in `key` partitioned by `method` (random, metis, hypergraph,
    libra) into `P` parts with `seed`, as ``gcntrain train --partition METHOD`` computes it
    (`gcntrain.partition.methods.run_method` with the arguments the start-up numbering
    passes); written as a gcntrain partition file with its ``partition --report`` dict."""
    from gcntrain.data.partition_file import read_report, write_partition
    from gcntrain.partition.methods import run_method
    from gcntrain.partition.report import build_report

    seed = partition_seed(key, method, seed)
    name = f"{STANDINS[key].file_key}-{method}-p{P}-s{seed}-{_tag(_defaults(method))}.h5"
    path = Path(cache) / "parts" / name
    if path.exists():
        return path, read_report(path) or {}
    gpath = graph_path(key, cache, log)
    indptr, indices, ghash = structure(gpath)
    log(f"partitioning {key} with {method} into {P} parts ...")
    opts = HG_OPTIONS if method == "hypergraph" else None
    res = run_method(method, indptr, indices, P, seed=seed, graph_hash=ghash, hg_options=opts)
    rep = build_report(indptr, indices, res)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_partition(path, res, rep)
    log(f"  {method} {P} parts: {res.seconds:.0f} s")
    return path, rep


def cached(cache: Path = CACHE) -> list[tuple[str, int]]:
    """(file name, bytes) of every cached graph and partition."""
    out = []
    for sub in ("graphs", "parts"):
        d = Path(cache) / sub
        if d.is_dir():
            out += [(f"{sub}/{p.name}", p.stat().st_size) for p in sorted(d.iterdir())]
    return out


def describe(s: StandIn) -> str:
    """One line: what the stand-in is."""
    gen = (
        "the real graph"
        if s.generator == "snap"
        else f"R-MAT (papers_findings.rmat_graph, seed {s.seed})"
    )
    return f"{s.key}: {s.n:,} nodes, {s.nnz:,} entries, {gen}"


def table(cache: Path = CACHE) -> list[str]:
    """The stand-ins as a Markdown table: nodes, stored entries, generator and seed, the
    cached file's size (or "not generated"), the papers, the bias."""
    out = [
        "| stand-in | stands for | nodes | stored entries | generator | cached file | bias |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in STANDINS.values():
        f = Path(cache) / "graphs" / f"{s.file_key}.h5"
        size = f"{f.stat().st_size / 1e6:.0f} MB" if f.exists() else "not generated"
        gen = "the real graph (SNAP file)" if s.generator == "snap" else f"R-MAT, seed {s.seed}"
        gen += ", no isolated vertex" if s.min_degree else ""
        out.append(f"| `{s.key}` | {s.papers} | {s.n:,} | {s.nnz:,} | {gen} | {size} | {s.bias} |")
    return out
