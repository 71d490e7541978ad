"""The compiler cache: one archive per key, its stores (gs://, file://), sync and counters.

May import: build_graph.engine, plan, manifest, fs, log, errors. Nothing of stages.
"""
