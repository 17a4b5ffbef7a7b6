"""Deprecated: `python -m stages.annotation_app` is `evalpipe annotate` now; this entry point goes in the
next release."""
