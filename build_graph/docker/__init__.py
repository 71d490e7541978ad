"""The Docker daemon: images, containers, BuildKit builds and the build context's tar.

The only code that talks to the daemon (docker-py, the docker CLI). Takes plain values
(references, Dockerfile text, file lists), never a manifest or a plan. May import the
ground modules (errors, log, fs, layout, settings) and oci/ (references, digests).
"""
