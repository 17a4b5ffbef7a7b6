"""The words@{language} stages through `dvc repro` in a temporary Git + DVC repository."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.test_words import write_subtlex

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_dvc_repro_words_builds_both_languages_and_is_then_up_to_date(project):
    project.dvc("repro", "words@english", "words@japanese")
    english = pd.read_parquet(project.root / "data/words/english.parquet")
    japanese = pd.read_parquet(project.root / "data/words/japanese.parquet")
    assert len(english) == len(japanese) == 10
    assert english["rank"].tolist() == list(range(1, 11))
    first = (project.root / "data/words/english.parquet").read_bytes()

    again = project.dvc("repro", "words@english", "words@japanese")
    assert "didn't change" in again.stdout or "up to date" in again.stdout
    status = project.dvc("status", "words@english", "words@japanese")
    assert "up to date" in status.stdout

    # byte-identical when forced to run again
    project.dvc("repro", "--force", "words@english")
    assert (project.root / "data/words/english.parquet").read_bytes() == first


def test_switching_to_licensed_source_reruns_and_bad_file_leaves_no_output(project):
    project.dvc("repro", "words@english")
    write_subtlex(
        project.root / "data/raw/english/SUBTLEX-US.xlsx",
        [("hello", 100, 10), ("world", 50, 10), ("bad", "x", 1)],
    )
    params = project.root / "params.yaml"
    params.write_text(
        params.read_text().replace(
            "english:\n    source: wordfreq", "english:\n    source: subtlex"
        )
    )
    out = project.root / "data/words/english.parquet"
    failed = project.dvc("repro", "words@english", check=False)
    assert failed.returncode != 0
    assert "row 4, column 'FREQcount'" in failed.stderr + failed.stdout
    assert not out.exists()

    write_subtlex(
        project.root / "data/raw/english/SUBTLEX-US.xlsx", [("hello", 100, 10), ("world", 50, 10)]
    )
    project.dvc("repro", "words@english")
    assert pd.read_parquet(out)["word"].tolist() == ["hello", "world"]
