"""Stack -> planned tiers: rendered files, file lists, content hashes, image names.

No Docker, no network: a plan is a function of the manifest, its lock, its templates and
its files. May import: build_graph.manifest, gpu and the ground modules.
"""
