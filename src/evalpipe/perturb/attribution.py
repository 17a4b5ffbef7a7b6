"""What the edits of one perturbed row amount to, stated once by perturb for every later table:
how many word occurrences they edited, how many characters they changed, and which operation
kind and which script they are (one kind, or ``"mixed"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

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
    transposition's pair, 2; a conversion's whole word), or for an insertion those it inserted
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
