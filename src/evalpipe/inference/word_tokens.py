"""How each typo re-tokenises its word: tokens of the edited word before and after the edit,
under the model's own tokenizer.

The word is tokenised as the model meets it after the character before it: with one leading
space when the text has whitespace before the occurrence (``" word"``, so byte-level BPE reads
``Ġword`` as in running text; SentencePiece adds its own word-boundary mark), bare otherwise
(Japanese, a word after punctuation). Tokens a word shares with its neighbours (a merge across
the boundary) are not attributed; the count is the word's own. The original row's field text
gives the character before each occurrence (the perturbation records index it).

Where the tokenizer comes from (each backend's ``word_counter``,
:func:`evalpipe.inference.backends.word_token_counter`):

- ``vllm`` backend: the Hugging Face tokenizer of the model vLLM loads (tiny-random's is built
  locally; a hub model's must be in the local Hugging Face cache);
- ``openai`` backend: the local model folder's tokenizer when ``name`` is one (or tiny-random),
  else the server's ``/tokenize`` (vLLM's server has it);
- otherwise no counts: the columns are null and ``generation.json`` counts the edits left
  uncounted per reason (``tokenizer_unavailable``, ``tokenize_unavailable``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

EDIT_TOKEN_TYPES = {
    "edit_tokens_before": pa.list_(pa.int32()),
    "edit_tokens_after": pa.list_(pa.int32()),
    "tokens_before": pa.int32(),
    "tokens_after": pa.int32(),
}
"""The outputs' token columns: per perturbation record (in record order) and their row sums."""


class WordTokenCounter:
    """Counts tokens of short texts with one tokenizer (each text once), or says why it cannot.

    Parameters
    ----------
    encode : texts -> their token counts; None when no tokenizer is at hand.
    source : ``local`` (a Hugging Face tokenizer) or ``server`` (``/tokenize``); None without.
    reason : why there is no tokenizer (None when there is one).
    """

    def __init__(
        self,
        encode: Callable[[list[str]], list[int]] | None,
        *,
        source: str | None,
        reason: str | None = None,
    ) -> None:
        self.encode = encode
        self.source = source
        self.reason = reason
        self._memo: dict[str, int] = {}

    def counts(self, texts: Sequence[str]) -> list[int | None]:
        """Token counts of ``texts`` (None for every text without a tokenizer)."""
        if self.encode is None:
            return [None] * len(texts)
        todo = sorted({t for t in texts if t not in self._memo})
        if todo:
            try:
                got = self.encode(todo)
            except Exception:  # a server without /tokenize, a tokenizer that fails: no counts
                self.encode, self.reason = None, "tokenize_unavailable"
                return [None] * len(texts)
            self._memo.update(zip(todo, got, strict=True))
        return [self._memo[t] for t in texts]


def hf_counter(path_or_name: str, *, revision: str | None = None) -> WordTokenCounter:
    """A counter over a Hugging Face tokenizer (a local folder or a cached hub model)."""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(path_or_name, revision=revision)
    except Exception:  # offline without the files, or no tokenizer in the folder
        return WordTokenCounter(None, source=None, reason="tokenizer_unavailable")

    def encode(texts: list[str]) -> list[int]:
        ids = tok(texts, add_special_tokens=False)["input_ids"]
        return [len(i) for i in ids]

    return WordTokenCounter(encode, source="local")


def server_counter(base_url: str, model: str, *, timeout_s: float = 30.0) -> WordTokenCounter:
    """A counter over an OpenAI-compatible server's ``/tokenize`` (at the root, beside ``/v1``)."""
    import httpx

    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    api_key = os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def encode(texts: list[str]) -> list[int]:
        out = []
        with httpx.Client(timeout=timeout_s, headers=headers) as client:
            for text in texts:
                body = {"model": model, "prompt": text, "add_special_tokens": False}
                resp = client.post(f"{root}/tokenize", json=body)
                resp.raise_for_status()
                data = resp.json()
                out.append(int(data["count"]) if "count" in data else len(data["tokens"]))
        return out

    return WordTokenCounter(encode, source="server")


def in_context(text: str, start: int, word: str) -> str:
    """The word as the tokenizer meets it: one leading space when whitespace precedes it.

    >>> in_context("a cat", 2, "cat"), in_context("(cat", 1, "cat"), in_context("猫が", 0, "猫")
    (' cat', 'cat', '猫')
    """
    return " " + word if start > 0 and text[start - 1].isspace() else word


def _records(value: Any) -> list[dict[str, Any]]:
    if value is None or (isinstance(value, float) and value != value):
        return []
    return list(value)


