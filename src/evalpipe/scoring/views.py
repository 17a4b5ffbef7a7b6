"""Scored views: one benchmark scored one way.

A model's benchmark can be scored from its generated text (``generate``) and, for benchmarks
with a fixed set of choices, by the log-likelihood of each choice (``loglikelihood``: lm-eval's
``acc``; ``loglikelihood_norm``: ``acc_norm``). Each view is a scored frame, a details entry
and a headline metrics file named ``<benchmark><suffix>``.
"""

from __future__ import annotations

from collections.abc import Iterable

METHOD_SUFFIXES = {"generate": "", "loglikelihood": ".ll", "loglikelihood_norm": ".ll_norm"}


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


def primary_views(names: Iterable[str]) -> dict[str, str]:
    """One view per benchmark for tables that must count each example once (per-word impact,
    accuracy by typo rate): the generated answers where they were scored, else the
    log-likelihood ``acc`` answers (choice benchmarks under ``scoring.method: loglikelihood``).

    >>> primary_views(["jnli", "jnli.ll", "mmlu.ll", "mmlu.ll_norm", "gsm8k"])
    {'gsm8k': 'gsm8k', 'jnli': 'jnli', 'mmlu': 'mmlu.ll'}
    """
    present = set(names)
    out: dict[str, str] = {}
    for name in sorted(present):
        benchmark, _ = parse_view(name)
        for method in ("generate", "loglikelihood"):
            view = view_name(benchmark, method)
            if view in present:
                out.setdefault(benchmark, view)
                break
    return out
