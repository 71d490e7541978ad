"""`python -m build_graph`: the commands that run outside doit, one module each (main.py's
table lists them).

The top layer: may import everything below it. Nothing imports it but __main__.
"""
