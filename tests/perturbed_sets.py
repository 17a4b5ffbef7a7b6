"""Perturbed sets for tests of the stages after perturb: written by the real ``perturb_frame``
(so they hold every column of the contract and their summary), with no typo at all: one
original row per example, which is all a generate test needs."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.perturb import Probabilities, Tokenizer, perturb_frame

NO_TYPOS = Probabilities(0.0, 0.0, 0.0)
# One target word per language: the word list must be in the benchmark's script.
WORDS = {"english": "the", "japanese": "の"}


@functools.cache
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def write_unperturbed(root: Path, name: str, examples: pd.DataFrame) -> int:
    """``data/perturbed/<name>.parquet`` and ``<name>.summary.json`` under ``root`` as perturb@
    writes them, every probability 0; returns the number of rows (one per example)."""
    language = str(examples["language"].iloc[0])
    words = pd.DataFrame({"rank": [1], "word": [WORDS[language]]})
    tokenizer = _tokenizer() if language == "japanese" else None
    result = perturb_frame(examples, words, probabilities=NO_TYPOS, seed=0, tokenizer=tokenizer)
    paths = ProjectPaths(root)
    atomic.write_parquet(paths.perturbed(name), result.table)
    atomic.write_json(paths.perturbation_summary(name), result.summary)
    return result.table.num_rows
