"""pin, render, sources, compile, build, push, verify, promote: what each does, when it is done.

doit-free (run/tasks.py wires them). May import every lower layer: registry, docker,
ccache, verify, plan, manifest. Nothing of run or cli.
"""
