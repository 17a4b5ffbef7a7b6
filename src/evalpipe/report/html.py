"""HTML building blocks for the self-contained report: escaping, number formatting, tables, page.

Everything returns strings and depends only on its arguments, so the same inputs give the same
bytes (no timestamps, no random ids). The page makes no network request: CSS and the small
table-sorting script are inline, figures are inline SVG, and a Content-Security-Policy meta tag
tells the browser to refuse any fetch, so a forgotten external reference fails loudly in tests.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # Python 3.13's typing.TypeIs; mypy knows it on 3.11 too
    from typing_extensions import TypeIs

# Japanese first among the sans fonts: Latin glyphs of Noto Sans CJK are fine, and a Latin-first
# stack makes some browsers pick a Chinese face for kanji.
FONT_STACK = (
    '"Noto Sans CJK JP", "Noto Sans JP", "Hiragino Sans", "Hiragino Kaku Gothic ProN", '
    '"Yu Gothic", Meiryo, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
)
MONO_STACK = '"Noto Sans Mono CJK JP", "DejaVu Sans Mono", Menlo, Consolas, monospace'

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; font-src data:"
)

CSS = f"""
:root {{ --fg: #1d2433; --muted: #5b6472; --line: #d8dde6; --bg-alt: #f5f7fa;
  --bad: #b42318; --good: #067647; --accent: #1f5fbf; }}
* {{ box-sizing: border-box; }}
body {{ font-family: {FONT_STACK}; color: var(--fg); margin: 0; line-height: 1.45;
  font-size: 14px; }}
header.top {{ background: #1d2433; color: #fff; padding: 14px 24px; }}
header.top h1 {{ margin: 0; font-size: 20px; }}
header.top p {{ margin: 4px 0 0; color: #c9d1dd; }}
nav.toc {{ padding: 8px 24px; border-bottom: 1px solid var(--line); background: var(--bg-alt); }}
nav.toc a {{ margin-right: 14px; color: var(--accent); text-decoration: none; }}
main {{ padding: 0 24px 40px; max-width: 1400px; }}
section {{ margin-top: 28px; }}
h2 {{ font-size: 18px; border-bottom: 2px solid var(--line); padding-bottom: 4px; }}
h3 {{ font-size: 15px; margin: 18px 0 6px; }}
p.note, .muted {{ color: var(--muted); }}
p.missing, div.missing {{ background: #fff6e5; border-left: 4px solid #f5a524;
  padding: 8px 12px; }}
div.missing p {{ margin: 0 0 4px; }}
table {{ border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }}
th, td {{ border: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; }}
th {{ background: var(--bg-alt); }}
.scroll th {{ position: sticky; top: 0; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
table.sortable th {{ cursor: pointer; user-select: none; }}
table.sortable td {{ white-space: nowrap; }}
table.sortable th[aria-sort="ascending"]::after {{ content: " \\25B2"; }}
table.sortable th[aria-sort="descending"]::after {{ content: " \\25BC"; }}
.scroll {{ max-height: 520px; overflow: auto; display: inline-block; max-width: 100%; }}
.neg {{ color: var(--bad); }} .pos {{ color: var(--good); }}
.flag {{ background: #fff6e5; }}
del.edit {{ background: #fde2e1; color: var(--bad); }}
ins.edit {{ background: #dcfae6; color: var(--good); text-decoration: none;
  border-bottom: 2px solid var(--good); }}
pre.text {{ font-family: {MONO_STACK}; white-space: pre-wrap; word-break: break-word;
  background: var(--bg-alt); padding: 6px 8px; margin: 2px 0; max-width: 1100px; }}
mark.typo {{ background: #fde68a; color: inherit; padding: 0 1px; }}
mark.slot {{ background: none; border-left: 2px solid var(--bad); padding: 0; }}
span.typo-word {{ font-family: {MONO_STACK}; font-size: 15px; }}
div.example {{ border: 1px solid var(--line); padding: 8px 12px; margin: 10px 0; }}
div.pair {{ display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }}
figure {{ margin: 8px 0 16px; }} figcaption {{ color: var(--muted); font-size: 12px; }}
svg text {{ font-family: {FONT_STACK}; }}
"""

# Sort by the cell's data-v (numbers) or text; empty / "n/a" cells always go last.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        var cell = row.cells[col];
        var v = cell.getAttribute('data-v');
        if (v === null) { return cell.textContent; }
        return v === '' ? null : parseFloat(v);
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return x === null ? (y === null ? 0 : 1) : -1; }
        var c = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


# C0 controls other than tab / newline / CR (model output carries them) are HTML parse errors:
# show them as their Unicode "control picture" (U+2400 + code), DEL as U+2421.
_CONTROLS = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)} | {0x7F: 0x2421}


def esc(value: Any) -> str:
    """HTML-escape ``value`` (None -> empty string); control characters become visible."""
    return "" if value is None else html.escape(str(value), quote=True).translate(_CONTROLS)


def is_missing(value: Any) -> TypeIs[None]:
    """True for None and NaN (what a table shows as "n/a"); past a False, a type checker knows the
    value is not None."""
    if value is None or isinstance(value, str | bytes):
        return value is None
    try:
        return bool(value != value)  # NaN is the one value unequal to itself
    except TypeError:
        return True  # pandas.NA refuses to be a bool
    except ValueError:
        return False  # an array


def fmt_num(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals, integers as integers, missing values as ``n/a``."""
    if is_missing(value):
        return "n/a"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return str(value)


def fmt_signed(value: Any, digits: int = 3) -> str:
    """Like :func:`fmt_num` with an explicit sign (for deltas)."""
    if is_missing(value):
        return "n/a"
    return f"{float(value):+.{digits}f}"


def fmt_ci(low: Any, high: Any, digits: int = 3, *, signed: bool = False) -> str:
    """``[low, high]`` or ``n/a`` (``signed``: each bound with its sign, for a change)."""
    if is_missing(low) or is_missing(high):
        return "n/a"
    sign = "+" if signed else ""
    return f"[{float(low):{sign}.{digits}f}, {float(high):{sign}.{digits}f}]"


def fmt_p(value: Any) -> str:
    """p-values: 3 significant digits, small ones in scientific notation."""
    if is_missing(value):
        return "n/a"
    p = float(value)
    return f"{p:.2e}" if p < 0.001 else f"{p:.3f}"


@dataclass(frozen=True)
class Column:
    """One table column: ``key`` into the row dicts, header ``label``, formatter, alignment.

    ``sort_key`` gives the numeric value a sortable table sorts by (defaults to the raw value
    for numeric columns); ``css`` gives an extra class per cell (e.g. ``neg`` for harmful deltas).
    """

    key: str
    label: str
    format: Callable[[Any], str] = str
    numeric: bool = False
    css: Callable[[Any], str] | None = None
    title: str | None = None
    # the formatter returns HTML built from escaped parts (e.g. highlighted typos): not escaped again
    raw: bool = False


def num(key: str, label: str, digits: int = 3, **kw: Any) -> Column:
    """A numeric column with ``digits`` decimals."""
    return Column(key, label, lambda v: fmt_num(v, digits), numeric=True, **kw)


def signed(key: str, label: str, digits: int = 3, **kw: Any) -> Column:
    """A signed numeric column, red when negative (accuracy lost), green when positive."""

    def css(v: Any) -> str:
        if is_missing(v) or float(v) == 0:
            return ""
        return "neg" if float(v) < 0 else "pos"

    return Column(key, label, lambda v: fmt_signed(v, digits), numeric=True, css=css, **kw)


def text(key: str, label: str, **kw: Any) -> Column:
    """A text column; missing values show as ``n/a``."""
    return Column(key, label, lambda v: "n/a" if is_missing(v) else str(v), **kw)


def markup(key: str, label: str, **kw: Any) -> Column:
    """A column whose values are ready HTML (the caller escaped every text part)."""
    return Column(key, label, lambda v: "n/a" if is_missing(v) else str(v), raw=True, **kw)


def _sort_value(value: Any) -> str:
    if is_missing(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return "1" if value else "0"
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return ""


def table(
    columns: Sequence[Column],
    rows: Iterable[Mapping[str, Any]],
    *,
    sortable: bool = False,
    table_id: str | None = None,
    row_class: Callable[[Mapping[str, Any]], str] | None = None,
    scroll: bool = False,
) -> str:
    """An HTML table; cells are escaped, numeric cells carry ``data-v`` for sorting.

    Parameters
    ----------
    columns:
        What to show and how to format it.
    rows:
        One mapping per row; a key absent from a row shows as ``n/a``.
    sortable:
        Click a header to sort (inline script of the page).
    table_id:
        ``id`` attribute (stable, chosen by the caller).
    row_class:
        Extra CSS class per row (e.g. ``flag`` for small samples).
    scroll:
        Wrap in a scrolling box (long tables).

    Returns
    -------
    str
        The ``<table>`` element.
    """
    attrs = []
    if table_id:
        attrs.append(f'id="{esc(table_id)}"')
    if sortable:
        attrs.append('class="sortable"')
    head = "".join(
        f"<th{f' title={chr(34)}{esc(c.title)}{chr(34)}' if c.title else ''}>{esc(c.label)}</th>"
        for c in columns
    )
    body = []
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c.key)
            classes = ["num"] if c.numeric else []
            if c.css is not None and (extra := c.css(value)):
                classes.append(extra)
            cls = f' class="{" ".join(classes)}"' if classes else ""
            data = f' data-v="{_sort_value(value)}"' if c.numeric else ""
            shown = c.format(value) if c.raw else esc(c.format(value))
            cells.append(f"<td{cls}{data}>{shown}</td>")
        rcls = row_class(row) if row_class else ""
        rattr = f' class="{esc(rcls)}"' if rcls else ""
        body.append(f"<tr{rattr}>{''.join(cells)}</tr>")
    out = (
        f"<table {' '.join(attrs)}>".replace("<table >", "<table>")
        + f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    return f'<div class="scroll">{out}</div>' if scroll else out


def slug(*parts: str) -> str:
    """An element id from names (anything but letters and digits becomes ``_``), parts joined
    by ``-``."""
    return "-".join("".join(c if c.isalnum() else "_" for c in str(p)) for p in parts)


def missing(message: str) -> str:
    """A visible note that an input is absent, saying what would fill the section."""
    return f'<p class="missing">{esc(message)}</p>'


def section(section_id: str, title: str, body: str) -> str:
    """A top-level report section with an anchor the table of contents links to."""
    return f'<section id="{esc(section_id)}"><h2>{esc(title)}</h2>{body}</section>'


def page(title: str, subtitle: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The whole document: inline CSS and script, UTF-8, CSP that forbids any network fetch.

    Parameters
    ----------
    title, subtitle:
        Header lines.
    sections:
        ``(id, title, body_html)`` in order; the table of contents links to each id.

    Returns
    -------
    str
        A complete HTML5 document.
    """
    toc = "".join(f'<a href="#{esc(sid)}">{esc(t)}</a>' for sid, t, _ in sections)
    body = "".join(section(sid, t, b) for sid, t, b in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<header class="top"><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>\n'
        f'<nav class="toc">{toc}</nav>\n<main>\n{body}\n</main>\n'
        f"<script>{SORT_SCRIPT}</script>\n</body>\n</html>\n"
    )
