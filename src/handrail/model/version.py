"""The package's version, held in the kernel so that no layer imports the package's
`__init__` to read it."""

__version__ = "0.1.0"
