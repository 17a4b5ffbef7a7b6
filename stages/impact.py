"""Stage impact: per-word, per-operation and per-script typo impact of every model -> data/impact/,
plots/top_words_<language>.csv; and the model comparison table -> plots/models.csv."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.comparison import model_comparison
from evalpipe.scoring.views import parse_view, primary_views
from evalpipe.scoring.word_impact import POOLED, ImpactSettings, build_impact, top_words
from stages._common import fail_cleanly, params_option, root_option

# `draw` (optional) tells the typo draws of one (example, word) apart.
PERTURBED_COLUMNS = ["benchmark", "example_id", "word_rank", "draw", "language", "perturbations"]
# What the impact tables use of a scored file (prompts and outputs are most of its bytes).
SCORED_COLUMNS = ["benchmark", "example_id", "variant", "word_rank", "draw", "correct", "model",
                  "occurrences", "perturbed_occurrences", "parse_status"]  # fmt: skip


def read_parquet(
    path: Path, columns: list[str] | None = None, *, optional: bool = False
) -> pd.DataFrame:
    """Read ``columns`` of a Parquet file; with ``optional``, only those it has (the library
    names any required one that is missing)."""
    if not path.exists():
        raise InputError(f"{path}: missing (run `dvc repro` for the stage that writes it)")
    try:
        if optional and columns is not None:
            present = set(pq.read_schema(path).names)
            columns = [c for c in columns if c in present]
        return pd.read_parquet(path, columns=columns)
    except Exception as exc:  # pyarrow raises several types for a damaged file or a missing column
        raise InputError(f"{path}: cannot read Parquet columns {columns or 'all'}: {exc}") from exc


def read_json(path: Path) -> dict:
    if not path.exists():
        raise InputError(f"{path}: missing (run `dvc repro` for the score stage that writes it)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc


def language_of(perturbed: pd.DataFrame, *, path: Path) -> str:
    values = sorted(set(perturbed["language"].dropna().astype(str)))
    if len(values) != 1 or values[0] not in LANGUAGES:
        raise InputError(
            f"{path}: column 'language': expected one of {', '.join(LANGUAGES)} on every row, "
            f"got {values or 'nothing'}"
        )
    return values[0]


@click.command()
@params_option
@root_option("Project root holding data/ and plots/.")
@fail_cleanly
def main(params_path: str, root: str) -> None:
    """Rank target words (and typo kinds) by how much accuracy their typos cost."""
    params = load_params(params_path)
    settings = ImpactSettings(
        level=float(section(params, "scoring", "confidence_level")),
        small_n=int(section(params, "impact", "small_n")),
    )
    top_n = int(section(params, "impact", "top_n_plot"))
    paths = ProjectPaths(Path(root))
    slugs = list(model_configs(params, source=params_path))

    parts: dict[str, list[pd.DataFrame]] = {}
    details: dict[str, dict] = {}
    for slug in slugs:
        scored_dir = paths.scored_dir(slug)
        # one view per benchmark: generated answers, else log-likelihood ones
        found = {p.stem: p for p in scored_dir.glob("*.parquet")}
        views = [found[v] for _, v in sorted(primary_views(found).items())]
        if not views:
            raise InputError(f"{scored_dir}: no scored rows (run `dvc repro score@{slug}`)")
        for path in views:
            benchmark = parse_view(path.stem)[0]
            frame = read_parquet(path, SCORED_COLUMNS, optional=True)
            # the slug names the model in every table, whatever the file holds
            parts.setdefault(benchmark, []).append(frame.assign(model=slug))
        details[slug] = read_json(paths.scored_details("robustness", slug))
    scored, perturbed, languages = {}, {}, {}
    for name in sorted(parts):
        scored[name] = pd.concat(parts[name], ignore_index=True)
        pert_path = paths.perturbed(name)
        perturbed[name] = read_parquet(pert_path, PERTURBED_COLUMNS, optional=True)
        languages[name] = language_of(perturbed[name], path=pert_path)
    words = {
        language: read_parquet(paths.words(language))
        for language in sorted(set(languages.values()))
    }
    word_table, operations, scripts = build_impact(
        scored, perturbed, words, languages=languages, settings=settings
    )
    atomic.write_parquet(paths.impact("words"), word_table)
    atomic.write_parquet(paths.impact("operations"), operations)
    atomic.write_parquet(paths.impact("scripts"), scripts)
    # One CSV per known language, empty when none of its benchmarks ran: dvc.yaml declares each.
    for language in LANGUAGES:
        top = top_words(word_table, language=language, top_n=top_n)
        atomic.write_csv(paths.top_words_plot(language), top)
    comparison = model_comparison(details)
    atomic.write_csv(paths.model_comparison, comparison)

    pooled = word_table.loc[(word_table["scope"] == POOLED) & ~word_table["small_n"]]
    heads = []
    for language, rows in pooled.groupby("language", sort=True):
        first = rows.iloc[0]
        heads.append(f"{language} '{first['variant']}' {first['delta']:+.3f}")
    click.echo(
        f"impact: {len(slugs)} model(s), "
        f"{len(scored)} benchmarks, {word_table['variant'].nunique()} words, "
        f"{len(word_table)} word rows -> {paths.impact('words').parent}, plots/top_words_*.csv, "
        f"{paths.model_comparison} "
        f"(most harmful: {'; '.join(heads) or 'no word with n >= ' + str(settings.small_n)})"
    )


if __name__ == "__main__":
    main()
