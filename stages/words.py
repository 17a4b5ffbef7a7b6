"""Stage words@{language}: rank the language's most frequent words -> data/words/{language}.parquet."""

from __future__ import annotations

import click

from evalpipe import atomic
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.words import LANGUAGES, build_word_list
from stages._common import fail_cleanly, params_option

# as in params.yaml: English drops one-letter entries (a, I, s, t); Japanese keeps the
# one-character particles (の, に, は) that the study ranks first


@click.command()
@click.option("--language", type=click.Choice(LANGUAGES), required=True, help="Which word list.")
@params_option
@fail_cleanly
def main(language: str, params_path: str) -> None:
    """Rank the most frequent words of LANGUAGE from the source chosen in params.yaml."""
    params = load_params(params_path)
    cfg = section(params, "words", path=params_path)
    lang_cfg = section(params, "words", language, path=params_path)
    source = section(params, "words", language, "source", path=params_path)
    paths = ProjectPaths()
    built = build_word_list(
        language,
        source,
        raw_dir=paths.raw_words(language),
        top_n=int(cfg["top_n"]),
        min_length=int(lang_cfg["min_length"]),
    )
    words = built.words
    atomic.write_parquet(paths.words(language), words)
    head = ", ".join(words["word"].head(5).tolist())
    skipped = built.summary()
    click.echo(
        f"words@{language}: {len(words)} words from {source} -> {paths.words(language)} "
        f"(top: {head})" + (f"; {skipped}" if skipped else "")
    )


if __name__ == "__main__":
    main()
