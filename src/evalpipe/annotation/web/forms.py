"""The rating form: parsing, redisplay values, drafts, and the confidence scale's names."""

from __future__ import annotations

import math
from typing import Any

from evalpipe.annotation.schema import AXES

CONFIDENCE_LEVELS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)


def parse_rating_form(
    form: Any, *, with_confidence: bool = True
) -> tuple[dict[str, int], dict[str, float], list[str]]:
    """Scores and confidences from a submitted form, with a message per missing/bad field.

    A ``score_<name>`` or ``conf_<name>`` field for an axis that does not exist is an error (a
    stale or tampered form must not lose a rating silently).
    """
    scores: dict[str, int] = {}
    confidence: dict[str, float] = {}
    errors: list[str] = []
    for key in form:
        for prefix in ("score_", "conf_"):
            if key.startswith(prefix) and key[len(prefix) :] not in AXES:
                errors.append(
                    f"field {key!r}: unknown axis {key[len(prefix) :]!r} "
                    f"(expected one of {', '.join(AXES)})"
                )
    for axis in AXES:
        raw = (form.get(f"score_{axis}") or "").strip()
        if raw in {"1", "2", "3", "4", "5"}:
            scores[axis] = int(raw)
        else:
            errors.append(f"{axis}: choose a score 1-5")
        if not with_confidence:
            continue
        raw_c = (form.get(f"conf_{axis}") or "").strip()
        try:
            value = float(raw_c)
        except ValueError:
            value = math.nan
        if 0.0 <= value <= 1.0:
            confidence[axis] = value
        else:
            errors.append(f"{axis}: choose a confidence")
    return scores, confidence, errors


def confidence_levels(min_confidence: float) -> list[dict[str, Any]]:
    """The confidence choices with names that agree with ``min_confidence``.

    A level below the threshold does not vote in the consensus, so its name must not say "sure";
    a level at or above it must not say "unsure".

    >>> [(c["key"], c["name"]) for c in confidence_levels(0.7)]
    [('0.2', 'guess'), ('0.4', 'unsure'), ('0.6', 'leaning'), ('0.8', 'sure'), ('1.0', 'certain')]
    >>> [c["name"] for c in confidence_levels(0.5)][2]
    'fairly sure'
    """
    out = []
    for value in CONFIDENCE_LEVELS:
        low = value < min_confidence - 1e-9
        if low:
            name = "guess" if value <= 0.2 else "unsure" if value < 0.5 else "leaning"
            hint = f"below min_confidence {min_confidence:g}: does not vote in the consensus"
        else:
            name = "certain" if value >= 1.0 else "sure" if value >= 0.8 else "fairly sure"
            hint = f"at or above min_confidence {min_confidence:g}: votes in the consensus"
        out.append({"key": conf_key(value), "value": value, "name": name, "low": low, "hint": hint})
    return out


def rating_values(scores: dict[str, int], confidence: dict[str, float]) -> dict[str, str]:
    """Stored values as the form's field values (``score_<axis>``, ``conf_<axis>``)."""
    return {
        **{f"score_{a}": str(scores[a]) for a in AXES},
        **{f"conf_{a}": conf_key(confidence[a]) for a in AXES},
    }


def form_values(form: Any) -> dict[str, str]:
    """The rating fields a form carries (for redisplay and drafts), known axes only."""
    out = {}
    for a in AXES:
        for key in (f"score_{a}", f"conf_{a}"):
            value = (form.get(key) or "").strip()[:8]
            if value:
                out[key] = value
    return out


def conf_key(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"


def int_or_zero(raw: str | None) -> int:
    try:
        return max(0, int(float(raw or 0)))
    except ValueError:
        return 0
