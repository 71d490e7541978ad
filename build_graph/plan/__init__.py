"""Stack -> planned tiers: rendered files, content hashes, image names; no Docker, no network.

May import: build_graph.manifest, gpu, fs, errors. Nothing of engine, stages or tasks.
"""
