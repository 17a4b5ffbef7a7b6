"""A model of params.yaml ``models`` asked for the corrected text (``llm:<slug>``), its answer
aligned word by word into edits (:func:`evalpipe.defences.correct.aligned_corrections`)."""

from __future__ import annotations

from evalpipe.defences.correct import aligned_corrections, llm_prompt
from evalpipe.defences.correctors.base import Corrector

CORRECTOR = Corrector(prompt=llm_prompt, from_answer=aligned_corrections)
