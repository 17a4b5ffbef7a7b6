"""The names of the defence arms (``condition`` of the outputs and the pairs table), declared
once: the generate stage needs them without the correctors' code."""

from __future__ import annotations

SPELLING = "spelling"
LLM_PREFIX = "llm:"
CORRECTED_PREFIX = "corrected:"
WARNED = "warned"


def condition_of(corrector: str) -> str:
    """The arm name of a corrector's rows.

    >>> condition_of("spelling"), condition_of("llm:qwen")
    ('corrected:spelling', 'corrected:llm:qwen')
    """
    return CORRECTED_PREFIX + corrector
