"""What a parser returns: the prediction and how it was found (strict, fallback, unparsed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["strict", "fallback", "unparsed"]
STATUSES: tuple[Status, ...] = ("strict", "fallback", "unparsed")


@dataclass(frozen=True)
class ParseResult:
    """What a parser made of one output.

    Attributes
    ----------
    prediction : canonical answer (same form as :func:`normalise_gold`), or None when unparsed.
    status : "strict" | "fallback" | "unparsed".
    extra : parser-specific details (JSON label parser: ``confidence``, ``reason``, ``raw_label``).
    """

    prediction: str | None
    status: Status
    extra: dict[str, Any] = field(default_factory=dict)


UNPARSED = ParseResult(None, "unparsed", {})


def unparsed(**extra: Any) -> ParseResult:
    """An unparsed result that says why (``reason``: hedge, none_of_the_above)."""
    return ParseResult(None, "unparsed", dict(extra))
