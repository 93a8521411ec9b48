"""iofp: I/O workload fingerprinting. Core shared by every stage: the trace contract, errors, CLI."""

__version__ = "0.1.0"
