"""DVC stage commands: thin Click wrappers over the evalpipe library (``python -m stages.<name>``)."""
