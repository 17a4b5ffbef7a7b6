"""Sycophancy annotation: the formats, guidelines, agreement, consensus and quality checks.

Submodules are imported on demand (``from evalpipe.annotation import schema``) so the web app and
the judge do not pay for numpy/pandas statistics they never use.
"""
