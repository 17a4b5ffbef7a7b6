"""Deprecated: `python -m stages.annotation` is `evalpipe quality` now; this entry point goes in the
next release."""
