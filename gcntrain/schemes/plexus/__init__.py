"""Plexus 3D tensor parallelism (Plexus paper, sections 3, 5.1-5.3, Algorithm 1, Figure 4).

Ranks form an X x Y x Z grid, rank r at coordinates ``np.unravel_index(r, (X, Y, Z))``
(axes 0, 1, 2).  Every node-wise matrix has a *placement* `Place` (row axis, column axis,
numbering): its rows are cut in near-equal chunks along the row axis, its columns along the
column axis, and it is replicated along the third axis; the numbering says which ordering of
the nodes the row chunks cut (two with ``--permute``, one otherwise).

* Aggregation ``S @ X`` with X at (r, c): the shard of S whose rows are chunk ``q`` (the
  third axis) and whose columns are chunk ``r`` (replicated along c, the paper's "sharded
  across the ZX plane and replicated across Y" in layer 0) times the local block gives a
  partial sum; an Allreduce over the r-axis group completes it (Algorithm 1 line 4).  The
  output sits at (q, c), in the other numbering.  ``S^T`` uses the same shard transposed and
  an Allreduce over the q-axis group, back to (r, c).  ``--block-rows B`` cuts the output in
  blocks of B rows, one SpMM and one Allreduce each (section 5.2).
* Product ``H @ W`` with H at (r, c): W is sharded in blocks (rows: chunk c of f_in,
  columns: chunk q of f_out) and each block further in near-equal element chunks over the
  r-axis group (its optimizer state with it), Allgathered before use (line 6); the partial
  product is Allreduced over the c-axis group (line 8); the output sits at (r, q).
* Backward: ``dW = H^T dZ`` is Reduce-scattered into the element chunks over the r-axis
  group (line 16); ``dH = dZ W^T`` (W Allgathered again, line 18) is Allreduced over the
  q-axis group (line 20); aggregation backward as above.  The partial ``dW`` is computed as
  ``(dZ^T H)^T`` (section 5.3: no transposed left operand in the GEMM).
* Layer to layer (Figure 4): aggregation maps (r, c) -> (q, c) and the product (r, c) ->
  (r, q), so a layer's output is the next layer's input with the roles of the axes rotated;
  the shards of S a run needs are one per distinct (rows, columns) axis pair (at most three
  for a model of either order; six with two numberings).  Layer 0's input is at (X, Y).
* GraphSAGE's self term ``H W_self`` must land where the neighbour term does: its input (or
  its output, for the product-first order) is moved from (r, c) to (q, c) by an Allgatherv
  over the r-axis group (each member contributes the rows it holds of the target chunk).
* Rows: softmax cross-entropy, accuracy and argmax gather the column chunks of the logits
  (Allgatherv over the column axis); sums over nodes run over the logits' row axis; row
  normalisation Allreduces the partial L1 norms over the input's column axis.
* ``--permute double`` (section 5.1): two independent random orderings P_c (numbering 0, the
  input's) and P_r (numbering 1); aggregation alternates ``P_r S P_c^T`` and ``P_c S P_r^T``
  (each layer's output is in the other numbering), so the shards hold both.  ``--permute
  stratified`` draws the two orderings degree-stratified.  Outputs refer to original ids.

Input features are not trained here, so they are held in their XY-plane shard (not further
cut along Z and Allgathered as in line 2 of Algorithm 1, which the paper does for their
optimizer state), and no input gradient is formed (lines 22-23 for layer 0).

Setup (section 5.4): each rank reads one block of an R x C load grid (``--load-grid``;
default P x 1, a contiguous block of whole rows; a 2D store is read block by block), so no
rank reads the whole graph; partial degrees are Allreduced along block rows, ids and degrees
Allgathered, and an Alltoallv sends every entry to the ranks whose shards hold it, and the
feature rows and labels to the ranks whose input and output blocks hold them.

Modules: `placement` (the placement algebra: `Place`, `agg_out`, `mm_out`,
`layer_plans`), `layout` (`PlexusLayout` and who sends what in setup), `ops` (`PlexusOps`,
the runtime of one rank), `setup` (the MPI setup: load, route the entries and the node
data), `cost` (the exchange steps, work and memory the simulator prices) and `scheme` (the
`Plexus` scheme and its options).
"""

from gcntrain.schemes.plexus.cost import PlexusCost, move_step, spmm_steps, weight_step
from gcntrain.schemes.plexus.layout import PlexusLayout, entry_destinations, holder_pairs
from gcntrain.schemes.plexus.ops import PlexusOps, assemble_weight, row_blocks
from gcntrain.schemes.plexus.placement import (
    INPUT,
    PERMUTES,
    LayerPlan,
    Place,
    agg_out,
    layer_plans,
    mm_out,
)
from gcntrain.schemes.plexus.scheme import (
    BLOCK_ROWS_OPTION,
    LOAD_GRID_OPTION,
    PERMUTE_OPTION,
    PERMUTE_SEED_OPTION,
    Plexus,
)
from gcntrain.schemes.plexus.setup import ENTRY_BYTES, LABEL_BYTES, PlexusSetup

__all__ = [
    "BLOCK_ROWS_OPTION",
    "ENTRY_BYTES",
    "INPUT",
    "LABEL_BYTES",
    "LOAD_GRID_OPTION",
    "PERMUTES",
    "PERMUTE_OPTION",
    "PERMUTE_SEED_OPTION",
    "LayerPlan",
    "Place",
    "Plexus",
    "PlexusCost",
    "PlexusLayout",
    "PlexusOps",
    "PlexusSetup",
    "agg_out",
    "assemble_weight",
    "entry_destinations",
    "holder_pairs",
    "layer_plans",
    "mm_out",
    "move_step",
    "row_blocks",
    "spmm_steps",
    "weight_step",
]
