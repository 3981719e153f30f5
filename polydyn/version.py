"""The package version, in a module of its own so that the modules that put it in cache keys
and reports import it without importing the package's public surface."""

__version__ = "0.1.0"
