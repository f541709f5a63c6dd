"""DistGNN vertex-cut scheme (Md et al., SC'21, sections 5.1-5.3, Algorithm 4).

Every stored adjacency entry belongs to exactly one rank (a Libra edge partition: computed at
start-up with ``--partition libra``, read from a ``gcntrain partition -m libra`` file, or
fixed by a ``gcntrain shard -m libra`` store).  A rank holds a *clone* of every vertex its
edges touch; the vertices are renumbered by their *root* rank (the part holding most of their
edges), so the root of any vertex follows from its id (`gcntrain.partition.cut_layout`).
Node-wise matrices have one row per clone, roots first: the first ``counted`` rows are the
vertices this rank counts in losses, accuracies and outputs, the others are replicas.

Aggregation ``S @ X`` multiplies the rank's own entries (the local partial aggregate; the
identity of GCN / SAGE-gcn sits on the root's copy), then synchronises every split vertex
through its one-level tree: the leaves send their partial aggregates to the root (one
Alltoallv), the root adds them (scatter-reduce) and sends the total back (one Alltoallv), and
the leaves overwrite theirs (scatter).  Forward values are then equal on every clone.
Gradients follow the adjoint convention: a gradient row of a replicated vertex is the *sum* of
its clones' rows (the loss gradient lives on the root), so ``S^T @ dY`` first synchronises
dY through the same tree and then multiplies the local entries; the weight gradient, a sum
over all local rows, is then exact.  ``--delay``:

* ``0`` (cd-0): the exchange above in every aggregation: results equal serial training;
* ``R`` (cd-R): each root's vertices are cut into R contiguous buckets; in epoch e only bucket
  ``e mod R`` communicates: the leaves' partial aggregates posted in epoch e (non-blocking
  Alltoallv) are added by the root in epoch e + R, which posts its total, consumed by the
  leaves in epoch e + 2R (Algorithm 4, lines 8-21); a split vertex outside the bucket keeps
  its local partial aggregate.  Forward and backward keep separate queues per layer;
* ``none`` (0c): no remote aggregation in training.

Evaluation passes (validation, test, predictions) always aggregate exactly (cd-0), so the
accuracy of every mode measures the trained weights on the whole graph; their traffic is in
the ``eval.*`` phases.  Degrees are the whole graph's: partial degrees are summed through the
same trees at setup.

Modules: `layout` (the edge assignment: `cut_numbering`, `CutLayout`), `trees` (a rank's
part of the trees, `tree_sync` and the local support: `Trees`, `local_support`), `ops`
(`VertexCutOps`, the runtime of one rank, cd-0 / cd-R / 0c) and `scheme` (the `VertexCut`
scheme, its ``--delay`` option and what the simulator prices).
"""

from gcntrain.schemes.vertexcut.layout import CutLayout, cut_numbering
from gcntrain.schemes.vertexcut.ops import VertexCutOps
from gcntrain.schemes.vertexcut.scheme import NO_COMM, SWEEP_DELAY, VertexCut, parse_delay
from gcntrain.schemes.vertexcut.trees import Trees, local_support, tree_sync

__all__ = [
    "NO_COMM",
    "SWEEP_DELAY",
    "CutLayout",
    "Trees",
    "VertexCut",
    "VertexCutOps",
    "cut_numbering",
    "local_support",
    "parse_delay",
    "tree_sync",
]
