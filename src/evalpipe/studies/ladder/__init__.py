"""Model ladders (docs/scoring.md "Model ladders"): the typo effect along models that differ in
one label (family, size, quantisation), against a reference."""
