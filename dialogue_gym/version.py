"""The package version, in a module that imports nothing (run stamps read it without a cycle)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
