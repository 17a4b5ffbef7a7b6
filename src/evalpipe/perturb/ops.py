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
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalpipe.errors import InputError
from evalpipe.params_schema import default_of
from evalpipe.perturb.keyboard import is_kana
from evalpipe.perturb.records import RULES, Operation, Skipped
from evalpipe.perturb.scripts import (
    INVENTORIES,
    char_class,
    inventory_index,
    other_in,
)
from evalpipe.perturb.typo_models import typo_model
from evalpipe.registries import TYPO_MODELS

__all__ = ["RULES", "Operation", "Skipped"]  # re-exported: defined in records

OPS = ("replace", "insert", "delete", "transpose", "conversion")
MODELS = TYPO_MODELS.names
PROBABILITY_KEYS = (
    "replace_prob",
    "insert_prob",
    "delete_prob",
    "transpose_prob",
    "conversion_prob",
)
_SCALE = 2**64
_MIDDLE = _SCALE // 2
_PERSON_OCCURRENCE = b"evalpipe-occ"
# Where each operation's interval of the draw u sits when nothing pushes it: replace grows up from
# 0, delete down from 2**64, the other three are centred on 1/4, 1/2, 3/4. Listed in layout order.
_ANCHORS = (
    ("replace", "start", 0),
    ("transpose", "centre", _SCALE // 4),
    ("insert", "centre", _MIDDLE),
    ("conversion", "centre", 3 * _SCALE // 4),
    ("delete", "end", _SCALE),
)
# Rounding overflow (a sum at 1 + 1e-9) is taken from the later kinds of this list first.
_CLIP_ORDER = ("replace", "delete", "insert", "transpose", "conversion")


@dataclass(frozen=True)
class Probabilities:
    """The typo model of an occurrence: the chance of each operation (at most one fires) and the
    model that picks a replaced or inserted character (``uniform`` or ``keyboard``)."""

    replace: float
    insert: float
    delete: float
    transpose: float = 0.0
    conversion: float = 0.0
    model: str = TYPO_MODELS.default  # type: ignore[assignment]

    @property
    def total(self) -> float:
        """The chance that an occurrence is perturbed at all."""
        return self.replace + self.insert + self.delete + self.transpose + self.conversion

    @functools.cached_property
    def intervals(self) -> tuple[tuple[int, int, str], ...]:
        """``((start, end, op), ...)`` on 64-bit draws ``u``, in increasing order, one per
        operation with a non-zero probability: see ``decide``. The rest is no typo. Integers
        keep the choice exact: no float rounding can pick a zero-probability operation."""
        return _intervals(self.widths())

    @functools.cached_property
    def regions(self) -> tuple[int, int, int, int]:
        """``(replace_end, insert_start, insert_end, delete_start)``: the three original
        operations' intervals (empty ones at their anchor)."""
        where = {op: (a, b) for a, b, op in self.intervals}
        r = where.get("replace", (0, 0))[1]
        i0, i1 = where.get("insert", (_MIDDLE, _MIDDLE))
        d = where.get("delete", (_SCALE, _SCALE))[0]
        return (r, i0, i1, d)

    def widths(self) -> dict[str, int]:
        """Each operation's number of draws out of 2**64 (rounded, clipped to fit)."""
        raw = {op: _width(getattr(self, op)) for op in OPS}
        out: dict[str, int] = {}
        used = 0
        for op in _CLIP_ORDER:
            out[op] = min(raw[op], _SCALE - used)
            used += out[op]
        return out

    def as_dict(self) -> dict[str, float | str]:
        return {
            "model": self.model,
            "replace_prob": self.replace,
            "insert_prob": self.insert,
            "delete_prob": self.delete,
            "transpose_prob": self.transpose,
            "conversion_prob": self.conversion,
        }


def validate_probabilities(
    cfg: Mapping[str, Any], *, source: str = "params.yaml", section: str = "perturb"
) -> Probabilities:
    """Read and check the typo model: ``model`` and the five ``*_prob`` keys.

    Parameters
    ----------
    cfg : the ``perturb`` mapping of params.yaml. ``replace_prob``, ``insert_prob`` and
        ``delete_prob`` are required; ``transpose_prob`` and ``conversion_prob`` default to 0 and
        ``model`` to ``uniform`` (so a params file without these keys keeps its results).
    source, section : where the mapping came from, for error messages.

    Returns
    -------
    Probabilities, each in [0, 1] with a sum of at most 1.

    Raises
    ------
    InputError naming the file and the key when a value is missing, not a number, outside [0, 1],
    when the probabilities sum above 1, or when ``model`` is not one of ``MODELS``.

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
    for key in PROBABILITY_KEYS:
        if key not in cfg:
            if key in ("transpose_prob", "conversion_prob"):
                values[key] = float(default_of(f"perturb.{key}"))
                continue
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
        used = [k for k in PROBABILITY_KEYS if k in cfg]
        raise InputError(
            f"{source}: "
            + " + ".join(f"{section}.{k}" for k in used)
            + " must be at most 1 (it is the chance that an occurrence gets one typo), found "
            + " + ".join(str(values[k]) for k in used)
            + f" = {total:g}"
        )
    model = cfg.get("model", default_of("perturb.model"))
    TYPO_MODELS.check(model, where=f"{source}: {section}.model")
    mix = typo_model(model).mix
    if mix is not None:
        values.update(mix(values))
    return Probabilities(
        values["replace_prob"],
        values["insert_prob"],
        values["delete_prob"],
        values["transpose_prob"],
        values["conversion_prob"],
        model,
    )


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


def _width(p: float) -> int:
    # p * 2**64 is exact for a float; rounding it loses less than 2**-65 of probability
    return min(_SCALE, max(0, round(p * _SCALE)))


def _intervals(widths: Mapping[str, int]) -> tuple[tuple[int, int, str], ...]:
    """Lay the non-empty intervals out in ``_ANCHORS`` order, each at its anchor unless that
    overlaps a neighbour: a forward pass pushes each up past the one before, a backward pass
    pulls each down below the one after (see ``decide``)."""
    laid: list[list[Any]] = []
    prev_end = 0
    for op, kind, anchor in _ANCHORS:
        w = widths[op]
        if w == 0:
            continue
        ideal = anchor if kind == "start" else anchor - w if kind == "end" else anchor - w // 2
        start = max(ideal, prev_end)
        laid.append([start, w, op])
        prev_end = start + w
    next_start = _SCALE
    for item in reversed(laid):
        item[0] = min(item[0], next_start - item[1])
        next_start = item[0]
    return tuple((start, start + w, op) for start, w, op in laid)


_DIGIT_CLASSES = frozenset({"digit", "fullwidth_digit"})


def _swap_group(ch: str) -> str | None:
    if ch.isascii() and ch.isalpha():
        return "latin"
    return "kana" if is_kana(ch) else None


@functools.lru_cache(maxsize=65_536)
def transposable(word: str) -> tuple[int, ...]:
    """Positions ``i`` where ``word[i]`` and ``word[i + 1]`` may be swapped: two different
    ASCII letters, or two different kana (hiragana / katakana, not ー)."""
    return tuple(
        i
        for i in range(len(word) - 1)
        if word[i] != word[i + 1]
        and (g := _swap_group(word[i])) is not None
        and g == _swap_group(word[i + 1])
    )


# The target words' occurrences repeat (a few hundred words, a few spellings each): their
# eligible places are worked out once per spelling.
@functools.lru_cache(maxsize=65_536)
def _classed_positions(word: str) -> tuple[int, ...]:
    """Positions of ``word`` whose character has a script class (``uniform`` replacements)."""
    return tuple(i for i, c in enumerate(word) if char_class(c) is not None)


@functools.lru_cache(maxsize=65_536)
def _classed_slots(word: str) -> tuple[int, ...]:
    """Insertion slots 0..len(word) whose anchor (the character after the slot, or the last one
    at the end) has a script class (``uniform`` insertions)."""
    n = len(word)
    return tuple(s for s in range(n + 1) if char_class(word[min(s, n - 1)]) is not None)


def _transpose(word: str, r_pos: int) -> Operation | Skipped:
    pairs = transposable(word)
    if not pairs:
        return Skipped("transpose", "no_adjacent_pair")
    i = pairs[r_pos % len(pairs)]
    a, b = word[i], word[i + 1]
    return Operation("transpose", i, a + b, b + a, word[:i] + b + a + word[i + 2 :], "adjacent")


def _convert(word: str, r_char: int, homophones: Any) -> Operation | Skipped:
    if homophones is None:
        return Skipped("conversion", "not_japanese")
    if any(char_class(ch) in _DIGIT_CLASSES for ch in word):
        return Skipped("conversion", "no_homophone")
    reading, candidates = homophones.lookup(word)
    if not candidates:
        return Skipped("conversion", "no_homophone", reading)
    new = candidates[r_char % len(candidates)]
    return Operation("conversion", 0, word, new, new, "homophone", reading=reading)


def decide(
    word: str,
    digest: bytes,
    probs: Probabilities,
    *,
    homophones: Any = None,
    context: Any = None,
) -> Operation | Skipped | None:
    """Apply at most one operation to ``word`` using the random stream ``digest``.

    **Which operation: one draw, fixed intervals (common random numbers).** Let ``u`` be the
    digest's first 8 bytes as an integer in ``[0, 2**64)`` and ``w(p) = round(p * 2**64)``. Each
    operation with a non-zero probability owns one interval of ``u``, laid out in the order
    replace, transpose, insert, conversion, delete, each at its *anchor*::

        replace     [0, w(r))                          grows up from 0
        transpose   centred on 2**64 / 4
        insert      centred on 2**64 / 2
        conversion  centred on 3 * 2**64 / 4
        delete      [2**64 - w(d), 2**64)              grows down from the top

    unless that would overlap a neighbour: a forward pass moves each interval up to the end of
    the previous one when it starts before it, then a backward pass moves each down to the start
    of the next one when it ends after it (``_intervals``). ``u`` anywhere else means no typo.
    Properties, with ``r + t + i + c + d <= 1``:

    1. *At most one operation*: after the backward pass every interval ends at or before the
       next one starts; the first starts at ``>= 0`` because the forward pass put interval ``k``
       at ``>= w_1 + ... + w_(k-1)`` and the backward pass only lowers it to ``2**64 - (w_k + ...
       + w_5) >= w_1 + ... + w_(k-1)`` (the widths sum to at most ``2**64``).
    2. *Exact rates*: each interval is ``p * 2**64`` draws wide (to the nearest integer), so each
       operation fires with its probability (within ``2**-64``); a zero probability is an empty
       interval and never fires.
    3. *Moving one probability leaves the other kinds' decisions in place* (same digest, i.e.
       same seed and text) whenever, before and after the move, every interval sits at its
       anchor. An anchor depends only on the interval's own probability, so the other intervals
       keep exactly the same draws, and the moved interval grows (or shrinks) about its anchor, so
       raising a probability only adds operations of that kind. Every interval sits at its
       anchor exactly when the anchored intervals do not overlap, i.e. for consecutive non-empty
       intervals (empty ones take no room and are skipped) ``r + t/2 <= 1/4``, ``t/2 + i/2 <=
       1/4``, ``i/2 + c/2 <= 1/4``, ``c/2 + d <= 1/4`` (with ``t = 0``: ``r + i/2 <= 1/2``, and so
       on): in particular whenever every probability is at most 1/6, and for the default
       ``r = i = d = 0.2`` while ``t, c <= 0.1``. With ``t = c = 0`` the layout is exactly
       three intervals (replace, insert, delete: the draws and artifacts of a run without them), where raising ``i``
       keeps every decision on the whole domain and raising ``r`` or ``d`` keeps them while both
       stay at most ``(1 - i) / 2``. Outside the bound an interval slides by the least that keeps
       it clear, moving some decisions of its kind to other occurrences; the rates stay exact.

    No single-draw or multi-draw scheme can keep every other decision for every change on the
    whole domain: that would make the replace set depend on ``r`` alone, the insert set on ``i``
    alone, the delete set on ``d`` alone; at ``r = i = 1/2`` the insert set is then the complement
    of the replace set, at ``r = d = 1/2`` so is the delete set, so insert and delete sets coincide
    with probability 1/2 each, yet ``i = d = 1/2`` requires them disjoint.

    **Where and what.** ``digest[16:24]`` picks the position and ``digest[24:32]`` the character,
    whatever the probabilities. Model ``uniform``: replacements pick a position
    whose character has a script class and a different character of the same class; insertions
    pick a slot 0..len(word) whose anchor (the character after the slot, or the last one at the
    end) has a class and insert a character of that class; deletions pick any position. Model
    ``keyboard``: replacements and insertions follow ``keyboard_replacements`` /
    ``keyboard_insertions`` (QWERTY neighbours for Latin letters, romaji slips for kana, the
    uniform rule for kanji and other scripts) and no operation touches a digit. If a replacement or
    insertion has no eligible place, the occurrence is deleted from instead, so that the perturbed
    fraction follows the probabilities. Both models: a transposition swaps two adjacent different
    letters or kana of the occurrence (``transposable``); a conversion replaces the occurrence by
    a homophone (``homophones.lookup``). When either has nothing to make, the result is a
    ``Skipped`` (no typo, counted by the caller).

    Parameters
    ----------
    word : the occurrence's text as it appears.
    digest : at least 32 bytes, e.g. from ``occurrence_digest``.
    probs : validated probabilities and model.
    homophones : an ``evalpipe.perturb.homophones.Homophones`` for Japanese text; None elsewhere
        (a conversion is then ``Skipped(reason="not_japanese")``).

    Returns
    -------
    The Operation, a Skipped, or None when nothing fires.

    Examples
    --------
    >>> p = Probabilities(1.0, 0.0, 0.0)
    >>> op = decide("Cat", occurrence_digest(42, "b", "1", "cat", "q", 0), p)
    >>> op.op, op.original_char.isupper() == op.new_char.isupper(), op.new_char != op.original_char
    ('replace', True, True)
    >>> op = decide("cat", occurrence_digest(42, "b", "1", "cat", "q", 0), Probabilities(0, 0, 0, 1))
    >>> op.op, op.original_char, op.new_char
    ('transpose', 'at', 'ta')
    """
    if not word:
        return None
    kind = drawn_kind(digest, probs)
    if kind is None:
        return None
    return typo_maker(probs, homophones=homophones)(kind, word, digest, context)


def drawn_kind(digest: bytes, probs: Probabilities) -> str | None:
    """The kind of typo the draw ``digest[0:8]`` picks (see ``decide``), None for no typo."""
    u = int.from_bytes(digest[0:8], "big")
    for start, end, name in probs.intervals:
        if u < start:
            return None
        if u < end:
            return name
    return None


Maker = Callable[[str, str, bytes, Any], "Operation | Skipped"]


def typo_maker(probs: Probabilities, *, homophones: Any = None) -> Maker:
    """``make(kind, word, digest, context)``: the edit of a drawn kind on a non-empty ``word``
    under ``probs.model`` (what ``decide`` does once the kind is drawn).

    The model is looked up once, not per occurrence: the perturb loops draw the kind
    themselves and call the maker only for the occurrences a typo fires on.

    >>> make = typo_maker(Probabilities(1.0, 0.0, 0.0))
    >>> make("delete", "cat", bytes(32), None)
    Operation(op='delete', position=0, original_char='c', new_char=None, perturbed='at', rule='uniform', keys=None, reading=None, drawn=None)
    """
    make = typo_model(probs.model).make
    if make is None:
        return _plain_maker(homophones)
    widths = probs.widths()

    def make_with_model(kind: str, word: str, digest: bytes, context: Any) -> Operation | Skipped:
        return make(kind, word, digest, widths, lexicon=homophones, context=context)

    return make_with_model


# An Operation built from all its fields at once: Operation(...) goes through a Python-level
# __new__ with defaults, several times the cost, and the words design makes one per typo.
_PLAIN = ("uniform", None, None, None)  # rule, keys, reading, drawn of a plain edit
_operation = functools.partial(tuple.__new__, Operation)


_POSITION_CHARACTER = struct.Struct(">QQ")  # digest bytes 16-23 and 24-31, big-endian


def _uniform_places(word: str) -> tuple[tuple, tuple]:
    """A spelling's ``uniform`` places: its replaceable positions as ``(position, character,
    inventory, index)`` and its insertion slots as ``(slot, inventory)`` (see ``decide``)."""
    n = len(word)
    replaced = tuple(
        (i, word[i], INVENTORIES[cls], index)  # type: ignore[index]
        for i in _classed_positions(word)
        for cls, index in [inventory_index(word[i])]
    )
    inserted = tuple(
        (s, INVENTORIES[char_class(word[min(s, n - 1)])])  # type: ignore[index]
        for s in _classed_slots(word)
    )
    return replaced, inserted


def _plain_maker(homophones: Any) -> Maker:
    """The ``uniform`` model's maker (see ``decide``): one Python call per typo."""
    # a loop's occurrences are of a few hundred spellings: their places are worked out once
    places: dict[str, tuple[tuple, tuple]] = {}

    def make_plain(op: str, word: str, digest: bytes, context: Any) -> Operation | Skipped:
        r_pos, r_char = _POSITION_CHARACTER.unpack_from(digest, 16)
        if op == "transpose":
            return _transpose(word, r_pos)
        if op == "conversion":
            return _convert(word, r_char, homophones)
        at = places.get(word)
        if at is None:
            at = places[word] = _uniform_places(word)
        if op == "replace":
            replaced = at[0]
            if replaced:
                i, ch, inv, index = replaced[r_pos % len(replaced)]
                new = other_in(inv, index, r_char)
                return _operation(("replace", i, ch, new, word[:i] + new + word[i + 1 :], *_PLAIN))
            op = "delete"
        elif op == "insert":
            inserted = at[1]
            if inserted:
                s, inv = inserted[r_pos % len(inserted)]
                new = inv[r_char % len(inv)]
                return _operation(("insert", s, None, new, word[:s] + new + word[s:], *_PLAIN))
            op = "delete"
        i = r_pos % len(word)
        return _operation(("delete", i, word[i], None, word[:i] + word[i + 1 :], *_PLAIN))

    return make_plain
