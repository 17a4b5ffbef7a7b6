"""Readouts beyond accuracy (``scoring.calibration``; docs/scoring.md, "Calibration under
typos"): how well the choice probabilities of log-likelihood scoring are calibrated on the clean
and on the typo'd prompts (ECE and Brier score, paired on the example), and how far typos move
them (the KL of the choice probabilities, clean -> typo'd) ->
``metrics/<model>/readouts.json``. Free from the log-likelihood views' existing scores: no extra
request (off by default only to keep `dvc metrics show` narrow)."""
