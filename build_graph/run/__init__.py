"""The doit face: the session dodo.py opens, task dicts, the reporter, `doit list`/`doit info`.

The only code that knows doit (besides dodo.py). May import every lower layer; nothing of
cli.
"""
