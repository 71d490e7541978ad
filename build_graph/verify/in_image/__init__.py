"""Runs inside images with nothing of ours installed: the probe, the fatbin reader, the finder.

Standard library only (torch only inside the probe's subprocesses); the verify stage mounts
these files beside each other into the image.
"""
