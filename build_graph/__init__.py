"""A declarative doit build graph for stacks of GPU Docker images."""

__version__ = "0.1.0"
