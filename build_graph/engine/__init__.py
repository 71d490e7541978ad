"""The only code that talks to Docker and the registry, plus this machine's records of them.

May import: build_graph.plan, manifest, fs, log, errors. Nothing of stages or tasks.
"""
