"""The matched control (``perturb.control``; docs/scoring.md "Why a word hurts"): a word's harm
beyond the same typos on a matched random word."""
