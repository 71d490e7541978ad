"""`python -m build_graph`: the commands that run outside doit (check, plan, lock, doctor, ci).

The top layer: may import everything below it. Nothing imports it but __main__.
"""
