"""Hand-written SVG figures (matplotlib is not a dependency): deterministic text, no ids.

Coordinates are rounded to one decimal and every number is printed with a fixed format, so equal
inputs give equal bytes; the same strings are inlined in the HTML report and written as the image
plots DVC shows (`dvc plots show` / `dvc plots diff`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalpipe.report.html import FONT_STACK, esc, is_missing

BAD = "#b42318"
GOOD = "#067647"
NEUTRAL = "#1f5fbf"
MUTED = "#5b6472"
GRID = "#d8dde6"


@dataclass(frozen=True)
class ForestRow:
    """One line of a forest plot: an estimate with its interval.

    ``note`` is printed right of the plot (e.g. ``rank 3 · n 41``); ``weak`` draws the point
    hollow (a small sample, flagged in the tables too).
    """

    label: str
    estimate: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""
    weak: bool = False


def _f(x: float) -> str:
    """A coordinate: one decimal, no negative zero."""
    value = round(float(x), 1)
    return f"{value + 0.0:.1f}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick positions covering ``[low, high]`` (1, 2, 2.5, 5 x 10^k steps).

    Parameters
    ----------
    low, high:
        The data range (``low < high``).
    count:
        About how many ticks.

    Returns
    -------
    list of float
        Increasing tick values, first <= low, last >= high.
    """
    span = high - low
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    ticks = []
    i = first
    while True:
        value = round(i * step, 10)
        ticks.append(value + 0.0)
        if value >= high - 1e-9:
            break
        i += 1
    return ticks


def _tick_label(value: float, step: float) -> str:
    text = f"{step:.10f}".rstrip("0").rstrip(".")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{value + 0.0:.{decimals}f}"


