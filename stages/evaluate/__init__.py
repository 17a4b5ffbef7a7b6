"""Deprecated: `python -m stages.evaluate` is `evalpipe evaluate` now; this entry point goes in the
next release."""
