"""Agreement over time (weekly kappa monitoring): per window, and per annotator.

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

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from evalpipe.annotation.agreement import (
    DEFAULT_MIN_PAIR_OVERLAP,
    Q,
    RatingMatrix,
    agreement_report,
    pairwise_kappa,
    rating_matrix,
)
from evalpipe.annotation.schema import AXES, Annotation, to_long_frame
from evalpipe.params_schema import default_of

ANCHOR = datetime(1970, 1, 5, tzinfo=UTC)  # a Monday
TABLE_COLUMNS = ("window_start", "scope", "axis", "kappa", "alpha", "n_items", "note")


def _window_of(moment: datetime, window_days: int) -> str:
    index = (moment - ANCHOR) // timedelta(days=window_days)
    return (ANCHOR + index * timedelta(days=window_days)).date().isoformat()


def _annotator_kappas_on(
    matrices: dict[str, RatingMatrix], annotator: str, rows: np.ndarray, min_pair_overlap: int
) -> dict[str, float | None]:
    """``annotator_kappas(...)[annotator]`` restricted to the items where ``rows`` is True, from
    matrices over one shared item list (the same estimator: pair-size-weighted pairwise kappa,
    pairs below the overlap left out)."""
    out: dict[str, float | None] = {}
    for axis, mat in matrices.items():
        mine = mat.values[:, mat.raters.index(annotator)]
        num = den = 0.0
        for other, col in enumerate(mat.raters):
            if col == annotator:
                continue
            theirs = mat.values[:, other]
            both = rows & (mine > 0) & (theirs > 0)
            n = int(both.sum())
            if n < max(min_pair_overlap, 1):
                continue
            codes = (mine[both].astype(np.int64) - 1) * Q + (theirs[both].astype(np.int64) - 1)
            conf = np.bincount(codes, minlength=Q * Q).reshape(1, Q, Q).astype(np.float64)
            kappa = float(pairwise_kappa(conf)[0])
            if not math.isnan(kappa):
                num, den = num + n * kappa, den + n
        out[axis] = num / den if den else None
    defined = [v for v in out.values() if v is not None]
    out["overall"] = float(np.mean(defined)) if defined else None
    return {k: None if v is None else round(v, 4) for k, v in out.items()}


def window_start(timestamp: str, window_days: int) -> str:
    """The ISO date (UTC) on which the window holding ``timestamp`` starts.

    >>> window_start("2025-01-15T23:30:00-05:00", 7)  # Thursday 04:30 UTC -> Monday
    '2025-01-13'
    """
    if window_days < 1:
        raise ValueError(f"window_days must be at least 1, got {window_days}")
    return _window_of(datetime.fromisoformat(timestamp).astimezone(UTC), window_days)


def agreement_over_time(
    humans: Sequence[Annotation],
    *,
    window_days: int = default_of("annotation.monitor_window_days"),
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
    if window_days < 1:
        raise ValueError(f"window_days must be at least 1, got {window_days}")
    if not humans:
        return (
            pd.DataFrame(columns=list(TABLE_COLUMNS)),
            pd.DataFrame(columns=["window_start", "n_items", *AXES]),
        )
    # One long frame, filtered per window (building frames per window dominated the run time).
    moments = pd.to_datetime([a.timestamp for a in humans], utc=True, format="ISO8601")
    index = (moments - pd.Timestamp(ANCHOR)) // pd.Timedelta(days=window_days)
    starts = pd.Timestamp(ANCHOR) + index * pd.Timedelta(days=window_days)
    rated = pd.DataFrame(
        {
            "id": [a.id for a in humans],
            "annotator_id": [a.annotator_id for a in humans],
            "moment": moments,
            "window": starts.strftime("%Y-%m-%d"),
        }
    )
    # An item is completed in the window of its latest human rating.
    latest = rated.sort_values(["moment", "annotator_id"]).groupby("id")["window"].last()
    long = to_long_frame(humans)
    long_item_window = long["id"].map(latest)
    all_items = sorted(latest.index)
    position = {item: i for i, item in enumerate(all_items)}
    matrices = {axis: rating_matrix(long, axis, items=all_items) for axis in AXES}

    rows: list[dict[str, object]] = []
    plot_rows: list[dict[str, object]] = []
    for window in sorted(set(rated["window"])):
        in_window = long_item_window == window
        n_items = int(latest.eq(window).sum())
        plot_row: dict[str, object] = {"window_start": window, "n_items": n_items}
        if n_items:
            report = agreement_report(long[in_window], n_boot=0, min_pair_overlap=min_pair_overlap)
            for axis in AXES:
                entry = report["axes"][axis]
                rows.append(
                    {
                        "window_start": window,
                        "scope": "all",
                        "axis": axis,
                        "kappa": entry["kappa"],
                        "alpha": entry["alpha"],
                        "n_items": n_items,
                        "note": entry["kappa_note"] or "",
                    }
                )
                plot_row[axis] = entry["kappa"]
        else:
            plot_row.update(dict.fromkeys(AXES))
        plot_rows.append(plot_row)
        here = rated[rated["window"] == window]
        for annotator, mine in sorted(here.groupby("annotator_id")["id"]):
            items = set(mine)
            rows_mask = np.zeros(len(all_items), dtype=bool)
            rows_mask[[position[i] for i in items]] = True
            kappas = _annotator_kappas_on(matrices, annotator, rows_mask, min_pair_overlap)
            for axis in (*AXES, "overall"):
                rows.append(
                    {
                        "window_start": window,
                        "scope": annotator,
                        "axis": axis,
                        "kappa": kappas[axis],
                        "alpha": None,
                        "n_items": len(items),
                        "note": ""
                        if kappas[axis] is not None
                        else f"no partner with {min_pair_overlap}+ shared items in this window",
                    }
                )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    plot = pd.DataFrame(plot_rows, columns=["window_start", "n_items", *AXES])
    return table, plot
