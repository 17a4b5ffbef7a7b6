"""The continuation designs cut into cells (the prefix each continues), and the cells' answers.

Input: one row per (clean, typo'd) pair of a benchmark, paired on the example: ``example_id``,
``clean_prompt``, ``typo_prompt``, both free chain-of-thought outputs (``clean_output``,
``typo_output``), their extracted answers (``clean_answer``, ``typo_answer``; None when
unextractable) and ``clean_correct``. A pair is *eligible* when the clean answer is correct and
the typo'd answer differs from it (an unextractable typo'd answer differs). Each design's cell
continues a prefix cut from the two outputs (:mod:`evalpipe.answers.cot_split`):

- ``cot_swap``: A = clean question + clean reasoning, B = typo'd + typo'd, C = typo'd question +
  clean reasoning, D = clean question + typo'd reasoning; the answer span is regenerated
  (greedy, at most ``answer_tokens`` tokens) and read from the generated text alone;
- ``answer_line_deletion``: C after deleting the clean reasoning's final non-empty line;
- ``prefix_scan``: the typo'd question with the first b tokens (or share b) of the clean
  reasoning, then free generation (the benchmark's budget), read from prefix and continuation.

A cell *restores* a pair when its answer equals the clean answer; an unextractable answer is a
failure and stays in the denominator. Eligible pairs whose outputs the split rule cannot cut are
counted (``unsplit``) and form no cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.answers.cot_split import prefix_of, split_answer, without_last_line
from evalpipe.errors import InputError

COT_SWAP, ANSWER_LINE_DELETION, PREFIX_SCAN = "cot_swap", "answer_line_deletion", "prefix_scan"
DESIGNS = (COT_SWAP, ANSWER_LINE_DELETION, PREFIX_SCAN)
SWAP_CELLS = ("A", "B", "C", "D")
KEY = ["example_id", "variant", "word_rank", "draw"]  # a pair within a benchmark's typo arm
UNSPLIT = "unsplit"  # the cell of an eligible pair the split rule could not cut


@dataclass(frozen=True)
class Cell:
    """One continuation request of one pair: which design, cell and budget it answers."""

    pair: int  # row of the pairs frame
    design: str
    cell: str  # A-D, "C-1" (answer-line deletion), or "scan"
    budget: str  # the prefix budget as written in params ("" outside the scan)
    prompt: str
    prefix: str
    free: bool  # free generation (the scan) rather than the answer span only


def check_designs(designs: Sequence[str], budgets: Sequence[float], *, source: str) -> None:
    """InputError naming ``continuation.designs`` / ``prefix_budgets`` when a value is unknown."""
    for design in designs:
        if design not in DESIGNS:
            raise InputError(
                f"{source}: continuation.designs: expected any of {', '.join(DESIGNS)}, "
                f"got {design!r}"
            )
    for budget in budgets:
        bad = isinstance(budget, bool) or not isinstance(budget, int | float)
        if bad or budget < 0 or (isinstance(budget, float) and budget > 1):
            raise InputError(
                f"{source}: continuation.prefix_budgets: expected token counts (integers >= 0) "
                f"or shares (decimals in [0, 1]), got {budget!r}"
            )


def eligible(pairs: pd.DataFrame) -> np.ndarray:
    """Pairs whose clean answer is correct and whose typo'd answer changed it."""
    clean = pairs["clean_answer"].astype(object)
    typo = pairs["typo_answer"].astype(object)
    changed = [t is None or t != c for c, t in zip(clean, typo, strict=True)]
    return pairs["clean_correct"].to_numpy(dtype=bool) & np.asarray(changed, dtype=bool)


def cells(
    pairs: pd.DataFrame,
    *,
    answer_type: str,
    designs: Sequence[str],
    budgets: Sequence[float],
) -> tuple[list[Cell], np.ndarray]:
    """Every eligible pair's cells, and per pair whether it was eligible but unsplittable."""
    chosen = eligible(pairs)
    unsplit = np.zeros(len(pairs), dtype=bool)
    out: list[Cell] = []
    for i, row in enumerate(pairs.itertuples(index=False)):
        if not chosen[i]:
            continue
        clean = split_answer(row.clean_output, answer_type)
        typo = split_answer(row.typo_output, answer_type)
        q0, q1 = row.clean_prompt, row.typo_prompt
        if COT_SWAP in designs or ANSWER_LINE_DELETION in designs:
            if clean is None or typo is None:
                unsplit[i] = True
            else:
                if COT_SWAP in designs:
                    r0, r1 = _open(clean.reasoning), _open(typo.reasoning)
                    for name, q, r in (("A", q0, r0), ("B", q1, r1), ("C", q1, r0), ("D", q0, r1)):
                        out.append(Cell(i, COT_SWAP, name, "", q, r, False))
                if ANSWER_LINE_DELETION in designs:
                    cut = _open(without_last_line(clean.reasoning))
                    out.append(Cell(i, ANSWER_LINE_DELETION, "C-1", "", q1, cut, False))
        if PREFIX_SCAN in designs:
            if clean is None:
                unsplit[i] = True
                continue
            for budget in budgets:
                prefix = prefix_of(clean.reasoning, budget)
                out.append(Cell(i, PREFIX_SCAN, "scan", str(budget), q1, prefix, True))
    return out, unsplit


def _open(reasoning: str) -> str:
    """A reasoning prefix ending in a line break, so the answer span starts on its own line."""
    return f"{reasoning}\n" if reasoning else ""


def cell_answers(
    cells_: Sequence[Cell], generations: Sequence[Any], parse: Callable[[str], object]
) -> list[object]:
    """Each cell's extracted answer (None when unextractable): the scan reads prefix and
    continuation, the other designs the regenerated answer span alone (the reasoning's own
    numbers must not count as its answer)."""
    out = []
    for cell, gen in zip(cells_, generations, strict=True):
        text = cell.prefix + gen.output if cell.free else gen.output
        out.append(parse(text) if gen.output else None)
    return out
