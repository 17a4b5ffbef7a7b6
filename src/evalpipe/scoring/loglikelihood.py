"""Choosing an answer by log-likelihood (lm-evaluation-harness's ``acc`` and ``acc_norm``).

Each choice is a continuation of the same prompt; the model's answer is the choice whose
continuation has the highest total log-probability (``acc``), or the highest log-probability
per character of the continuation (``acc_norm``, lm-eval's length normalisation, which keeps a
long choice from losing only because it has more tokens to pay for).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalpipe.errors import InputError


def choice_continuations(labels: Sequence[str], *, separator: str = " ") -> list[str]:
    """The continuation scored for each label: the separator, then the label.

    >>> choice_continuations(["A", "B"])
    [' A', ' B']
    """
    if not labels:
        raise InputError("loglikelihood scoring needs a label space (the benchmark's labels)")
    return [f"{separator}{label}" for label in labels]


def pick_choice(logprobs: Sequence[float], continuations: Sequence[str]) -> tuple[int, int]:
    """Indices of the choice picked by ``acc`` (total log-probability) and ``acc_norm``
    (log-probability per character of the continuation). Ties go to the first choice.

    Parameters
    ----------
    logprobs : one total log-probability per choice.
    continuations : the scored texts, for their lengths.

    Returns
    -------
    (acc_index, acc_norm_index)

    Examples
    --------
    >>> pick_choice([-2.0, -3.0], [" no", " yes, indeed"])
    (0, 1)
    """
    if len(logprobs) != len(continuations) or not logprobs:
        raise InputError(
            f"pick_choice: {len(logprobs)} log-probabilities for {len(continuations)} choices"
        )
    values = np.asarray(logprobs, dtype=float)
    lengths = np.asarray([max(1, len(c)) for c in continuations], dtype=float)
    return int(np.argmax(values)), int(np.argmax(values / lengths))
