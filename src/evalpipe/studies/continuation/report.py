"""The continuation designs' section: restoration rates per model and scope, from
metrics/<model>/continuation.json."""

from __future__ import annotations

import html

from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportPart, Section

NOTE = (
    '<p class="note">Among pairs whose clean answer is correct and whose typo changed it, the '
    "share where a continuation gives back the clean answer (unextractable answers count as "
    "failures; Wilson interval clustered on the example). cot_swap: A clean question + clean "
    "reasoning, B typo'd + typo'd, C typo'd question + clean reasoning, D clean question + "
    "typo'd reasoning, the answer span regenerated; answer_line_deletion: C without the clean "
    "reasoning's final line; prefix_scan: the typo'd question continued from the first tokens "
    "(or share) of the clean reasoning. The swap cells bound what reasoning could restore; "
    "they do not measure mediation (docs/perturbation.md).</p>"
)


def continuation_section(data: ReportData) -> str | None:
    """One table row per (model, scope, design, cell or budget), or None without figures."""
    rows = []
    for path, figures in sorted(data.metrics.items()):
        if not str(path).endswith("/continuation.json") or not isinstance(figures, dict):
            continue
        model = str(path).split("/")[-2]
        for scope, designs in sorted(figures.items()):
            for design, cells in sorted(designs.items()):
                for cell, f in cells.items():
                    low, high = f.get("ci_low"), f.get("ci_high")
                    ci = f"{low:.3f}-{high:.3f}" if low is not None and high is not None else ""
                    rate = f"{f['rate']:.3f}" if f.get("rate") is not None else ""
                    cols = [model, scope, design, cell, f["restored"], f["n"], rate, ci]
                    cols += [f["unextractable"], f["unsplit"]]
                    rows.append(
                        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cols) + "</tr>"
                    )
    if not rows:
        return None
    head = ["model", "scope", "design", "cell / budget", "restored", "pairs", "rate", "95% CI"]
    head += ["unextractable", "unsplit pairs"]
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
    return f"{NOTE}<table>{header}{''.join(rows)}</table>"


def _sections(data: ReportData) -> list[Section]:
    return [
        (
            "continuation",
            "Continuations: misreading or derailed reasoning",
            continuation_section(data),
        )
    ]


PART = ReportPart("continuation", "arms", _sections)
