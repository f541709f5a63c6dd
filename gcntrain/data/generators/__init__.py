"""Pieces of the synthetic generators that keep memory bounded at large sizes.

`build`: the canonical CSR of an edge list (`csr_from_edges`) and `GeneratedGraph`, a
generated structure whose node data are drawn on demand, in blocks of rows.  `write`:
`write_generated`, which streams a `GeneratedGraph` into a graph file slice by slice,
hashing as it writes.  The generators themselves are in `gcntrain.data.generate`.
"""
