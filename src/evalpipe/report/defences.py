"""The report's defences section (docs/defences.md): per model and defence arm, the accuracy
won back under typos, the restoration and overcorrection of each corrector, and the cost.
Omitted when no defence ran (no ``data/scored/<model>/defences.json`` with arms)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalpipe.report import html as h

TITLE = "Defences: correctors and the typo warning"


def _rows(model: str, scope: str, arms: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for arm, f in sorted(arms.items()):
        rows.append(
            {
                "model": model,
                "scope": scope,
                "arm": arm,
                **f,
                "ci_typo": h.fmt_ci(*(f.get("delta_typo_ci") or [None, None])),
                "ci_defended": h.fmt_ci(*(f.get("delta_defended_ci") or [None, None])),
                "ci_defended_clean": h.fmt_ci(*(f.get("delta_defended_clean_ci") or [None, None])),
                "ci_points": h.fmt_ci(*(f.get("recovered_points_ci") or [None, None])),
                "ci_recovered": h.fmt_ci(*(f.get("recovered_ci") or [None, None])),
            }
        )
    return rows


COLUMNS = [
    h.text("model", "model"),
    h.text("scope", "benchmark / pooled"),
    h.text("arm", "defence"),
    h.num("n", "pairs", 0),
    h.num("acc_clean", "acc clean"),
    h.num("acc_typo", "acc typo'd"),
    h.num("acc_defended", "acc defended"),
    h.signed("delta_typo", "typo'd - clean"),
    h.text("ci_typo", "CI"),
    h.signed("delta_defended", "defended - clean"),
    h.text("ci_defended", "CI"),
    h.signed("delta_defended_clean", "defended clean - clean"),
    h.text("ci_defended_clean", "CI"),
    h.signed("recovered_points", "points won back"),
    h.text("ci_points", "CI"),
    h.num("recovered", "share of the loss won back"),
    h.text("ci_recovered", "CI"),
    h.text("recovered_basis", "share reported?"),
    h.num("restoration", "restoration"),
    h.num("overcorrection", "words changed / clean prompt"),
    h.num("extra_prompt_tokens_per_prompt", "extra prompt tokens", 1),
    h.num("corrector_tokens_per_prompt", "corrector tokens / prompt", 1),
]


def defences_section(defences: Mapping[str, Any]) -> str | None:
    """The section's HTML from ``{model: data/scored/<model>/defences.json}``, or None when no
    model ran a defence (no file, or no arms in it)."""
    defences = {
        model: figures
        for model, figures in defences.items()
        if isinstance(figures, Mapping) and figures.get("arms")
    }
    if not defences:
        return None
    pooled, per_view = [], []
    for model, figures in sorted(defences.items()):
        for scope, arms in sorted((figures.get("pooled") or {}).items()):
            pooled += _rows(model, f"pooled ({scope})", arms)
        for view, arms in sorted((figures.get("views") or {}).items()):
            per_view += _rows(model, view, arms)
    intro = (
        "<p>Each defence is one more arm: the same clean and typo'd prompts, corrected before "
        "the model reads them (<code>corrected:&lt;corrector&gt;</code>) or behind a typo "
        "warning (<code>warned</code>). <em>typo'd - clean</em> is the plain loss; "
        "<em>defended - clean</em> what is left of it with the defence; <em>defended clean - "
        "clean</em> what the defence costs on clean prompts; <em>points won back</em> = acc "
        "defended - acc typo'd, with its paired interval; <em>share of the loss won back</em> "
        "= points won back / (acc clean - acc typo'd), with Fieller's interval, shown only "
        "where the loss's interval excludes 0 and the share's interval is bounded "
        "(<em>share reported?</em> says which). <em>Restoration</em>: share of the "
        "typo'd words a corrector turned back exactly; <em>words changed / clean prompt</em>: "
        "its overcorrection. Paired intervals as in the headline (clustered on the example). "
        "The generation cache answers an identical prompt identically, so a corrected prompt "
        "equal to the clean one gets the clean answer.</p>"
    )
    return (
        intro
        + "<h3>Pooled per language</h3>"
        + h.table(COLUMNS, pooled, sortable=True, table_id="defences-pooled", scroll=True)
        + "<h3>Per benchmark</h3>"
        + h.table(COLUMNS, per_view, sortable=True, table_id="defences-views", scroll=True)
    )
