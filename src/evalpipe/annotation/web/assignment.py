"""Which annotator rates which item: every item gets ``overlap`` distinct annotators, load balanced.

Assignment is incremental so that adding an annotator later never takes away an item someone has
already rated: existing pairs are kept, and only the missing slots are filled, each by the
least-loaded annotator not yet on that item (ties broken by a hash of the seed, item and
annotator, so the result does not depend on the order of the input lists).

Teams change during a campaign: :func:`top_up` gives an annotator who has run out of items the
unrated items of colleagues idle for too long, then (optionally) items beyond ``overlap``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


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


@dataclass(frozen=True)
class TopUp:
    """What :func:`top_up` gives an annotator who has run out of items.

    Attributes
    ----------
    takeovers:
        ``(item_id, from_annotator)``: unrated items moved from annotators idle too long.
    extra:
        Items added beyond ``overlap`` (fewest raters first).
    """

    takeovers: list[tuple[str, str]]
    extra: list[str]

    @property
    def items(self) -> list[str]:
        return [item for item, _ in self.takeovers] + list(self.extra)


def top_up(
    annotator_id: str,
    item_ids: Sequence[str],
    assignments: Iterable[tuple[str, str, bool]],
    idle_s: Mapping[str, float],
    *,
    batch: int,
    idle_after_s: float | None,
    raise_coverage: bool = True,
    seed: int = 0,
) -> TopUp:
    """Items for an annotator with nothing left to rate, so late joiners and returners get work.

    First the unrated items of annotators idle for at least ``idle_after_s`` seconds move to
    ``annotator_id`` (coverage stays at ``overlap`` without waiting for a dropout); then, if
    ``raise_coverage``, items they have not seen go to them, fewest raters first, so coverage
    grows past ``overlap`` evenly. Ratings never move.

    Parameters
    ----------
    annotator_id:
        Who needs items.
    item_ids:
        Every item, in task order.
    assignments:
        ``(item_id, annotator_id, rated)`` for every current assignment.
    idle_s:
        Seconds since each annotator's last activity (missing: not idle).
    batch:
        At most this many items in all (0: none).
    idle_after_s:
        Idle time after which an annotator's unrated items may move; None: never.
    raise_coverage:
        Whether items may get more than their current raters.
    seed:
        Tie-breaking seed.

    Returns
    -------
    TopUp

    >>> rows = [("a", "x", True), ("a", "y", False), ("b", "x", False), ("b", "y", True)]
    >>> top_up("z", ["a", "b"], rows, {"y": 9e9}, batch=5, idle_after_s=3600).takeovers
    [('a', 'y')]
    >>> top_up("z", ["a", "b", "c"], rows, {}, batch=1, idle_after_s=None).extra
    ['c']
    """
    if batch <= 0:
        return TopUp([], [])
    rows = list(assignments)
    mine = {item for item, who, _ in rows if who == annotator_id}
    takeovers: list[tuple[str, str]] = []
    if idle_after_s is not None:
        order = {item: i for i, item in enumerate(item_ids)}
        candidates = sorted(
            (order.get(item, len(order)), item, who)
            for item, who, rated in rows
            if who != annotator_id
            and not rated
            and item not in mine
            and idle_s.get(who, 0.0) >= idle_after_s
        )
        taken: set[str] = set()
        for _, item, who in candidates:
            if len(takeovers) >= batch:
                break
            if item not in taken:
                takeovers.append((item, who))
                taken.add(item)
        mine |= taken
    extra: list[str] = []
    if raise_coverage and len(takeovers) < batch:
        raters: dict[str, int] = dict.fromkeys(item_ids, 0)
        for item, _who, _rated in rows:
            if item in raters:
                raters[item] += 1
        free = [item for item in item_ids if item not in mine]
        free.sort(key=lambda item: (raters[item], stable_hash(seed, item, annotator_id)))
        extra = free[: batch - len(takeovers)]
    return TopUp(takeovers, extra)
