"""gcntrain: distributed full-batch GCN training and simulation on HPC clusters."""

__version__ = "0.1.0"
