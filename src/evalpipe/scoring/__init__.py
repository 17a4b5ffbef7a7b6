"""Scoring and robustness statistics (docs/scoring.md): scoring the outputs (:mod:`.scorer`,
:mod:`.loglikelihood`), metrics, paired statistics, per-word impact, model comparison.

Import the submodule you need (``from evalpipe.scoring.scorer import score_frame``): the package
itself loads nothing, so a stage that needs one module does not pay for scikit-learn and SciPy
(seconds per stage process) or depend on the others. Answer types and parsers are in
:mod:`evalpipe.answers`.
"""
