"""One reader per input format; each returns a `gcntrain.data.graph.Graph`."""
