"""Python packages locked per tier, variant and platform (PEP 751 pylock files, resolved by uv).

files.py reads and writes a lock; request.py says what a tier asks of the resolver;
resolve.py runs uv; sync.py records missing or stale locks and moves pins on request.
"""
