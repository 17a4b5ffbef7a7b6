"""What the edits of one perturbed row amount to, stated once by perturb for every later table:
how many word occurrences they edited, how many characters they changed, and which operation
kind and which script they are (one kind, or ``"mixed"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def _strings(values: Sequence[str | None] | pa.Array) -> pa.Array:
    return values if isinstance(values, pa.Array) else pa.array(values, pa.string())


def _one_or_mixed(
    codes: np.ndarray,
    names: list[str | None],
    starts: np.ndarray,
    edited: np.ndarray,
    n_rows: int,
) -> pa.Array:
    """Per row: the one name of its edits' ``codes`` (the edited rows' edits begin at
    ``starts``), MIXED when they differ, null for a row without edits."""
    low = np.minimum.reduceat(codes, starts)
    high = np.maximum.reduceat(codes, starts)
    per_row = np.full(n_rows, -1, dtype=np.int64)
    per_row[edited] = np.where(low == high, low, len(names))
    lookup = pa.array([*names, MIXED], pa.string())
    return lookup.take(pa.array(per_row, mask=per_row < 0))


def _codes(
    texts: pa.Array, name_of: Callable[[str | None], str | None]
) -> tuple[np.ndarray, list[str | None]]:
    """Each text's code, and the names the codes stand for: the texts' distinct ``name_of``, so
    two texts of one name share its code (``name_of`` is called once per distinct text)."""
    encoded = texts.dictionary_encode(null_encoding="encode")
    names: dict[str | None, int] = {}
    code_of = np.array(
        [names.setdefault(name_of(t), len(names)) for t in encoded.dictionary.to_pylist()],
        dtype=np.int64,
    )
    return code_of[encoded.indices.to_numpy()], list(names)


def _same(name: str | None) -> str | None:
    return name


def typo_facts_columns(
    kinds: Sequence[str] | pa.Array,
    original_chars: Sequence[str | None] | pa.Array,
    new_chars: Sequence[str | None] | pa.Array,
    counts: Sequence[int] | np.ndarray,
) -> dict[str, pa.Array]:
    """The typo columns of many rows at once: :func:`typo_facts` of each row (``NO_TYPOS`` for a
    row without edits), with no Python call per row or per edit (a flush states hundreds of
    thousands): Arrow's kernels measure the texts, and the kinds and scripts are looked up
    once per distinct text.

    Parameters
    ----------
    kinds, original_chars, new_chars : the ``op``, ``original_char`` and ``new_char`` of every
        edit, the rows' edits one after another (lists, or Arrow string arrays).
    counts : the number of edits of each row.

    Returns
    -------
    ``{"n_typos", "n_edited_chars"}`` as int32 arrays and ``{"op", "script"}`` as string arrays,
    one value per row.

    Examples
    --------
    >>> facts = typo_facts_columns(["replace", "delete", "insert"], ["c", "t", None],
    ...                            ["x", None, "ゃ"], [0, 2, 1])
    >>> {name: column.to_pylist() for name, column in facts.items()}
    {'n_typos': [0, 2, 1], 'n_edited_chars': [0, 2, 1], 'op': [None, 'mixed', 'insert'], \
'script': [None, 'latin', 'hiragana']}
    """
    kinds, original_chars, new_chars = map(_strings, (kinds, original_chars, new_chars))
    n_rows = len(counts)
    per_row = np.asarray(counts, dtype=np.int64).reshape(n_rows)
    edited = np.flatnonzero(per_row)
    starts = (np.cumsum(per_row) - per_row)[edited]  # each edited row's first edit
    chars = np.zeros(n_rows, dtype=np.int64)
    if len(edited):
        # an edit's characters, as edited_chars counts them: the original text's, else the
        # inserted text's
        measured = pc.coalesce(original_chars, new_chars, pa.scalar("", pa.string()))
        edit_chars = pc.utf8_length(measured).to_numpy()
        chars[edited] = np.add.reduceat(edit_chars, starts)
        op = _one_or_mixed(*_codes(kinds, _same), starts, edited, n_rows)
        deciding = pc.if_else(pc.equal(kinds, "insert"), new_chars, original_chars)
        script = _one_or_mixed(*_codes(deciding, _ScriptOf().__getitem__), starts, edited, n_rows)
    else:
        op = script = pa.nulls(n_rows, pa.string())
    return {
        "n_typos": pa.array(per_row, pa.int32()),
        "n_edited_chars": pa.array(chars, pa.int32()),
        "op": op,
        "script": script,
    }
