"""Ranking: filter by length, order by score with stable tie-breakers, keep the top N."""

from __future__ import annotations

import pandas as pd

from evalpipe.errors import InputError

WORD_COLUMNS = ["rank", "word", "lemma", "pos", "score", "freq_count", "cd_count", "source"]


def rank_words(candidates: pd.DataFrame, *, top_n: int, min_length: int) -> pd.DataFrame:
    """Rank candidate words by ``score`` (descending) and keep the first ``top_n``.

    Ties are broken by word, then part of speech, so the order never depends on input order.
    Words shorter than ``min_length`` characters are dropped before ranking.

    Parameters
    ----------
    candidates : DataFrame with columns ``word, lemma, pos, score, freq_count, cd_count, source``.
    top_n : how many words to keep (> 0).
    min_length : the shortest word kept, in characters.

    Returns
    -------
    DataFrame with the columns of ``WORD_COLUMNS``; ``rank`` starts at 1.

    Examples
    --------
    >>> df = pd.DataFrame({"word": ["b", "the", "and"], "lemma": None, "pos": None,
    ...                    "score": [9.0, 5.0, 5.0], "freq_count": None, "cd_count": None,
    ...                    "source": "demo"})
    >>> rank_words(df, top_n=2, min_length=2)["word"].tolist()
    ['and', 'the']
    """
    if top_n <= 0:
        raise InputError(f"words.top_n must be a positive integer, got {top_n}")
    if min_length < 1:
        raise InputError(f"words.<language>.min_length must be at least 1, got {min_length}")
    kept = candidates[candidates["word"].str.len() >= min_length].copy()
    kept["_pos_key"] = kept["pos"].fillna("")
    kept = kept.sort_values(
        ["score", "word", "_pos_key"], ascending=[False, True, True], kind="mergesort"
    )
    kept = kept.drop_duplicates(["word", "_pos_key"], keep="first").head(top_n)
    kept = kept.drop(columns="_pos_key").reset_index(drop=True)
    kept.insert(0, "rank", range(1, len(kept) + 1))
    out = kept[WORD_COLUMNS].copy()
    out["rank"] = out["rank"].astype("int64")
    out["score"] = out["score"].astype("float64")
    out["freq_count"] = out["freq_count"].astype("Int64")
    out["cd_count"] = out["cd_count"].astype("Int64")
    for col in ("word", "lemma", "pos", "source"):
        out[col] = out[col].astype("string")
    return out
