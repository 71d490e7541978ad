"""The compiler cache: one archive per key, its stores (gs://, file://), sync and counters.

May import: build_graph.docker (ccache's counters are read in the builder), plan, manifest,
gpu and the ground modules. Nothing of registry, verify, stages, run or cli.
"""
