"""Partitioners and partition quality (pure: CSR arrays in, arrays out; no MPI).

Modules: `basic` (block, random), `metis`, `hypergraph` (Mt-KaHyPar, column-net KM1),
`libra` (vertex cut), `mvc` (SuperGCN pre/post/hybrid split), `permute` (Plexus double
permutation), `metrics` (exact 1D SpMM volumes, send lists), `io` (partition files),
`report`, `methods` (dispatch by name).  See docs/partition.md.
"""
