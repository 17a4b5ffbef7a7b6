"""Per-answer scores (the registered answer metrics of :mod:`evalpipe.answers.metrics`: exact
match, llm-jp-eval's char_f1) and classification metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalpipe.answers.metrics import answer_metric
from evalpipe.answers.metrics.char_f1 import char_f1
from evalpipe.answers.metrics.exact_match import exact_match
from evalpipe.answers.parsers import INVALID

__all__ = ["accuracy_score", "best_score", "char_f1", "classification_report", "exact_match"]


def best_score(prediction: str | None, golds: Sequence[str | None], *, metric: str) -> float:
    """The best score of ``prediction`` over all accepted gold answers.

    Parameters
    ----------
    prediction : canonical prediction or None.
    golds : accepted gold answers, already normalised.
    metric : a registered answer metric (``ANSWER_METRICS``: exact_match, accuracy, char_f1).

    Returns
    -------
    float

    Examples
    --------
    >>> best_score("東京都", ["東京", "東京都"], metric="char_f1")
    1.0
    """
    return answer_metric(metric).best(prediction, golds)


def accuracy_score(correct: Sequence[bool] | np.ndarray) -> float | None:
    """Share of True values; None for no values.

    >>> accuracy_score([True, False, True, True])
    0.75
    """
    values = np.asarray(correct, dtype=bool)
    return float(values.mean()) if values.size else None


def classification_report(
    y_true: Sequence[str],
    y_pred: Sequence[str | None],
    *,
    labels: Sequence[str],
    explicit_invalid: bool = False,
) -> dict[str, Any]:
    """Accuracy, macro precision / recall / F1, per-class figures and the confusion matrix.

    A prediction of None (unparsed) or outside ``labels`` becomes the class ``"invalid"``. It is
    always wrong: it counts in accuracy and as a false negative of its true class. With
    ``explicit_invalid`` it also gets its own column in the confusion matrix and its own per-class
    entry; macro averages are always over ``labels`` only, so an empty invalid class does not drag
    them down.

    Parameters
    ----------
    y_true : gold labels (all in ``labels``).
    y_pred : predicted labels or None.
    labels : the label space (explicit, as scikit-learn recommends).
    explicit_invalid : show "invalid" as a class (non-strict sentiment scoring).

    Returns
    -------
    dict
        ``n, accuracy, precision_macro, recall_macro, f1_macro, invalid`` (count),
        ``per_class: {label: {precision, recall, f1, support}}``,
        ``confusion: {actual: {predicted: count}}``.

    Examples
    --------
    >>> r = classification_report(["positive", "negative"], ["positive", None],
    ...                           labels=["positive", "negative"])
    >>> r["accuracy"], r["invalid"]
    (0.5, 1)
    """
    labels = [str(label) for label in labels]
    true = [str(t) for t in y_true]
    pred = [p if p is not None and p in labels else INVALID for p in y_pred]
    n = len(true)
    shown = [*labels, INVALID] if explicit_invalid else labels
    report: dict[str, Any] = {"n": n, "invalid": sum(p == INVALID for p in pred)}
    if n == 0:
        report.update(
            accuracy=None,
            precision_macro=None,
            recall_macro=None,
            f1_macro=None,
            per_class={},
            confusion={},
        )
        return report
    # scikit-learn takes seconds to import: only the stages that report classification pay for it
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    p_macro, r_macro, f_macro, _ = precision_recall_fscore_support(
        true, pred, labels=labels, average="macro", zero_division=0
    )
    p_cls, r_cls, f_cls, support = precision_recall_fscore_support(
        true, pred, labels=shown, average=None, zero_division=0
    )
    matrix = confusion_matrix(true, pred, labels=shown)
    report.update(
        accuracy=float(np.mean([t == p for t, p in zip(true, pred, strict=True)])),
        precision_macro=float(p_macro),
        recall_macro=float(r_macro),
        f1_macro=float(f_macro),
        per_class={
            label: {
                "precision": float(p_cls[i]),
                "recall": float(r_cls[i]),
                "f1": float(f_cls[i]),
                "support": int(support[i]),
            }
            for i, label in enumerate(shown)
        },
        confusion={
            actual: {predicted: int(matrix[i, j]) for j, predicted in enumerate(shown)}
            for i, actual in enumerate(shown)
            if actual != INVALID
        },
    )
    return report
