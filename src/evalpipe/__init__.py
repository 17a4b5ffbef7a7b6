"""evalpipe: a data-versioned lab for evaluating large language models."""

__version__ = "0.1.0"
