"""The registry: references, its HTTP API and auth, artifacts, the availability round, reports.

Everything a registry answers is untrusted input, checked where it enters. Takes plain
values (references, digests, bytes), never a manifest or a plan. May import
build_graph.docker (whether the daemon here has an image) and the ground modules.
"""
