"""gpu-advisor: which GPU(s) to buy for deep learning, backed by measured numbers."""

__version__ = "0.1.0"
