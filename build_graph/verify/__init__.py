"""Whether an image satisfies its expectation: the host-side checks, results, the fingerprint.

The code that runs inside images is in in_image/ (standard library only). The host side may
import build_graph.gpu, manifest, plan.hashing and the ground modules. Nothing of docker,
registry, stages or above.
"""
