"""The job layer: one training job from its options to its outputs.

Above `gcntrain.schemes` (which distribute the model) and `gcntrain.simulate` (which
prices them), below `gcntrain.cli` and `gcntrain.api`: the runner (prelude, ``--scheme
auto``, setup, training, reporting), the collective report of a run, checkpoint
coordination across ranks and the memory guard.
"""
