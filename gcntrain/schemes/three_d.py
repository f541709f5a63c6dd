"""CAGNET split-3D (section IV-D of the CAGNET paper) on any X x Y x Z grid.

The Z "layers" of the process cube each run the 2D algorithm of `gcntrain.schemes.two_d` on
an X x Y grid over their own share of the inner dimension, and a Reduce-scatter along the
fibers sums the layers' partial products (the paper's Split-3D-SpMM):

* Rows: the numbering's X row parts; each row part is cut in Z near-equal layer slices.
  Rank r sits at virtual row I = r // Y (row part i = I // Z, layer k = I % Z) and column
  j = r % Y, so ranks (i, ., k) form a process row, (., j, k) a process column of layer k
  and (i, j, .) a fiber.
* S: rank (i, j, k) holds ``S[row part i, columns of part j that lie in layer k's
  slices]`` (n/X x n/(YZ) on a cube: the paper's ``A_ijk``); every entry is held once.
* Node-wise matrices (H, Z, G, logits): rank (i, j, k) holds the rows of slice (i, k) and
  column chunk j (n/(XZ) x f/Y: the paper's ``H_ijk``).
* ``S @ H``: in layer k, SUMMA over the slices of layer k (pieces of S broadcast along the
  process rows, pieces of H down the layer's process columns) gives each rank the partial
  ``S[row part i, layer k] H[layer k, chunk j]`` (n/X x f/Y); the Reduce-scatter along the
  fiber sums the Z partials and leaves each rank its slice.  ``S^T`` the same with the
  blocks of S^T (built once by an Alltoallv; dropped when S is symmetric).
* Everything node-wise (``H @ W`` with W replicated, the weight-gradient slabs, biases,
  softmax cross-entropy, accuracy, row normalisation) is the 2D scheme's on the (X Z) x Y
  grid of slices: whole rows are Allgathered along a process row (the paper's All-Gather
  within a layer), sums over nodes run down the columns of slices.

With Z = 1 this is exactly CAGNET 2D.  Any X, Y, Z whose product is P; n need not be
divisible by the grid (slices may be empty).
"""

from __future__ import annotations

from gcntrain.schemes.two_d import TwoD


class ThreeD(TwoD):
    name = "3d"
    summary = "CAGNET split-3D: 2D SUMMA in each of Z layers, Reduce-scatter along fibers"
    ndim = 3

    def test_configurations(self, size: int) -> list[tuple[dict, str | None]]:
        """The first and the last grid (every grid: tests/test_mpi_schemes.py)."""
        grids = self.grid_candidates(size)
        return [(self.with_grid({}, g), None) for g in dict.fromkeys([grids[0], grids[-1]])]
