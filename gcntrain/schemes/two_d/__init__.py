"""CAGNET 2D (section IV-C, Algorithm 3 of the CAGNET paper): block-2D SUMMA on any Pr x Pc.

Ranks form a Pr x Pc grid, rank r at (i, j) = (r // Pc, r % Pc).  The numbering's Pr row parts
split the rows of S and of every node-wise matrix; Pc column parts of the same numbering split
the columns of S; a node-wise matrix of width f has its columns split in Pc near-equal chunks.
Rank (i, j) holds S_ij, H_ij (rows of part i, columns of chunk j), the whole W (replicated,
as in the paper) and chunk j of each bias.  n need not be divisible by the grid.

* ``S @ X`` (SUMMA): the inner dimension is cut at every row-part and column-part boundary
  (at most Pr + Pc - 1 stages; the general rectangular case of Algorithm 3).  At stage
  [a, b) the owner of those columns of S broadcasts its piece of S_i along process row i
  (sparse: 4-byte row and column ids plus the value per entry), the owner of those rows of X
  broadcasts its piece along process column j, and every rank adds the product.  ``S^T @ X``
  does the same with the blocks of S^T (built once by an Alltoallv of entries; dropped when S
  is symmetric).
* ``H @ W`` ("partial SUMMA"): with f_in <= f_out (dense H) process row i Allgathers the
  column chunks of H_i and each rank multiplies by its columns of W; otherwise (or for a CSR
  H) each rank multiplies its chunk by its rows of W and the partial products are
  Reduce-scattered along the process row, so the wider operand never moves.
* Backward: ``dZ_i`` is Allgathered along the process row once per product; ``dH_ij =
  dZ_i W[chunk j]^T`` and the slab ``dW[chunk j] = H_ij^T dZ_i`` are local; the slabs are
  summed down each process column (Allreduce) and Allgathered along the rows (W stays
  replicated).  Bias gradients: an Allreduce down the column of the chunk's column sums.
* Softmax cross-entropy, accuracy and argmax need whole rows of the logits: an Allgather along
  the process row (the paper's All-Gather for log-softmax); sums over nodes run down a
  process column (one copy of every row); row normalisation of the features Allreduces the
  partial L1 norms along the row.

Modules: `layout` (`Layout2D`, the column chunks, the SUMMA stages and who holds each entry
of S), `ops` (`TwoDOps`, the runtime of one rank, and the setup helpers), `cost` (the
exchange steps, work and memory the simulator prices), `device` (`TwoDDeviceOps`, the same
on a device: docs/gpu.md) and `scheme` (the `TwoD` scheme, its options and setup).
`gcntrain.schemes.three_d` is this scheme with Z layers.
"""

from gcntrain.schemes.two_d.cost import TwoDCost
from gcntrain.schemes.two_d.layout import (
    ENTRY_ID_BYTES,
    Layout2D,
    block_of,
    chunk_offsets,
    fiber_step,
    layer_offsets,
    stage_counts,
    summa_stages,
    transpose_pairs,
    use_gather,
)
from gcntrain.schemes.two_d.ops import (
    CSRPiece,
    StagePieces,
    TwoDOps,
    gather_columns,
    layer_columns,
)
from gcntrain.schemes.two_d.scheme import GRID_OPTION, TwoD

__all__ = [
    "CSRPiece",
    "ENTRY_ID_BYTES",
    "GRID_OPTION",
    "Layout2D",
    "StagePieces",
    "TwoD",
    "TwoDCost",
    "TwoDOps",
    "block_of",
    "chunk_offsets",
    "fiber_step",
    "gather_columns",
    "layer_columns",
    "layer_offsets",
    "stage_counts",
    "summa_stages",
    "transpose_pairs",
    "use_gather",
]
