"""Python packages locked per tier, variant and platform (PEP 751 pylock files, resolved by uv).

files.py reads and writes a lock; request.py says what a tier asks of the resolver;
state.py says whether a tier's lock answers its request; resolve.py runs uv. May import:
build_graph.manifest and the ground modules; plan/ reads it, never the other way round
(recording and moving locks over the plan is `stages/python_pin.py`).
"""
