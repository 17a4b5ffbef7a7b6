"""Which items go back to the annotators, how urgently, and how.

An item needs another look when it was rejected (ratings too far apart, too few annotators, no
confident rating) or when its own agreement (``quality_metrics.kappa``, see
:func:`evalpipe.annotation.consensus.item_kappa`) is below ``min_kappa``. Its tier follows the
item's kappa:

- ``high_kappa`` (0.40) to ``min_kappa``: high, ``same_raters`` (close: the same annotators look
  again);
- ``medium_kappa`` (0.20) to 0.40: medium, ``add_raters`` (a wide split: more annotators settle it);
- below 0.20: low, ``revise_item`` (no agreement at all: the item itself is the problem).

An item with too few ratings for a kappa needs more raters (medium, ``add_raters``); a rejected
item whose kappa is fine (e.g. no confident rating) goes back to the same raters (high).
Adjudicated items are settled and never listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalpipe.params_schema import default_of

PRIORITIES = ("high", "medium", "low")
STRATEGIES = {"high": "same_raters", "medium": "add_raters", "low": "revise_item"}


def tier(
    kappa: float | None,
    *,
    n_annotators: int,
    min_annotators: int,
    min_kappa: float,
    high_kappa: float,
    medium_kappa: float,
) -> str:
    """The priority (``high`` / ``medium`` / ``low``) of an item with this kappa.

    >>> [tier(k, n_annotators=3, min_annotators=2, min_kappa=0.6, high_kappa=0.4,
    ...       medium_kappa=0.2) for k in (0.5, 0.3, 0.1, None)]
    ['high', 'medium', 'low', 'medium']
    """
    if n_annotators < min_annotators or kappa is None:
        return "medium"
    if kappa >= high_kappa:
        return "high"  # includes kappa >= min_kappa: rejected for another reason
    if kappa >= medium_kappa:
        return "medium"
    return "low"


def reannotation_plan(
    consensus: Sequence[Mapping[str, Any]],
    rejected: Sequence[Mapping[str, Any]],
    raters: Mapping[str, Sequence[str]],
    *,
    min_kappa: float = default_of("annotation.min_kappa"),
    min_annotators: int = default_of("annotation.min_annotators"),
    high_kappa: float = default_of("annotation.reannotation_high_kappa"),
    medium_kappa: float = default_of("annotation.reannotation_medium_kappa"),
) -> list[dict[str, Any]]:
    """The re-annotation list (``data/annotations/for_reannotation.jsonl``).

    Parameters
    ----------
    consensus, rejected:
        As built by :func:`evalpipe.annotation.consensus.build_consensus`.
    raters:
        ``{item_id: [annotator_id, ...]}``: who rated each item (the ``same_raters`` to ask).
    min_kappa, min_annotators, high_kappa, medium_kappa:
        Thresholds (params ``annotation.*``).

    Returns
    -------
    list[dict]
        ``{id, priority, strategy, kappa, n_annotators, in_consensus, reasons, annotators}``
        sorted by priority (high first), then id.
    """
    out: list[dict[str, Any]] = []

    def add(record: Mapping[str, Any], *, in_consensus: bool, reasons: list[str]) -> None:
        qm = record["quality_metrics"]
        priority = tier(
            qm["kappa"],
            n_annotators=qm["n_annotators"],
            min_annotators=min_annotators,
            min_kappa=min_kappa,
            high_kappa=high_kappa,
            medium_kappa=medium_kappa,
        )
        out.append(
            {
                "id": record["id"],
                "priority": priority,
                "strategy": STRATEGIES[priority],
                "kappa": qm["kappa"],
                "n_annotators": qm["n_annotators"],
                "in_consensus": in_consensus,
                "reasons": reasons,
                "annotators": sorted(raters.get(record["id"], [])),
            }
        )

    for r in rejected:
        add(r, in_consensus=False, reasons=list(r["reasons"]))
    for c in consensus:
        kappa = c["quality_metrics"]["kappa"]
        if c.get("adjudicated") or kappa is None or kappa >= min_kappa:
            continue
        add(c, in_consensus=True, reasons=[f"item kappa {kappa:.3f} below {min_kappa:.2f}"])
    rank = {p: i for i, p in enumerate(PRIORITIES)}
    return sorted(out, key=lambda r: (rank[r["priority"]], r["id"]))
