"""What an image must satisfy: the in-image probe, the fatbin reader, and the checks.

probe.py and fatbin.py import only the standard library: they run inside images with
nothing of ours installed. checks.py and request.py may import build_graph.gpu and
manifest. Nothing of plan, engine, stages or tasks.
"""
