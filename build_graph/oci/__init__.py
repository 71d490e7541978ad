"""The names of OCI content, pure: image references, digests, tags (their grammar, which
are newer of the same shape), which hosts are loopback, and what a registry's failure means
in words.

Both adapters use these (docker/ and registry/), so they sit below both. A `Digest` is made
only by parsing (and, where there are bytes, by hashing them): code past the door never
handles a raw digest string. May import the ground modules only.
"""