def edit_token_columns(
    rows: pd.DataFrame, counter: WordTokenCounter
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The token columns of the outputs (:data:`EDIT_TOKEN_TYPES`) and their counts.

    Parameters
    ----------
    rows : the perturbed rows of one benchmark (``example_id, variant, fields, perturbations``);
        each example's ``original`` row gives the text the records index.
    counter : the model's :class:`WordTokenCounter`.

    Returns
    -------
    (columns, counts)
        Per row: ``edit_tokens_before`` / ``edit_tokens_after`` (one count per perturbation
        record; empty for a row without edits; null without a tokenizer) and their sums
        ``tokens_before`` / ``tokens_after`` (0 for a row without edits, null without a
        tokenizer); counts: ``edits``, ``counted``, ``not_counted`` (reason -> edits).
    """
    originals: dict[str, dict[str, Any]] = {}
    for example, variant, fields in zip(
        rows["example_id"].astype(str), rows["variant"], rows["fields"], strict=True
    ):
        if variant == "original" and example not in originals:
            originals[example] = json.loads(fields) if isinstance(fields, str) else dict(fields)
    wanted: list[tuple[int, str, str]] = []  # (row, before text, after text)
    per_row: list[list[dict[str, Any]]] = []
    for i, (example, value) in enumerate(
        zip(rows["example_id"].astype(str), rows["perturbations"], strict=True)
    ):
        records = _records(value)
        per_row.append(records)
        text_of = originals.get(example, {})
        for rec in records:
            text = text_of.get(rec["field"])
            start = int(rec["start"])
            prev = text if isinstance(text, str) else ""
            text_before = in_context(prev, start, str(rec["original"]))
            text_after = in_context(prev, start, str(rec["perturbed"] or ""))
            wanted.append((i, text_before, text_after))
    texts = [t for _, b, a in wanted for t in (b, a)]
    counted = counter.counts(texts)
    before: list[list[int | None]] = [[] for _ in per_row]
    after: list[list[int | None]] = [[] for _ in per_row]
    for k, (i, _, a) in enumerate(wanted):
        before[i].append(counted[2 * k])
        # a deletion of the whole word leaves nothing: zero tokens
        after[i].append(counted[2 * k + 1] if a.strip() else 0)
    have = counter.encode is not None
    columns: dict[str, list[Any]] = {
        "edit_tokens_before": [b if have else None for b in before],
        "edit_tokens_after": [a if have else None for a in after],
        "tokens_before": [sum(b) if have else None for b in before],
        "tokens_after": [sum(a) if have else None for a in after],
    }
    reasons: Counter[str] = Counter()
    if not have and wanted:
        reasons[counter.reason or "tokenizer_unavailable"] = len(wanted)
    counts = {
        "edits": len(wanted),
        "counted": len(wanted) if have else 0,
        "not_counted": dict(sorted(reasons.items())),
        "tokenizer": counter.source,
    }
    return columns, counts


# What each reason for missing counts means to the user.
_UNCOUNTED_WHY = {
    "tokenizer_unavailable": "no tokenizer for the model here (a hub model not in the local "
    "Hugging Face cache, or a served model whose name is no local folder)",
    "tokenize_unavailable": "the tokenizer failed (e.g. a server without /tokenize)",
}


def uncounted_message(name: str, counts: dict[str, Any]) -> str | None:
    """One line saying how many edited words of a benchmark got no token counts and why (None
    when every edit was counted), so the empty token-split table does not go unexplained.

    >>> uncounted_message("jnli", {"edits": 36, "counted": 0,
    ...                            "not_counted": {"tokenize_unavailable": 36}})
    'jnli: 36 of 36 edited words have no token counts: the tokenizer failed (e.g. a server without /tokenize); the token-split figures leave them out'
    """
    missing = counts.get("not_counted") or {}
    if not missing:
        return None
    why = "; ".join(_UNCOUNTED_WHY.get(reason, reason) for reason in sorted(missing))
    return (
        f"{name}: {sum(missing.values())} of {counts.get('edits', 0)} edited words have no "
        f"token counts: {why}; the token-split figures leave them out"
    )


def token_arrays(columns: dict[str, list[Any]]) -> dict[str, pa.Array]:
    """:func:`edit_token_columns` as Arrow arrays of :data:`EDIT_TOKEN_TYPES`."""
    return {
        name: pa.array(columns[name], kind, from_pandas=True)
        for name, kind in EDIT_TOKEN_TYPES.items()
    }
