"""Scored views: one benchmark scored one way.

A model's benchmark can be scored from its generated text (``generate``) and, for benchmarks
with a fixed set of choices, by the log-likelihood of each choice (``loglikelihood``: lm-eval's
``acc``; ``loglikelihood_norm``: ``acc_norm``). Each view is a scored frame, a details entry
and a headline metrics file named ``<benchmark><suffix>``.
"""

from __future__ import annotations

METHOD_SUFFIXES = {"generate": "", "loglikelihood": ".ll", "loglikelihood_norm": ".ll_norm"}
SCORING_METHODS = ("generate", "loglikelihood", "both")


def view_name(benchmark: str, method: str) -> str:
    """``view_name("jnli", "loglikelihood")`` -> ``"jnli.ll"``."""
    return benchmark + METHOD_SUFFIXES[method]


def parse_view(name: str) -> tuple[str, str]:
    """``(benchmark, method)`` of a view name.

    >>> parse_view("jnli.ll_norm"), parse_view("gsm8k")
    (('jnli', 'loglikelihood_norm'), ('gsm8k', 'generate'))
    """
    for method, suffix in sorted(METHOD_SUFFIXES.items(), key=lambda kv: -len(kv[1])):
        if suffix and name.endswith(suffix):
            return name[: -len(suffix)], method
    return name, "generate"


def methods_for(scoring_method: str) -> tuple[str, ...]:
    """The views ``scoring.method`` asks for.

    >>> methods_for("both")
    ('generate', 'loglikelihood', 'loglikelihood_norm')
    """
    return {
        "generate": ("generate",),
        "loglikelihood": ("loglikelihood", "loglikelihood_norm"),
        "both": ("generate", "loglikelihood", "loglikelihood_norm"),
    }[scoring_method]


def impact_method(scoring_method: str) -> str:
    """Which view the per-word impact tables use: generated answers, unless only log-likelihood
    scoring runs (then ``acc``)."""
    return "loglikelihood" if scoring_method == "loglikelihood" else "generate"
