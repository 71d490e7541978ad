"""CUDA knowledge as data and pure functions: GPU tables with sources, arch coverage rules.

May import: nothing of build_graph (the lowest layer besides errors).
"""
