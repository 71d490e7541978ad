"""compile, build, push, verify, promote: what each stage does and when it is done.

doit-free (tasks.py wires them). May import every lower layer: engine, ccache, verify,
plan, manifest. Nothing of tasks, cli or dodo.
"""
