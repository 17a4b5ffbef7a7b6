"""The impact tables take the typo models' new operation kinds (transpose, conversion) as rows of
their own, with the script of the characters they touch."""

from __future__ import annotations

import pandas as pd

from evalpipe.scoring.word_impact import ImpactSettings
from tests.scoring_fixtures import impact_of

WORDS = pd.DataFrame({
    "rank": [1, 2], "word": ["以外", "かた"], "lemma": [None] * 2, "pos": [None] * 2,
    "score": [2.0, 1.0], "source": ["wordfreq"] * 2,
})  # fmt: skip
OPS = {
    "以外": {"op": "conversion", "original_char": "以外", "new_char": "意外", "rule": "homophone",
            "keys": None, "reading": "イガイ"},
    "かた": {"op": "transpose", "original_char": "かた", "new_char": "たか", "rule": "adjacent",
            "keys": None, "reading": None},
}  # fmt: skip


def test_transpositions_and_conversions_get_their_own_operation_and_script_rows():
    scored, perturbed = [], []
    for i in range(12):
        scored.append({"benchmark": "b", "example_id": str(i), "variant": "original",
                       "word_rank": 0, "correct": True, "model": "m", "parse_status": "strict",
                       "occurrences": 0, "perturbed_occurrences": 0})  # fmt: skip
        for rank, word in ((1, "以外"), (2, "かた")):
            scored.append({"benchmark": "b", "example_id": str(i), "variant": word,
                           "word_rank": rank, "correct": word == "かた" or i % 2 == 0,
                           "model": "m", "parse_status": "strict", "occurrences": 1,
                           "perturbed_occurrences": 1})  # fmt: skip
            perturbed.append({"benchmark": "b", "example_id": str(i), "word_rank": rank,
                              "perturbations": [OPS[word]]})  # fmt: skip
    _, operations, scripts = impact_of(
        {"b": pd.DataFrame(scored)},
        {"b": pd.DataFrame(perturbed)},
        {"japanese": WORDS},
        languages={"b": "japanese"},
        settings=ImpactSettings(level=0.95, small_n=0),
    )
    pooled = operations[operations["scope"] == "pooled"].set_index("op")
    assert set(pooled.index) == {"conversion", "transpose"}
    assert pooled.loc["conversion", "delta"] == -0.5 and pooled.loc["transpose", "delta"] == 0.0
    assert set(scripts[scripts["scope"] == "pooled"]["script"]) == {"kanji", "hiragana"}
