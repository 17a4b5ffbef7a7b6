"""Character operations, their probabilities, and the hashed seeds that drive them.

Each occurrence of a target word gets its own 32-byte BLAKE2b digest of the full key
``(seed, benchmark, example_id, word, field, occurrence)``. The digest is the occurrence's random
stream: bytes 0-7 decide whether an operation fires, 8-15 which operation, 16-23 the position,
24-31 the new character. Nothing depends on the order in which occurrences are processed, and two
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
_SCALE = 2**53
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
    def cut_points(self) -> tuple[int, int, int]:
        """Integer thresholds on 53-bit draws ``int(8 bytes) >> 11``: an operation fires below
        the first; it is a replacement below the second, an insertion below the third, else a
        deletion. Integers keep the choice exact: no float rounding can pick a zero-probability
        operation."""
        total = self.total
        if total == 0:
            return (0, 0, 0)
        fire = min(_SCALE, round(total * _SCALE))
        replace = round(self.replace / total * _SCALE)
        insert = round((self.replace + self.insert) / total * _SCALE)
        if self.delete == 0:
            insert = _SCALE
            if self.insert == 0:
                replace = _SCALE
        return (fire, replace, insert)

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


def fire_threshold(probs: Probabilities) -> int:
    """An occurrence whose digest's first 8 bytes (big-endian) are below this gets a typo."""
    return probs.cut_points[0] << 11


def decide(word: str, digest: bytes, probs: Probabilities) -> Operation | None:
    """Apply at most one operation to ``word`` using the random stream ``digest``.

    With probability ``probs.total`` an operation fires; which one is weighted by the three
    probabilities. Replacements pick a position whose character has a script class and a different
    character of the same class; insertions pick a slot 0..len(word) whose neighbouring character
    (the one after the slot, or the last one at the end) has a class and insert a character of
    that class; deletions pick any position. If the chosen operation has no eligible position (a
    word with no classed character), the occurrence is deleted from instead, so that the fraction
    of perturbed occurrences always follows ``probs.total``.

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
    fire, cut_replace, cut_insert = probs.cut_points
    if not word or (int.from_bytes(digest[0:8], "big") >> 11) >= fire:
        return None
    x = int.from_bytes(digest[8:16], "big") >> 11
    op = "replace" if x < cut_replace else "insert" if x < cut_insert else "delete"
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
