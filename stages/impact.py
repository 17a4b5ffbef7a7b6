"""Stage impact: per-word, per-operation and per-script typo impact of every model -> data/impact/,
plots/top_words_<language>.csv; and the model comparison table -> plots/models.csv."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from evalpipe import atomic
from evalpipe.arms import CONTROL, TYPO
from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES
from evalpipe.model_list import model_configs, model_labels
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.comparison import model_comparison
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.pairs_file import read_arm_pairs
from evalpipe.scoring.study import ImpactInputs
from evalpipe.scoring.word_impact import (
    IMPACT_PAIR_COLUMNS,
    ImpactSettings,
    impact_tables,
    select_pairs,
    top_words,
)
from evalpipe.studies.impact import STUDIES
from stages._common import fail_cleanly, params_option, root_option


def read_parquet(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Read ``columns`` of a Parquet file (all when None)."""
    if not path.exists():
        raise InputError(f"{path}: missing (run `dvc repro` for the stage that writes it)")
    try:
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


def check_languages(pairs: pd.DataFrame, *, path: Path) -> None:
    """Every pair names a known language (the word list its target word comes from)."""
    values = set(pairs["language"].dropna().astype(str).unique())
    unknown = sorted(values - set(LANGUAGES))
    if unknown or pairs["language"].isna().any():
        raise InputError(
            f"{path}: column 'language': expected one of {', '.join(LANGUAGES)} on every row, "
            f"got {unknown or 'null'}"
        )


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

    tables, counts = [], []
    details: dict[str, dict] = {}
    for slug in slugs:
        path = paths.pairs(slug)
        # the model column is the slug (below): not read
        columns = [*IMPACT_PAIR_COLUMNS, *(c for study in STUDIES for c in study.columns)]
        columns = [c for c in dict.fromkeys(columns) if c != "model"]
        # the plain typo'd arm and its matched control: a defence's arms have their own figures
        # (score@<model>)
        pairs = read_arm_pairs(path, columns, [TYPO, CONTROL])
        check_languages(pairs, path=path)
        # the slug names the model in every table, whatever the file holds
        tables.append(pairs.assign(model=slug))
        details[slug] = read_json(paths.scored_details("robustness", slug))
        # examples per view, also of views without a pair: the upstream impact's denominator
        counts += [(slug, view, int(stats["n_examples"])) for view, stats in details[slug].items()]
    pairs = pd.concat(tables, ignore_index=True)
    n_base = pd.DataFrame(counts, columns=["model", "view", "n_base"])
    languages = sorted(set(pairs["language"]))
    words = {language: read_parquet(paths.words(language)) for language in languages}
    chosen, bases = select_pairs(pairs, n_base)
    n_benchmarks = pairs["benchmark"].nunique()
    # What the studies read of the other pairs: the control arm's (one table of the pairs in
    # memory, not two).
    pairs = pairs.loc[(pairs["condition"] != TYPO).to_numpy()].reset_index(drop=True)
    word_table, operations, scripts = impact_tables(chosen, words, bases=bases, settings=settings)
    configs = model_configs(params, source=params_path)
    labels = {slug: model_labels(configs[slug]) for slug in slugs}
    inputs = ImpactInputs(paths, pairs, chosen, n_base, settings.level, slugs, labels)
    for study in STUDIES:  # e.g. the control arm's harm beyond a matched random word, per word
        word_table = study.words(inputs, word_table)
    atomic.write_parquet(paths.impact("words"), word_table)
    atomic.write_parquet(paths.impact("operations"), operations)
    atomic.write_parquet(paths.impact("scripts"), scripts)
    for study in STUDIES:  # dose response, token split, the ladder: groupings of the pairs
        study.write(inputs)
    # One CSV per known language, empty when none of its benchmarks ran: dvc.yaml declares each.
    for language in LANGUAGES:
        top = top_words(word_table, language=language, top_n=top_n, level=settings.level)
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
        f"{n_benchmarks} benchmarks, {word_table['variant'].nunique()} words, "
        f"{len(word_table)} word rows -> {paths.impact('words').parent}, plots/top_words_*.csv, "
        f"{paths.model_comparison} "
        f"(most harmful: {'; '.join(heads) or 'no word with n >= ' + str(settings.small_n)})"
    )


if __name__ == "__main__":
    main()
