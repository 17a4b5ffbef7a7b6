"""Perplexity requests: what the generate stage asks an engine to score when
``scoring.perplexity`` is on.

The text scored is the perturbable text of a row (the fields the perturb stage edits), in its
place in the prompt as rendered: for every occurrence of a perturbable field in the prompt, one
:class:`~evalpipe.inference.types.LoglikelihoodRequest` whose context is the prompt up to the
field and whose continuation is the field's text. So the original and the typo'd prompt are
scored on the same spans, each in its own context, by the same log-likelihood path (and cache)
as the choice scores of :mod:`evalpipe.inference.loglikelihood`.

- :func:`perturbable_spans` finds the spans: the prompt is rendered a second time with a marker
  in place of each perturbable field, and the markers' places are the fields' places (a template
  that changes a field's text, e.g. with a filter, gives no span: that row is not scored);
- :func:`perplexity_requests` turns the spans into requests;
- :func:`perplexity_columns` sums the scores per row into :data:`PPL_COLUMNS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from evalpipe.benchmarks.prompts import build_prompts
from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError
from evalpipe.inference.types import Loglikelihood, LoglikelihoodRequest

# Per-row columns of the outputs frame: the perturbable text's total log-probability (NaN when
# it was not scored) and its token count.
PPL_COLUMNS = ("ppl_logprob", "ppl_tokens")
_MARK = "\x00evalpipe-field-{}\x00"
_MARK_RE = re.compile("\x00evalpipe-field-(\\d+)\x00")


def _marked_fields(value: Any, perturbable: Sequence[str], where: str) -> tuple[str, list[str]]:
    """The row's fields JSON with each perturbable field's text replaced by a marker."""
    fields = json.loads(value) if isinstance(value, str) else dict(value)
    if not isinstance(fields, dict):
        raise InputError(f'{where}: column "fields": expected a JSON object of texts')
    names = [n for n in perturbable if n in fields]
    marked = {k: str(v) for k, v in fields.items()}
    for i, name in enumerate(names):
        marked[name] = _MARK.format(i)
    return json.dumps(marked, ensure_ascii=False, sort_keys=True), [str(fields[n]) for n in names]


def perturbable_spans(
    spec: BenchmarkSpec,
    rows: pd.DataFrame,
    prompts: Sequence[str],
    fewshot: pd.DataFrame | None,
    *,
    style: str,
    n_shots: int,
) -> list[list[tuple[int, int]] | None]:
    """Where each row's perturbable fields stand in its rendered prompt.

    Parameters
    ----------
    spec : the benchmark.
    rows : the perturbed set's rows (``fields``, ``perturbable`` or the spec's ``perturbable``).
    prompts : ``build_prompts(spec, rows, fewshot, style=, n_shots=)``, aligned with ``rows``.
    fewshot, style, n_shots : as given to ``build_prompts``.

    Returns
    -------
    list
        Per row, the ``(start, end)`` character spans of its perturbable text in the prompt, in
        order (a field the template shows twice gives two spans; an empty field none); None
        when the template changes a field's text on the way (no span can be trusted).

    Examples
    --------
    >>> from evalpipe.benchmarks import get_spec
    >>> row = pd.DataFrame([{"example_id": "g/0", "fields": '{"question": "1+1?"}',
    ...                      "choices": None, "subtask": None, "perturbable": ["question"]}])
    >>> spec = get_spec("gsm8k")
    >>> prompt = build_prompts(spec, row, None, style="zero_shot", n_shots=0)
    >>> [prompt[0][a:b] for a, b in perturbable_spans(spec, row, prompt, None,
    ...                                               style="zero_shot", n_shots=0)[0]]
    ['1+1?']
    """
    if len(prompts) != len(rows):
        raise InputError(f"{spec.name}: {len(prompts)} prompts for {len(rows)} rows")
    marked = rows.copy()
    texts: list[list[str]] = []
    values = []
    has_own = "perturbable" in rows.columns
    for i, rec in enumerate(rows.to_dict("records")):
        own = rec.get("perturbable") if has_own else None
        names = list(spec.perturbable) if own is None or len(own) == 0 else [str(n) for n in own]
        value, field_texts = _marked_fields(rec["fields"], names, f"{spec.name}, row {i + 1}")
        values.append(value)
        texts.append(field_texts)
    marked["fields"] = values
    rendered = build_prompts(spec, marked, fewshot, style=style, n_shots=n_shots)
    out: list[list[tuple[int, int]] | None] = []
    for prompt, template, field_texts in zip(prompts, rendered, texts, strict=True):
        spans: list[tuple[int, int]] = []
        pos = 0  # position in the real prompt
        rebuilt = []
        last = 0  # position in the marked prompt
        for match in _MARK_RE.finditer(template):
            literal = template[last : match.start()]
            rebuilt.append(literal)
            pos += len(literal)
            text = field_texts[int(match.group(1))]
            if text:
                spans.append((pos, pos + len(text)))
            rebuilt.append(text)
            pos += len(text)
            last = match.end()
        rebuilt.append(template[last:])
        out.append(spans if "".join(rebuilt) == prompt else None)
    return out


def perplexity_requests(
    prompts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]] | None]
) -> list[list[LoglikelihoodRequest]]:
    """One request per span: the prompt before it as context, the span's text as continuation.

    >>> [(r.context, r.continuation) for r in perplexity_requests(["Q: ab?\\nA:"], [[(3, 6)]])[0]]
    [('Q: ', 'ab?')]
    """
    out = []
    for prompt, row in zip(prompts, spans, strict=True):
        out.append(
            [LoglikelihoodRequest(prompt[:start], prompt[start:end]) for start, end in row or ()]
        )
    return out


def perplexity_columns(
    requests: Sequence[Sequence[LoglikelihoodRequest]], results: Sequence[Loglikelihood]
) -> pd.DataFrame:
    """The :data:`PPL_COLUMNS` of the outputs frame, one row per prompt.

    ``ppl_logprob`` is the sum of the row's span log-probabilities, NaN when the row has no
    span or one of its spans was not scored (too long for the context, or a server without
    prompt log-probabilities); ``ppl_tokens`` the spans' token count.

    >>> reqs = [[LoglikelihoodRequest("a", "b"), LoglikelihoodRequest("ab", "c")], []]
    >>> perplexity_columns(reqs, [Loglikelihood(-1.0, 1, True), Loglikelihood(-2.5, 2, False)])
       ppl_logprob  ppl_tokens
    0         -3.5           3
    1          NaN           0
    """
    total = sum(len(r) for r in requests)
    if total != len(results):
        raise InputError(f"{len(results)} perplexity results for {total} requests")
    logprobs, tokens = [], []
    offset = 0
    for row in requests:
        scores = results[offset : offset + len(row)]
        offset += len(row)
        values = [float(s.logprob) for s in scores]
        unscored = not values or any(math.isnan(v) for v in values)
        logprobs.append(math.nan if unscored else float(sum(values)))
        tokens.append(int(sum(int(s.n_tokens) for s in scores)))
    return pd.DataFrame(
        {"ppl_logprob": pd.Series(logprobs, dtype="float64"), "ppl_tokens": tokens},
        columns=list(PPL_COLUMNS),
    ).astype({"ppl_tokens": "int64"})
