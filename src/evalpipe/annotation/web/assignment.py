"""Which annotator rates which item: every item gets ``overlap`` distinct annotators, load balanced.

Assignment is incremental so that adding an annotator later never takes away an item someone has
already rated: existing pairs are kept, and only the missing slots are filled, each by the
least-loaded annotator not yet on that item (ties broken by a hash of the seed, item and
annotator, so the result does not depend on the order of the input lists).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of the parts that is the same on every machine and run (unlike ``hash``)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def fill_assignments(
    item_ids: Sequence[str],
    annotator_ids: Sequence[str],
    existing: Iterable[tuple[str, str]],
    *,
    overlap: int,
    seed: int = 0,
) -> list[tuple[str, str]]:
    """The (item_id, annotator_id) pairs to add so every item has ``overlap`` annotators.

    Parameters
    ----------
    item_ids:
        Items to cover, in presentation order.
    annotator_ids:
        Annotators who can take items (admins excluded by the caller).
    existing:
        Pairs already assigned; they are kept and count towards overlap and load.
    overlap:
        How many distinct annotators each item should get (capped by the number of annotators).
    seed:
        Tie-breaking seed.

    Returns
    -------
    list[tuple[str, str]]
        New pairs only, in item order.

    >>> fill_assignments(["a", "b"], ["x", "y"], [], overlap=1, seed=0)
    [('a', 'x'), ('b', 'y')]
    """
    if overlap < 1:
        raise ValueError(f"overlap must be at least 1, got {overlap}")
    annotators = sorted(set(annotator_ids))
    on_item: dict[str, set[str]] = {item: set() for item in item_ids}
    load: dict[str, int] = dict.fromkeys(annotators, 0)
    for item, annotator in existing:
        if item in on_item:
            on_item[item].add(annotator)
        if annotator in load:
            load[annotator] += 1
    added: list[tuple[str, str]] = []
    for item in item_ids:
        want = min(overlap, len(annotators))
        while len(on_item[item]) < want:
            free = [a for a in annotators if a not in on_item[item]]
            pick = min(free, key=lambda a: (load[a], stable_hash(seed, item, a)))
            on_item[item].add(pick)
            load[pick] += 1
            added.append((item, pick))
    return added


def presentation_order(item_ids: Iterable[str], annotator_id: str, *, seed: int = 0) -> list[str]:
    """Each annotator sees their items in a different, reproducible order (reduces order effects)."""
    return sorted(item_ids, key=lambda item: (stable_hash(seed, annotator_id, item), item))
