"""Character operations, their probabilities, and the hashed seeds that drive them.

Each occurrence of a target word gets its own 32-byte BLAKE2b digest of the full key
``(seed, benchmark, example_id, word, field, occurrence)``. The digest is the occurrence's random
stream: bytes 0-7 are the one uniform draw that decides whether an operation fires and which one
(see ``decide``), 8-15 are unused, 16-23 pick the position and 24-31 the new character. The position
and character draws never depend on the probabilities. Nothing depends on the order in which occurrences are processed, and two
different keys collide only if BLAKE2b-256 does.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from evalpipe.errors import InputError
from evalpipe.perturb.scripts import INVENTORIES, char_class, inventory_index

OPS = ("replace", "insert", "delete")
_SCALE = 2**64
_MIDDLE = _SCALE // 2
_PERSON_OCCURRENCE = b"evalpipe-occ"


@dataclass(frozen=True)
class Probabilities:
    """Chance that an occurrence gets a replacement, an insertion or a deletion (at most one)."""

    replace: float
    insert: float
    delete: float

    @property
    def total(self) -> float:
        """The chance that an occurrence is perturbed at all."""
        return self.replace + self.insert + self.delete

    @functools.cached_property
    def regions(self) -> tuple[int, int, int, int]:
        """``(replace_end, insert_start, insert_end, delete_start)`` on 64-bit draws ``u``: see
        ``decide``. Replacement is ``[0, replace_end)``, insertion ``[insert_start,
        insert_end)``, deletion ``[delete_start, 2**64)``, and the rest (two gaps) is no typo.
        Integers keep the choice exact: no float rounding can pick a zero-probability operation."""
        return _regions(self.replace, self.insert, self.delete)

    def as_dict(self) -> dict[str, float]:
        return {
            "replace_prob": self.replace,
            "insert_prob": self.insert,
            "delete_prob": self.delete,
        }


def validate_probabilities(
    cfg: Mapping[str, Any], *, source: str = "params.yaml", section: str = "perturb"
) -> Probabilities:
    """Read and check ``replace_prob``, ``insert_prob``, ``delete_prob``.

    Parameters
    ----------
    cfg : the ``perturb`` mapping of params.yaml.
    source, section : where the mapping came from, for error messages.

    Returns
    -------
    Probabilities, each in [0, 1] with a sum of at most 1.

    Raises
    ------
    InputError naming the file and the key when a value is missing, not a number, outside [0, 1],
    or when the three sum above 1.

    Examples
    --------
    >>> validate_probabilities({"replace_prob": 0.1, "insert_prob": 0.1, "delete_prob": 0.1}).total
    0.30000000000000004
    """
    if not isinstance(cfg, Mapping):
        raise InputError(
            f"{source}: {section} must be a mapping with replace_prob, insert_prob, "
            f"delete_prob; found {cfg!r}"
        )
    values: dict[str, float] = {}
    for key in ("replace_prob", "insert_prob", "delete_prob"):
        if key not in cfg:
            raise InputError(f"{source}: missing key '{section}.{key}' (a probability in [0, 1])")
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(
                f"{source}: {section}.{key} must be a number in [0, 1], found {value!r}"
            )
        value = float(value)
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise InputError(f"{source}: {section}.{key} must be in [0, 1], found {value}")
        values[key] = value
    total = sum(values.values())
    if total > 1.0 + 1e-9:
        raise InputError(
            f"{source}: {section}.replace_prob + {section}.insert_prob + {section}.delete_prob "
            f"must be at most 1 (it is the chance that an occurrence gets one typo), found "
            f"{values['replace_prob']} + {values['insert_prob']} + {values['delete_prob']} = "
            f"{total:g}"
        )
    return Probabilities(values["replace_prob"], values["insert_prob"], values["delete_prob"])


def key_part(value: object) -> bytes:
    raw = str(value).encode("utf-8")
    return len(raw).to_bytes(4, "big") + raw  # length prefix: ("ab","c") != ("a","bc")


def key_hasher(*parts: object, person: bytes = _PERSON_OCCURRENCE) -> Any:
    """A BLAKE2b-256 state that has absorbed ``parts``; ``.copy()`` it to extend the key."""
    h = hashlib.blake2b(digest_size=32, person=person)
    for part in parts:
        h.update(key_part(part))
    return h


def occurrence_digest(
    seed: int, benchmark: str, example_id: str, word: str, field: str, occurrence: int
) -> bytes:
    """The 32-byte random stream of one occurrence (see the module docstring).

    The frame-level code reaches the same digest by extending copied hasher states, so it hashes
    each prefix once; this function is the definition.
    """
    h = key_hasher(seed, benchmark, example_id, word, field)
    h.update(key_part(occurrence))
    return h.digest()


def row_seed(seed: int, benchmark: str, example_id: str, variant: str) -> int:
    """A non-negative int64 naming a row's randomness: the first 8 bytes of the digest of
    ``(seed, benchmark, example_id, variant)``, the prefix that all its occurrence keys share.
    The original row uses the variant ``""`` (no target word is empty)."""
    digest = key_hasher(seed, benchmark, example_id, variant).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class Operation(NamedTuple):
    """One typo applied to one occurrence of a word."""

    op: str  # replace | insert | delete
    position: int  # character index in the word (for insert: the slot, 0..len(word))
    original_char: str | None  # None for insert
    new_char: str | None  # None for delete
    perturbed: str  # the word after the operation


def _replacement(ch: str, r: int) -> str:
    cls, index = inventory_index(ch)
    inv = INVENTORIES[cls]  # type: ignore[index]
    if index < 0:
        return inv[r % len(inv)]
    k = r % (len(inv) - 1)
    return inv[k + 1] if k >= index else inv[k]  # skip the original: never a no-op


def _width(p: float) -> int:
    # p * 2**64 is exact for a float; rounding it loses less than 2**-65 of probability
    return min(_SCALE, max(0, round(p * _SCALE)))


def _regions(replace: float, insert: float, delete: float) -> tuple[int, int, int, int]:
    r, m, d = _width(replace), _width(insert), _width(delete)
    if r + d > _SCALE:  # only from float rounding of a sum at 1 (validation allows 1 + 1e-9)
        d = _SCALE - r
    m = min(m, _SCALE - r - d)
    # centred on 1/2, slid the least needed to stay clear of the replace and delete regions
    start = min(max(_MIDDLE - m // 2, r), _SCALE - d - m)
    return (r, start, start + m, _SCALE - d)


def decide(word: str, digest: bytes, probs: Probabilities) -> Operation | None:
    """Apply at most one operation to ``word`` using the random stream ``digest``.

    **Which operation: one draw, fixed regions (common random numbers).** Let ``u`` be the
    digest's first 8 bytes as an integer in ``[0, 2**64)`` and ``w(p) = round(p * 2**64)``. Each
    operation owns one interval of ``u``::

        replace  [0, w(r))                       anchored at 0
        insert   [s, s + w(i)),  s = min(max(2**63 - w(i)//2, w(r)), 2**64 - w(d) - w(i))
        delete   [2**64 - w(d), 2**64)           anchored at the top

    and ``u`` anywhere else means no typo. Properties, with ``r + i + d <= 1``:

    1. *At most one operation*: ``s >= w(r)`` and ``s + w(i) <= 2**64 - w(d)``, so the three
       intervals are disjoint (``s`` exists because ``w(r) + w(i) + w(d) <= 2**64``).
    2. *Exact rates*: each interval is ``p * 2**64`` draws wide (to the nearest integer), so an
       occurrence is replaced, inserted into, deleted from with probability ``r``, ``i``, ``d``
       (within ``2**-64``); a zero probability is an empty interval and never fires.
    3. *Raising one probability only adds operations of that kind* (same digest, i.e. same seed
       and text):

       - raising ``d`` grows the delete interval downwards from the fixed top; the replace
         interval ``[0, w(r))`` does not move, so every replacement and every deletion stays;
         the insert interval (centred on 1/2) does not move either while ``d <= (1 - i) / 2``
         and ``r <= (1 - i) / 2``, in particular whenever every probability is at most 1/3;
       - raising ``r`` is the mirror image (replace grows upwards from 0);
       - raising ``i``: replace and delete intervals are untouched and the insert interval only
         grows: its start ``min(max(2**63 - w/2, w(r)), 2**64 - w(d) - w)`` never increases in
         ``w`` and its end ``min(max(2**63 + w/2, w(r) + w), 2**64 - w(d))`` never decreases,
         so the new interval contains the old one; this holds on the whole domain.

       Only beyond ``r`` or ``d`` > ``(1 - i) / 2`` does raising ``r`` or ``d`` slide the insert
       interval (by the least that keeps it clear), turning some insertions into no-typo and
       others from no-typo into insertions; their number stays exactly ``i``.

    No single-draw or multi-draw scheme can keep every other decision for every change on the
    whole domain ``r + i + d <= 1``: that would make the replace set depend on ``r`` alone, the
    insert set on ``i`` alone, the delete set on ``d`` alone; at ``r = i = 1/2`` the insert set is
    then the complement of the replace set, at ``r = d = 1/2`` so is the delete set, so insert and
    delete sets coincide with probability 1/2 each, yet ``i = d = 1/2`` requires them disjoint.

    **Where and what.** ``digest[16:24]`` picks the position and ``digest[24:32]`` the character,
    whatever the probabilities. Replacements pick a position whose character has a script class
    and a different character of the same class; insertions pick a slot 0..len(word) whose
    neighbouring character (the one after the slot, or the last one at the end) has a class and
    insert a character of that class; deletions pick any position. If the chosen operation has no
    eligible position (a word with no classed character), the occurrence is deleted from instead,
    so that the fraction of perturbed occurrences always follows ``probs.total``.

    Parameters
    ----------
    word : the occurrence's text as it appears.
    digest : at least 32 bytes, e.g. from ``occurrence_digest``.
    probs : validated probabilities.

    Returns
    -------
    The Operation, or None when nothing fires.

    Examples
    --------
    >>> p = Probabilities(1.0, 0.0, 0.0)
    >>> op = decide("Cat", occurrence_digest(42, "b", "1", "cat", "q", 0), p)
    >>> op.op, op.original_char.isupper() == op.new_char.isupper(), op.new_char != op.original_char
    ('replace', True, True)
    """
    if not word:
        return None
    replace_end, insert_start, insert_end, delete_start = probs.regions
    u = int.from_bytes(digest[0:8], "big")
    if u < replace_end:
        op = "replace"
    elif insert_start <= u < insert_end:
        op = "insert"
    elif u >= delete_start:
        op = "delete"
    else:
        return None
    r_pos = int.from_bytes(digest[16:24], "big")
    r_char = int.from_bytes(digest[24:32], "big")
    n = len(word)
    if op == "replace":
        eligible = (
            range(n)
            if word.isascii() and word.isalnum()
            else [i for i, c in enumerate(word) if char_class(c) is not None]
        )
        if eligible:
            i = eligible[r_pos % len(eligible)]
            new = _replacement(word[i], r_char)
            return Operation("replace", i, word[i], new, word[:i] + new + word[i + 1 :])
        op = "delete"
    elif op == "insert":
        eligible = (
            range(n + 1)
            if word.isascii() and word.isalnum()
            else [s for s in range(n + 1) if char_class(word[min(s, n - 1)]) is not None]
        )
        if eligible:
            s = eligible[r_pos % len(eligible)]
            inv = INVENTORIES[char_class(word[min(s, n - 1)])]  # type: ignore[index]
            new = inv[r_char % len(inv)]
            return Operation("insert", s, None, new, word[:s] + new + word[s:])
        op = "delete"
    i = r_pos % n
    return Operation("delete", i, word[i], None, word[:i] + word[i + 1 :])
