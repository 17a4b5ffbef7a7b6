"""What the edits of one perturbed row amount to, stated once by perturb for every later table:
how many word occurrences they edited, how many characters they changed, and which operation
kind and which script they are (one kind, or ``"mixed"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from evalpipe.perturb.ops import Operation
from evalpipe.perturb.scripts import edit_script

MIXED = "mixed"  # a row whose edits are of more than one kind (or script)


class TypoFacts(NamedTuple):
    """The ``n_typos, n_edited_chars, op, script`` columns of one perturbed row."""

    n_typos: int
    n_edited_chars: int
    op: str | None
    script: str | None


NO_TYPOS = TypoFacts(0, 0, None, None)  # the original row


def one_kind(kinds: Iterable[str]) -> str | None:
    """The one kind in ``kinds``, ``"mixed"`` when there are several, None when there is none.

    Examples
    --------
    >>> one_kind(["replace", "replace"]), one_kind(["replace", "delete"]), one_kind([])
    ('replace', 'mixed', None)
    """
    unique = set(kinds)
    if not unique:
        return None
    return unique.pop() if len(unique) == 1 else MIXED


def edited_chars(operation: Operation) -> int:
    """The characters one edit changed: those of the original text it replaced or removed
    (a replacement's or deletion's character, 1, or kana unit such as じゃ, 2; a
    transposition's pair, 2, or the kana a romaji keystroke swap changed; a conversion's whole word), or for an insertion those it inserted
    (1, or a kana unit).

    Examples
    --------
    >>> edited_chars(Operation("transpose", 0, "ca", "ac", "act"))
    2
    >>> edited_chars(Operation("insert", 1, None, "x", "cxat"))
    1
    """
    text = operation.original_char if operation.original_char is not None else operation.new_char
    return len(text or "")


def typo_facts(operations: Sequence[Operation]) -> TypoFacts:
    """The typo columns of a row made by ``operations`` (at most one per word occurrence).

    Parameters
    ----------
    operations : the row's edits, as ``decide`` made them.

    Returns
    -------
    TypoFacts: ``n_typos`` (edited occurrences), ``n_edited_chars`` (the sum of
    :func:`edited_chars`), ``op`` (the operation kind, see :func:`one_kind`) and ``script``
    (:func:`evalpipe.perturb.scripts.edit_script` of each edit, the same way); ``NO_TYPOS``
    without operations.

    Examples
    --------
    >>> typo_facts([Operation("replace", 0, "c", "x", "xat"), Operation("delete", 2, "t", None, "ca")])
    TypoFacts(n_typos=2, n_edited_chars=2, op='mixed', script='latin')
    """
    if not operations:
        return NO_TYPOS
    # One pass, and the script of a row already mixed is not looked up (millions of rows).
    first = operations[0]
    op = first.op
    script = edit_script(op, first.original_char, first.new_char)
    chars = edited_chars(first)
    for o in operations[1:]:
        chars += edited_chars(o)
        if o.op != op:
            op = MIXED
        if script != MIXED and edit_script(o.op, o.original_char, o.new_char) != script:
            script = MIXED
    return TypoFacts(len(operations), chars, op, script)


class _ScriptOf(dict):
    """The script of an edit's deciding text (an insertion's new text, else the original),
    looked up once per distinct text (:func:`evalpipe.perturb.scripts.edit_script`)."""

    def __missing__(self, text: str | None) -> str:
        script = self[text] = edit_script("replace", text, None)
        return script


def _one_or_mixed(codes: np.ndarray, starts: np.ndarray, names: list[str]) -> np.ndarray:
    """Per group of ``codes`` (the groups begin at ``starts``): its one name, else MIXED."""
    low = np.minimum.reduceat(codes, starts)
    high = np.maximum.reduceat(codes, starts)
    lookup = np.array([*names, MIXED], dtype=object)
    return lookup[np.where(low == high, low, len(names))]


def typo_facts_columns(
    kinds: Sequence[str],
    original_chars: Sequence[str | None],
    new_chars: Sequence[str | None],
    counts: Sequence[int],
) -> dict[str, list]:
    """The typo columns of many rows at once: :func:`typo_facts` of each row (``NO_TYPOS`` for a
    row without edits), with no Python call per row (a flush states hundreds of thousands).

    Parameters
    ----------
    kinds, original_chars, new_chars : the ``op``, ``original_char`` and ``new_char`` of every
        edit, the rows' edits one after another.
    counts : the number of edits of each row.

    Returns
    -------
    ``{"n_typos": [...], "n_edited_chars": [...], "op": [...], "script": [...]}``, one value
    per row.

    Examples
    --------
    >>> typo_facts_columns(["replace", "delete", "insert"], ["c", "t", None], ["x", None, "ゃ"],
    ...                    [0, 2, 1])
    {'n_typos': [0, 2, 1], 'n_edited_chars': [0, 2, 1], 'op': [None, 'mixed', 'insert'], \
'script': [None, 'latin', 'hiragana']}
    """
    n_rows = len(counts)
    per_row = np.asarray(counts, dtype=np.int64).reshape(n_rows)
    edited = np.flatnonzero(per_row)
    starts = (np.cumsum(per_row) - per_row)[edited]  # each edited row's first edit
    chars = np.zeros(n_rows, dtype=np.int64)
    op = np.full(n_rows, None, dtype=object)
    script = np.full(n_rows, None, dtype=object)
    if len(edited):
        # an edit's characters and script, as edited_chars and edit_script state them
        edit_chars = np.fromiter(
            (
                len(o if o is not None else (n or ""))
                for o, n in zip(original_chars, new_chars, strict=True)
            ),
            dtype=np.int64,
            count=len(kinds),
        )
        script_of = _ScriptOf()
        scripts = [
            script_of[n if k == "insert" else o]
            for k, o, n in zip(kinds, original_chars, new_chars, strict=True)
        ]
        kind_codes: dict[str, int] = {}
        script_codes: dict[str, int] = {}
        chars[edited] = np.add.reduceat(edit_chars, starts)
        op[edited] = _one_or_mixed(
            np.array([kind_codes.setdefault(k, len(kind_codes)) for k in kinds]),
            starts,
            list(kind_codes),
        )
        script[edited] = _one_or_mixed(
            np.array([script_codes.setdefault(s, len(script_codes)) for s in scripts]),
            starts,
            list(script_codes),
        )
    return {
        "n_typos": per_row.tolist(),
        "n_edited_chars": chars.tolist(),
        "op": op.tolist(),
        "script": script.tolist(),
    }