def empty_figure(message: str, *, width: int = 640) -> str:
    """A small SVG that says why there is no figure (used for image plots DVC always expects)."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40" '
        f'viewBox="0 0 {width} 40" role="img"><title>{esc(message)}</title>'
        f'<text x="8" y="24" font-family=\'{esc(FONT_STACK)}\' font-size="13" '
        f'fill="{MUTED}">{esc(message)}</text></svg>'
    )


def forest_plot(
    rows: Sequence[ForestRow],
    *,
    title: str,
    x_label: str,
    width: int = 760,
    label_width: int = 220,
    note_width: int = 150,
    row_height: int = 20,
) -> str:
    """A forest plot: one row per estimate, horizontal CI bars, a vertical line at zero.

    Negative estimates (accuracy lost) are drawn red, positive green.

    Parameters
    ----------
    rows:
        Top to bottom.
    title, x_label:
        Figure title and axis label.
    width, label_width, note_width, row_height:
        Geometry in pixels.

    Returns
    -------
    str
        An ``<svg>`` element (with the xmlns, so it is also a valid standalone file).
    """
    if not rows:
        return empty_figure(f"{title}: no rows")
    values = [
        v
        for r in rows
        for v in (r.estimate, r.low, r.high)
        if not is_missing(v) and math.isfinite(float(v))
    ]
    low = min([0.0, *values])
    high = max([0.0, *values])
    if high - low < 1e-9:
        low, high = -0.05, 0.05
    ticks = nice_ticks(low, high)
    low, high = min(ticks[0], low), max(ticks[-1], high)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    top = 34
    plot_left = label_width
    plot_right = width - note_width
    height = top + row_height * len(rows) + 46

    def x(v: float) -> float:
        return plot_left + (float(v) - low) / (high - low) * (plot_right - plot_left)

    font = esc(FONT_STACK)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family=\'{font}\' font-size="12">',
        f"<title>{esc(title)}</title>",
        f'<text x="8" y="18" font-size="14" font-weight="bold">{esc(title)}</text>',
    ]
    bottom = top + row_height * len(rows)
    for t in ticks:
        tx = _f(x(t))
        parts.append(
            f'<line x1="{tx}" y1="{top - 4}" x2="{tx}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text x="{tx}" y="{bottom + 14}" text-anchor="middle" fill="{MUTED}">'
            f"{esc(_tick_label(t, step))}</text>"
        )
    zx = _f(x(0.0))
    parts.append(
        f'<line x1="{zx}" y1="{top - 4}" x2="{zx}" y2="{bottom}" stroke="{MUTED}" '
        'stroke-width="1.2"/>'
    )
    for i, row in enumerate(rows):
        cy = top + row_height * i + row_height / 2
        cys = _f(cy)
        if i % 2 == 1:
            parts.append(
                f'<rect x="0" y="{_f(cy - row_height / 2)}" width="{width}" '
                f'height="{row_height}" fill="#f5f7fa" fill-opacity="0.6"/>'
            )
        parts.append(
            f'<text x="{label_width - 8}" y="{_f(cy + 4)}" text-anchor="end">'
            f"{esc(row.label)}</text>"
        )
        if row.note:
            parts.append(
                f'<text x="{plot_right + 8}" y="{_f(cy + 4)}" fill="{MUTED}">{esc(row.note)}</text>'
            )
        if is_missing(row.estimate):
            parts.append(
                f'<text x="{zx}" y="{_f(cy + 4)}" fill="{MUTED}" text-anchor="middle">n/a</text>'
            )
            continue
        colour = BAD if row.estimate < 0 else GOOD if row.estimate > 0 else NEUTRAL
        if not is_missing(row.low) and not is_missing(row.high):
            parts.append(
                f'<line x1="{_f(x(row.low))}" y1="{cys}" x2="{_f(x(row.high))}" y2="{cys}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        fill = "#ffffff" if row.weak else colour
        parts.append(
            f'<rect x="{_f(x(row.estimate) - 4)}" y="{_f(cy - 4)}" width="8" height="8" '
            f'fill="{fill}" stroke="{colour}" stroke-width="1.5"/>'
        )
    parts.append(
        f'<text x="{_f((plot_left + plot_right) / 2)}" y="{bottom + 32}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


# An estimate of a 12px label character's width, and the slant of labels that would overlap.
CHAR_WIDTH = 7.0
SLANT_DEGREES = 35
SLANT_SIN = 0.574  # sin(35°)


def grouped_bars(
    categories: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[float | None]]],
    *,
    title: str,
    y_label: str,
    y_max: float = 1.0,
    intervals: Sequence[Sequence[tuple[float | None, float | None]]] | None = None,
    width: int = 760,
    height: int = 280,
) -> str:
    """Vertical grouped bars (e.g. accuracy original vs perturbed per benchmark), with optional
    error bars.

    Parameters
    ----------
    categories:
        Groups along the x axis.
    series:
        ``(name, colour, values)``; ``values`` aligned with ``categories`` (None = no bar).
    title, y_label:
        Texts.
    y_max:
        Top of the y axis.
    intervals:
        Per series, per category ``(low, high)`` error bars, or None.

    Returns
    -------
    str
        An ``<svg>`` element.
    """
    if not categories or not series:
        return empty_figure(f"{title}: no data")
    left, right, top, bottom = 56, 16, 40, 60
    plot_w = width - left - right
    group_w = plot_w / len(categories)
    # labels wider than their group (several models' benchmarks) would run into each other:
    # slant them and make room below
    widths = [len(str(c)) * CHAR_WIDTH for c in categories]
    longest = max(widths)
    # two neighbours' centred labels meet when their half widths fill the group's width
    slanted = any((a + b) / 2 > group_w - 4 for a, b in itertools.pairwise(widths))
    if slanted:
        extra = int(longest * SLANT_SIN) + 8 - (bottom - 44)
        bottom += max(0, extra)
        height += max(0, extra)
    plot_h = height - top - bottom
    bar_w = min(28.0, group_w * 0.8 / len(series))
    font = esc(FONT_STACK)

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(float(v), y_max)) / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family=\'{font}\' font-size="12">',
        f"<title>{esc(title)}</title>",
        f'<text x="8" y="18" font-size="14" font-weight="bold">{esc(title)}</text>',
    ]
    for t in nice_ticks(0.0, y_max, 4):
        ty = _f(y(t))
        parts.append(
            f'<line x1="{left}" y1="{ty}" x2="{width - right}" y2="{ty}" stroke="{GRID}"/>'
            f'<text x="{left - 6}" y="{_f(y(t) + 4)}" text-anchor="end" fill="{MUTED}">'
            f"{t:.2f}</text>"
        )
    parts.append(
        f'<text x="14" y="{_f(top + plot_h / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f(top + plot_h / 2)})">{esc(y_label)}</text>'
    )
    for gi, cat in enumerate(categories):
        gx = left + group_w * gi + (group_w - bar_w * len(series)) / 2
        for si, (_, colour, values) in enumerate(series):
            v = values[gi]
            bx = gx + bar_w * si
            if is_missing(v):
                continue
            parts.append(
                f'<rect x="{_f(bx)}" y="{_f(y(v))}" width="{_f(bar_w - 2)}" '
                f'height="{_f(y(0) - y(v))}" fill="{colour}"/>'
            )
            if intervals is not None:
                lo, hi = intervals[si][gi]
                if not is_missing(lo) and not is_missing(hi):
                    cx = _f(bx + (bar_w - 2) / 2)
                    parts.append(
                        f'<line x1="{cx}" y1="{_f(y(lo))}" x2="{cx}" y2="{_f(y(hi))}" '
                        f'stroke="{MUTED}" stroke-width="1.5"/>'
                    )
        lx_ = _f(left + group_w * gi + group_w / 2)
        ly_ = height - bottom + 16
        parts.append(
            f'<text x="{lx_}" y="{ly_}" text-anchor="end" '
            f'transform="rotate(-{SLANT_DEGREES} {lx_} {ly_})">{esc(cat)}</text>'
            if slanted
            else f'<text x="{lx_}" y="{ly_}" text-anchor="middle">{esc(cat)}</text>'
        )
    lx = left
    for name, colour, _ in series:
        parts.append(
            f'<rect x="{lx}" y="{height - 24}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{lx + 16}" y="{height - 14}">{esc(name)}</text>'
        )
        lx += 24 + 8 * len(name)
    parts.append("</svg>")
    return "".join(parts)
