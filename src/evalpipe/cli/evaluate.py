"""`evalpipe evaluate`: score predictions made elsewhere against a gold file.

    evalpipe evaluate --gold sample_dev.jsonl --pred predictions.jsonl --labels 3class
    evalpipe evaluate --gold imdb100_gold.jsonl --pred imdb100_predictions.jsonl \\
        --labels 2class --mode invalid-class --output report.json

Prints the report as JSON (accuracy, macro P/R/F1, per-class figures, confusion matrix, parse
status counts), then the first errors with their text. Details: docs/scoring.md.
"""

from __future__ import annotations

import json

import click

from evalpipe import atomic
from evalpipe.commands import fail_cleanly
from evalpipe.scoring.evaluate_files import (
    MODES,
    align,
    evaluate_predictions,
    label_set,
    read_gold,
    read_predictions,
)


@click.command()
@click.option(
    "--gold",
    "gold_path",
    required=True,
    type=click.Path(dir_okay=False),
    help='Gold JSONL: one {"text": ..., "label": ...} per line (an "id" is optional).',
)
@click.option(
    "--pred",
    "pred_path",
    required=True,
    type=click.Path(dir_okay=False),
    help='Predictions: the raw model text per line, as {"output": ...}, {"text": ...}, the '
    "model's JSON object, or plain text.",
)
@click.option(
    "--labels",
    "labels_spec",
    default="3class",
    show_default=True,
    help="2class (positive, negative), 3class (positive, neutral, negative) or a "
    "comma-separated label list.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="strict",
    show_default=True,
    help="strict: only a JSON label counts, anything else is wrong; invalid-class: a label word "
    "in prose is accepted and invalid answers get their own confusion-matrix column.",
)
@click.option("--errors", "n_errors", default=20, show_default=True, help="Errors to preview.")
@click.option(
    "--output",
    "output_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the full report (with the error preview) to this JSON file.",
)
@fail_cleanly
def main(
    gold_path: str,
    pred_path: str,
    labels_spec: str,
    mode: str,
    n_errors: int,
    output_path: str | None,
) -> None:
    """Score a predictions file against a gold file and print the report."""
    labels = label_set(labels_spec)
    gold = read_gold(gold_path, labels=labels)
    predictions = read_predictions(pred_path)
    pairs = align(gold, predictions, gold_path=gold_path, pred_path=pred_path)
    report = evaluate_predictions(pairs, labels=labels, mode=mode, n_errors=n_errors)
    errors = report.pop("errors")
    click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    click.echo(f"\n# Errors (first {min(n_errors, errors['count'])} of {errors['count']})\n")
    click.echo(json.dumps(errors["preview"], ensure_ascii=False, indent=2))
    if output_path:
        atomic.write_json(output_path, {**report, "errors": errors})
