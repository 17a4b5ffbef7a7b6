"""The whole report: the sections in order as one self-contained HTML page, and its main
figures as standalone SVG files (DVC image plots)."""

from __future__ import annotations

from collections.abc import Sequence

from evalpipe.report import html as h
from evalpipe.report.accuracy import (
    confusion_section,
    headline_figure,
    headline_rows,
    headline_section,
    models_section,
    parse_section,
    parse_status_rows,
)
from evalpipe.report.annotation import agreement_figure, annotation_section, data_notes
from evalpipe.report.answer import answer_section, most_harmful
from evalpipe.report.data import ReportData, ReportOptions, default_model, printed_verdicts
from evalpipe.report.dose import transitions_section
from evalpipe.report.examples import examples_section
from evalpipe.report.impact import impact_forest, kinds_section, words_section
from evalpipe.report.provenance import provenance_section
from evalpipe.report.study import sections_at
from evalpipe.report.svg import empty_figure
from evalpipe.report.sycophancy import sycophancy_section
from evalpipe.report.typos import typos_section

# the module, not its tuple: a study's report part imports report modules, so either package
# may be imported first
from evalpipe.studies import report as study_reports


def build_report(data: ReportData, options: ReportOptions | None = None) -> str:
    """The self-contained HTML report.

    Parameters
    ----------
    data:
        Inputs; absent parts produce a "missing" note in their section.
    options:
        Top-N words, examples per benchmark, title.

    Returns
    -------
    str
        A complete HTML document (UTF-8 text, no external references).
    """
    options = options or ReportOptions()
    data = printed_verdicts(data)  # 3 decimals never part an interval from its p
    models = data.provenance.get("models") or []
    subtitle = (
        f"models: {', '.join(models) or 'n/a'} · prompt style: "
        f"{(data.provenance.get('params') or {}).get('prompt', {}).get('style', 'n/a')}"
    )
    headline = headline_rows(data)
    answer = answer_section(
        words=data.words, headline=headline, parse=parse_status_rows(data.scored)
    )
    languages = sorted({r["language"] for r in headline if r.get("language")})
    # The answer first, the figures behind it next, provenance last: a reader stops when answered.
    sections = [
        ("answer", "The answer: which typos cost most accuracy", answer),
        ("headline", "Accuracy per benchmark", headline_section(data)),
        ("models", "Models compared", models_section(data)),
        *sections_at(study_reports.STUDIES, "effects", data),  # dose response
        (
            "transitions",
            "Transitions: which answers typos broke or fixed",
            transitions_section(data.robustness, default_model(data)),
        ),
        *sections_at(study_reports.STUDIES, "figures", data),  # ladder, perplexity
        (
            "words",
            "Which words hurt most: every row",
            words_section(data.words, languages=languages, top=options.top_words),
        ),
        (
            "kinds",
            "Typo kinds: operation type and script class",
            kinds_section(data.operations, data.scripts),
        ),
        (
            "typos",
            "The typos: model, counts and examples",
            typos_section(summaries=data.perturb_summaries, perturbed=data.edits),
        ),
        *sections_at(study_reports.STUDIES, "arms", data),  # defences, matched control, token split
        ("classification", "Confusion matrices", confusion_section(data)),
        ("parsing", "How the answers parsed", parse_section(data)),
        ("examples", "Examples", examples_section(data, options)),
        ("sycophancy", "How sycophantic is each model", sycophancy_section(data)),
        ("annotation", "Annotation agreement", annotation_section(data)),
        ("provenance", "What produced this report", provenance_section(data)),
    ]
    # a section without data (a feature that is off) is left out
    return h.page(options.title, subtitle, [(k, t, s) for k, t, s in sections if s is not None])


def build_figures(
    data: ReportData, options: ReportOptions | None = None, *, languages: Sequence[str]
) -> dict[str, str]:
    """The report's main figures as standalone SVG files (DVC image plots).

    Parameters
    ----------
    data, options:
        As for :func:`build_report`.
    languages:
        One ``words_<language>.svg`` per language, always written (a placeholder when there
        is no data) because dvc.yaml declares them.

    Returns
    -------
    dict
        ``{file name: SVG text}``.
    """
    options = options or ReportOptions()
    figures = {
        "accuracy.svg": headline_figure(data),
        "agreement.svg": agreement_figure(
            data.kappa_report, sample_batches=data_notes(data).get("sample_batches", False)
        ),
    }
    for lang in languages:
        svg = None
        if data.words is not None and "language" in data.words.columns:
            rows = data.words[data.words["language"].astype(str) == lang]
            if "scope" in rows.columns:
                rows = rows[rows["scope"] == "pooled"]
            if len(rows):
                parts = []
                for (model, source), group in rows.groupby(["model", "source"], sort=True):
                    top = most_harmful(group, top=options.top_words)
                    parts.append(
                        impact_forest(
                            top,
                            title=f"{lang} ({source}), {model}: most harmful words, pooled",
                        )
                    )
                svg = _stack(parts)
        figures[f"words_{lang}.svg"] = svg or empty_figure(
            f"{lang}: no per-word impact rows (data/impact/words.parquet)"
        )
    return figures


def _stack(svgs: Sequence[str]) -> str:
    """Several SVGs one below the other in one SVG document."""
    if len(svgs) == 1:
        return svgs[0]
    y = 0
    width = 0
    inner = []
    for svg in svgs:
        head = svg[: svg.index(">")]
        w = int(head.split('width="')[1].split('"')[0])
        hgt = int(head.split('height="')[1].split('"')[0])
        inner.append(svg.replace("<svg ", f'<svg y="{y}" ', 1))
        y += hgt + 10
        width = max(width, w)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}">' + "".join(inner) + "</svg>"
    )
