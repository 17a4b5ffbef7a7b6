"""Report sections for model ladders and perplexity under typos; each is omitted (None) when its
input is absent, so a report without a ladder or without ``scoring.perplexity`` stays as it was.

- :func:`ladder_section`: ``data/impact/ladder.parquet`` (the impact stage writes it for two
  models or more with labels): accuracy clean vs typo'd per model, and which variant of each
  family loses most against its reference model.
- :func:`perplexity_section`: ``metrics/<model>/perplexity.json`` of every model (the score
  stage writes it with ``scoring.perplexity: true``): perplexity of the perturbable text,
  perturbed over original.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h

POOLED = "pooled"


def _ci(row: Mapping[str, Any], low: str, high: str) -> str:
    return h.fmt_ci(row.get(low), row.get(high))


def ladder_section(table: pd.DataFrame | None) -> str | None:
    """Models of a ladder side by side (``data/impact/ladder.parquet``), pooled per language and
    per benchmark; None without a ladder table (fewer than two models, or none labelled)."""
    if table is None or table.empty or table["model"].nunique() < 2:
        return None
    rows = []
    for rec in table.to_dict("records"):
        rec = {k: (None if h.is_missing(v) else v) for k, v in rec.items()}
        rec["delta_ci"] = _ci(rec, "ci_low", "ci_high")
        rec["diff_ci"] = _ci(rec, "diff_ci_low", "diff_ci_high")
        rec["variant"] = " / ".join(
            str(rec[k]) for k in ("family", "size", "quantisation") if rec.get(k) is not None
        )
        rows.append(rec)
    columns = [
        h.text("language", "language"),
        h.text("benchmark", "benchmark"),
        h.text("model", "model"),
        h.text("variant", "family / size / quantisation"),
        h.num("n", "pairs", 0),
        h.num("accuracy_original", "acc. clean"),
        h.num("accuracy_perturbed", "acc. typo'd"),
        h.signed("delta", "accuracy change"),
        h.text("delta_ci", "95% CI"),
        h.text("reference", "reference"),
        h.signed("delta_vs_reference", "change vs reference"),
        h.text("diff_ci", "95% CI (vs reference)"),
        h.num("loss_rank", "loses most (1)", 0),
    ]
    worst = []
    for rec in rows:
        if rec["scope"] == POOLED and rec.get("loss_rank") == 1:
            figures = (
                f"{h.fmt_signed(rec['delta_vs_reference'])} vs {h.esc(rec['reference'])}, "
                f"95% CI {h.esc(rec['diff_ci'])}"
            )
            if rec["delta_vs_reference"] < 0:
                worst.append(f"{h.esc(rec['language'])}: <b>{h.esc(rec['model'])}</b> ({figures})")
            else:  # rank 1 of variants that all did at least as well as their reference
                worst.append(
                    f"{h.esc(rec['language'])}: no variant of {h.esc(rec['family'])} loses more "
                    f"than its reference (closest: {h.esc(rec['model'])}, {figures})"
                )
    note = (
        "<p class=\"note\">Each model's typo pairs: accuracy on the clean and the typo'd prompt "
        "and the paired change (Tango's score interval, clustered on the example). Within a "
        "family (the models' <code>family</code> label) each variant is compared with the "
        "reference model (unquantised, else the largest): <i>change vs reference</i> is the "
        "difference of the two paired changes over the same typo'd prompts, with the same "
        "score interval applied to the per-prompt difference, clustered on the example "
        '(docs/scoring.md, "Model ladders"). Rank 1 loses most. '
        "Table: <code>data/impact/ladder.parquet</code>.</p>"
    )
    head = f"<p>Loses most under typos, pooled: {'; '.join(worst)}.</p>" if worst else ""
    pooled = [r for r in rows if r["scope"] == POOLED]
    per_benchmark = [r for r in rows if r["scope"] != POOLED]
    body = head + note + "<h3>Pooled per language</h3>"
    body += h.table(columns, pooled, sortable=True, table_id="ladder-pooled", scroll=True)
    body += "<h3>Per benchmark</h3>"
    body += h.table(
        columns, per_benchmark, sortable=True, table_id="ladder-benchmarks", scroll=True
    )
    return body


def perplexity_rows(perplexity: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, scope): ``{model: perplexity.json}`` flattened for the table."""
    rows = []
    for model, figures in sorted(perplexity.items()):
        for scope, key in (("benchmark", "benchmarks"), (POOLED, "pooled")):
            for name, stats in sorted((figures.get(key) or {}).items()):
                if isinstance(stats, Mapping):
                    rows.append(
                        {
                            "model": model,
                            "scope": scope,
                            "name": name if scope == "benchmark" else f"{name} (pooled)",
                            **stats,
                            "ratio_ci": h.fmt_ci(stats.get("ci_low"), stats.get("ci_high")),
                        }
                    )
    return rows


def perplexity_section(perplexity: Mapping[str, Any]) -> str | None:
    """Perplexity of the perturbable text, typo'd over clean, per benchmark and pooled, from
    ``{model: metrics/<model>/perplexity.json}``; None when no model has one."""
    if not perplexity:
        return None
    rows = perplexity_rows(perplexity)
    if not rows:
        return None
    columns = [
        h.text("model", "model"),
        h.text("name", "benchmark"),
        h.num("n", "pairs", 0),
        h.num("n_unscored", "unscored", 0),
        h.num("tokens_original", "tokens (clean)", 1),
        h.num("ll_original", "log-lik./token clean"),
        h.num("ll_perturbed", "log-lik./token typo'd"),
        h.num("ratio", "perplexity ratio"),
        h.text("ratio_ci", "95% CI"),
    ]
    note = (
        '<p class="note">The perturbable text (the fields the typos edit) scored in its prompt '
        "context from the engine's prompt log-probabilities: mean log-likelihood per token of "
        "the clean and the typo'd text over the typo pairs, and <i>perplexity ratio</i> = "
        "perplexity typo'd / clean = exp(clean - typo'd), above 1 when typos make the text "
        "less likely; interval: cluster bootstrap-t on the per-pair log-ratio (skewed: the "
        "interval reaches further above), then exp "
        '(docs/scoring.md, "Perplexity under typos"). Unscored pairs (a server without prompt '
        "log-probabilities, a text over the context) are counted, not used.</p>"
    )
    return note + h.table(columns, rows, sortable=True, table_id="perplexity-table", scroll=True)
