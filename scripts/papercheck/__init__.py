"""The validation rows of docs/validation_rows.csv priced with gcntrain's simulator.

Modules:

- `rows`: the CSV's rows and how each is priced (a `Recipe`: profile, stand-in, scheme and
  options, ranks, ranks per node, what is compared, or why it is not priced); no gcntrain
  import, so that ``check_papers.py --dry`` plans nothing.
- `standins`: the stand-in graphs (R-MAT of the papers' sizes by
  ``scripts/papers_findings.py``'s generator, the real soc-Slashdot0902) and their
  partitions, cached on disk.
- `price`: the predictions (plans, the time model, partition statistics) behind a recipe.
- `report`: the lines ``check_papers.py`` prints and the per-half summary.
"""
