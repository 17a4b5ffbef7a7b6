"""Agreement over time (spec B.3.2, weekly kappa monitoring): per window, and per annotator.

Windows are ``window_days`` wide and anchored on Monday 1970-01-05 00:00 UTC, so 7-day windows
are ISO weeks and every run cuts time the same way (no dependence on the data's first date).

- The team's agreement in window W is computed on the items *completed* in W (their latest
  human rating falls in W), over all of those items' human ratings: the ratings of one item are
  compared even when the annotators rated it in different weeks.
- An annotator's agreement in window W uses the items that annotator rated in W, against the
  other annotators' ratings of the same items (whenever made): a drifting annotator shows up in
  their own row even while the team figure still looks fine.

Both use the headline estimator of :mod:`evalpipe.annotation.agreement` (pair-size-weighted
kappa with ``min_pair_overlap``), without bootstrap; a window where it is undefined shows ``None``
and the reason, so a thin week reads as "not enough data", not as a collapse.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pandas as pd

from evalpipe.annotation.agreement import (
    DEFAULT_MIN_PAIR_OVERLAP,
    agreement_report,
    annotator_kappas,
)
from evalpipe.annotation.schema import AXES, Annotation, to_long_frame

ANCHOR = datetime(1970, 1, 5, tzinfo=UTC)  # a Monday
TABLE_COLUMNS = ("window_start", "scope", "axis", "kappa", "alpha", "n_items", "note")


def window_start(timestamp: str, window_days: int) -> str:
    """The ISO date (UTC) on which the window holding ``timestamp`` starts.

    >>> window_start("2025-01-15T23:30:00-05:00", 7)  # Thursday 04:30 UTC -> Monday
    '2025-01-13'
    """
    if window_days < 1:
        raise ValueError(f"window_days must be at least 1, got {window_days}")
    moment = datetime.fromisoformat(timestamp).astimezone(UTC)
    index = (moment - ANCHOR) // timedelta(days=window_days)
    return (ANCHOR + index * timedelta(days=window_days)).date().isoformat()


def agreement_over_time(
    humans: Sequence[Annotation],
    *,
    window_days: int = 7,
    min_pair_overlap: int = DEFAULT_MIN_PAIR_OVERLAP,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement per time window, for the team and for each annotator.

    Parameters
    ----------
    humans:
        Human annotations (with their timestamps).
    window_days:
        Window width in days (7 = ISO weeks).
    min_pair_overlap:
        As in :func:`evalpipe.annotation.agreement.agreement_report`.

    Returns
    -------
    (table, plot)
        ``table``: columns :data:`TABLE_COLUMNS`; ``scope`` is ``"all"`` (axis rows with kappa and
        alpha) or an annotator id (axis rows and an ``overall`` row; alpha is empty); ``note``
        says why a kappa is empty. Sorted by window, scope (``all`` first), axis order.
        ``plot``: one row per window, ``window_start, n_items`` and the team kappa per axis.
    """
    if not humans:
        return (
            pd.DataFrame(columns=list(TABLE_COLUMNS)),
            pd.DataFrame(columns=["window_start", "n_items", *AXES]),
        )
    by_item: dict[str, list[Annotation]] = {}
    for a in humans:
        by_item.setdefault(a.id, []).append(a)
    completed: dict[str, list[str]] = {}
    for item, group in by_item.items():
        last = max(group, key=lambda a: datetime.fromisoformat(a.timestamp))
        completed.setdefault(window_start(last.timestamp, window_days), []).append(item)
    rated_in: dict[tuple[str, str], list[str]] = {}
    for a in humans:
        key = (window_start(a.timestamp, window_days), a.annotator_id)
        rated_in.setdefault(key, []).append(a.id)

    rows: list[dict[str, object]] = []
    plot_rows: list[dict[str, object]] = []
    for window in sorted(set(completed) | {w for w, _ in rated_in}):
        items = sorted(completed.get(window, []))
        plot_row: dict[str, object] = {"window_start": window, "n_items": len(items)}
        if items:
            long = to_long_frame([a for i in items for a in by_item[i]])
            report = agreement_report(long, n_boot=0, min_pair_overlap=min_pair_overlap)
            for axis in AXES:
                entry = report["axes"][axis]
                rows.append(
                    {
                        "window_start": window,
                        "scope": "all",
                        "axis": axis,
                        "kappa": entry["kappa"],
                        "alpha": entry["alpha"],
                        "n_items": len(items),
                        "note": entry["kappa_note"] or "",
                    }
                )
                plot_row[axis] = entry["kappa"]
        else:
            plot_row.update(dict.fromkeys(AXES))
        plot_rows.append(plot_row)
        for (w, annotator), mine in sorted(rated_in.items()):
            if w != window:
                continue
            long = to_long_frame([a for i in sorted(set(mine)) for a in by_item[i]])
            kappas = annotator_kappas(long, min_pair_overlap=min_pair_overlap)[annotator]
            for axis in (*AXES, "overall"):
                rows.append(
                    {
                        "window_start": window,
                        "scope": annotator,
                        "axis": axis,
                        "kappa": kappas[axis],
                        "alpha": None,
                        "n_items": len(set(mine)),
                        "note": ""
                        if kappas[axis] is not None
                        else f"no partner with {min_pair_overlap}+ shared items in this window",
                    }
                )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    plot = pd.DataFrame(plot_rows, columns=["window_start", "n_items", *AXES])
    return table, plot
