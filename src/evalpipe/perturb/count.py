"""The count design: exactly k distinct eligible words of each example edited, for each k of
``perturb.counts`` (docs/perturbation.md, "Designs").

Where the words design puts a typo into every occurrence of one target word, the count design
treats the typo as a dose: for each example it lists the *eligible words* of the perturbable
fields (a word token with a letter that no eligibility rule excludes and no protected span
covers: :mod:`evalpipe.perturb.eligibility`), orders them by a hashed-seed permutation and edits
the first k of that order, each with exactly one character operation.

Common random numbers make the doses nested. The order of a word is the hash of (seed,
benchmark, example, field, word position[, draw]) and its edit is drawn from the hash of the same
key, so the row of k=1 edits exactly one of the words of k=2's row, with the same characters, and
so on up the doses. An example with fewer than k editable words gets no k row (``shortfall`` in
the summary), never a padded one. Every row's edits are checked against the words they were
meant for (``targeting`` in the summary).

Rows are keyed ``variant = "k=<k>"`` (``evalpipe.arms.count_variant``) and ``word_rank = k`` (0 and ``"original"`` for the clean
row), so (example_id, variant, word_rank, draw) stays unique and ``n_typos = k``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalpipe.arms import count_variant
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of
from evalpipe.perturb import columns, human, ime
from evalpipe.perturb.benchmark_rows import (
    check_benchmark,
    protected_spans,
)
from evalpipe.perturb.columns import Edit, PerturbedColumns, PerturbedRow
from evalpipe.perturb.eligibility import Eligibility, OccurrenceRules
from evalpipe.perturb.english import TOKEN
from evalpipe.perturb.frame import PerturbResult
from evalpipe.perturb.loop import BenchmarkRows, Example, for_each_example, original_seed
from evalpipe.perturb.ops import Operation, Probabilities, decide, key_hasher
from evalpipe.perturb.parquet_sink import ParquetRowGroups
from evalpipe.perturb.summary import SummaryCounter
from evalpipe.perturb.typo_models import typo_model

DESIGNS = ("words", "count")
# order_by(example, draw, eligible words, hashed-seed order) -> the order the words are edited in
OrderBy = Callable[[Example, int, list["Word"], list[int]], list[int]]
MAX_ATTEMPTS = 8  # redraws of a word whose drawn operation had nothing to make
_ORDER_TAG = b"count-order"  # appended to a word's key: its place in the permutation
_EDIT_TAG = b"count-edit"  # appended to a word's key: its operation


def validate_counts(counts: Any, *, source: str = "params.yaml") -> tuple[int, ...]:
    """``perturb.counts`` as sorted distinct integers >= 1.

    Raises
    ------
    InputError naming the file and key for an empty list or a value that is not an integer >= 1.

    Examples
    --------
    >>> validate_counts([4, 1, 2, 2])
    (1, 2, 4)
    """
    if isinstance(counts, str) or not isinstance(counts, Sequence) or not counts:
        raise InputError(
            f"{source}: perturb.counts must be a non-empty list of integers >= 1 (the numbers of "
            f"edited words per example), found {counts!r}"
        )
    for value in counts:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                f"{source}: perturb.counts must hold integers >= 1, found {value!r} in {counts!r}"
            )
    return tuple(sorted(set(counts)))


def validate_design(design: Any, *, source: str = "params.yaml") -> str:
    """``perturb.design``: one of ``DESIGNS``."""
    if design not in DESIGNS:
        raise InputError(
            f"{source}: perturb.design must be one of {', '.join(DESIGNS)}, found {design!r}"
        )
    return str(design)


@dataclass(frozen=True)
class Word:
    """An eligible word of one example: its field, its position among the field's word tokens
    and its code-point span."""

    field: str
    position: int
    start: int
    end: int


def word_tokens(text: str, language: str, reader: Any = None) -> list[tuple[int, int]]:
    """The word tokens of ``text`` with a letter, as ``(start, end)``: English regex tokens
    (:data:`evalpipe.perturb.english.TOKEN`), Japanese UniDic short units (``reader`` an
    ``ime.JapaneseContext``).

    >>> word_tokens("It costs $3, twice.", "english")
    [(0, 2), (3, 8), (13, 18)]
    """
    if language == "japanese":
        spans = [(t[0], t[1]) for t in reader.tokens(text)]
    else:
        spans = [m.span() for m in TOKEN.finditer(text)]
    return [(s, e) for s, e in spans if any(ch.isalpha() for ch in text[s:e])]


def forced_digest(digest: bytes, probabilities: Probabilities) -> bytes:
    """The digest with its operation draw (bytes 0-7) moved into the typo intervals, in proportion
    to their widths, so that :func:`evalpipe.perturb.ops.decide` always picks an operation with
    the model's mix (the sum of the probabilities is the words design's rate, not used here).

    >>> p = Probabilities(0.1, 0.0, 0.1)
    >>> d = forced_digest(bytes(32), p)
    >>> decide("cat", d, p) is not None
    True
    """
    intervals = probabilities.intervals
    total = sum(b - a for a, b, _ in intervals)
    if total <= 0:
        raise InputError(
            "perturb: the count design needs at least one operation with a positive probability "
            "(perturb.replace_prob, insert_prob, delete_prob, transpose_prob, conversion_prob)"
        )
    v = int.from_bytes(digest[:8], "big") % total
    for a, b, _ in intervals:
        if v < b - a:
            return (a + v).to_bytes(8, "big") + digest[8:]
        v -= b - a
    raise AssertionError("unreachable")  # pragma: no cover


def _apply(text: str, edits: Sequence[Edit]) -> str:
    pieces, cursor = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        pieces += [text[cursor : e.start], e.operation.perturbed]
        cursor = e.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def edits_on_target(original: str, perturbed: str, edits: Sequence[Edit]) -> int:
    """How many of one field's ``edits`` lie inside the word they were meant for.

    An edit counts when the word it names is the text at its span (``original[start:end]``), its
    operation's position lies inside that word, its new text differs from the word, the
    perturbed text holds that new text where the word was, and putting every word back gives
    the original text exactly (nothing outside the target words changed). The last check is the
    row's: when it fails, no edit of the field counts.

    >>> from evalpipe.perturb.ops import Operation
    >>> op = Operation("delete", 1, "a", None, "ct")
    >>> edits_on_target("a cat", "a ct", [Edit("q", 1, 2, 5, "cat", op)])
    1
    >>> edits_on_target("a cat", "a tc", [Edit("q", 1, 2, 5, "cat", op)])
    0
    """
    ordered = sorted(edits, key=lambda e: e.start)
    restored, cursor, shift, good = [], 0, 0, 0
    for e in ordered:
        new = e.operation.perturbed
        at = e.start + shift
        restored += [perturbed[cursor:at], e.original]
        cursor = at + len(new)
        shift += len(new) - (e.end - e.start)
        word = original[e.start : e.end]
        good += (
            word == e.original
            and 0 <= e.operation.position <= len(word)
            and new != word
            and perturbed[at : at + len(new)] == new
        )
    restored.append(perturbed[cursor:])
    return good if "".join(restored) == original else 0


def _dumps(value: Any) -> str:
    """The contract's JSON form of a fields object (sorted keys, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _draw_parts(hasher: Any, d: int) -> Any:
    if d:
        hasher = hasher.copy()
        hasher.update(d.to_bytes(4, "big"))
    return hasher


def perturb_count_frame(
    benchmark: pd.DataFrame,
    *,
    probabilities: Probabilities,
    seed: int,
    counts: Sequence[int] = tuple(default_of("perturb.counts")),
    draws: int = default_of("perturb.draws"),
    eligibility: Eligibility | None = None,
    source: str = "benchmark",
    homophones: Any = None,
    progress: bool = False,
    order_by: OrderBy | None = None,
    all_edits: dict[tuple[str, str, int], list[Edit]] | None = None,
    sink: ParquetRowGroups | None = None,
) -> PerturbResult:
    """Edit exactly k distinct eligible words of every example, for each k in ``counts``.

    Parameters
    ----------
    benchmark : benchmark rows, as for :func:`evalpipe.perturb.frame.perturb_frame`.
    probabilities : the typo model; its mix (relative probabilities) picks each word's one
        operation, which always fires.
    seed : the global seed.
    counts : the doses k (``validate_counts``).
    draws : independent draws per example: draw d > 0 adds d to the order's and the edits' keys.
    eligibility : the rules in force (``eligibility.from_params`` with ``design: count``); None:
        every word token with a letter.
    source : the benchmark's file name for error messages.
    homophones : as for ``perturb_frame`` (Japanese conversions).
    progress : show a tqdm bar.
    order_by : ``order_by(example, draw, words, order) -> order``: the order in which the words
        are edited, given the hashed-seed one (:mod:`evalpipe.perturb.targeting` puts a model's
        most important words first); None: the hashed-seed order.
    all_edits : filled, when given, with every editable word's edit of each example and draw
        (``(benchmark, example_id, draw) -> [Edit, ...]`` in the order), not only the first
        ``max(counts)``'s; the rows and the summary do not change.
    sink : write the rows there row group by row group as they are made
        (``parquet_sink.parquet_row_groups``: the bytes of ``atomic.write_parquet`` of the
        table) instead of returning them; the result's ``table`` is then None.

    Returns
    -------
    PerturbResult: (``table`` None with a ``sink``) the original row of each example, then its rows ``variant "k=<k>"``,
    ``word_rank`` k for each dose with enough editable words (draw by draw); ``occurrences`` is
    the example's number of eligible words, ``perturbed_occurrences`` and ``n_typos`` are k. The
    summary has the words design's keys that still mean something plus ``design``, ``counts``,
    ``eligible_words``, ``rows_by_k``, ``shortfall`` (examples x draws with fewer than k editable
    words, per k), ``uneditable_words`` and ``targeting``.

    Examples
    --------
    >>> bench = pd.DataFrame({"benchmark": ["demo"], "example_id": ["1"], "subtask": [None],
    ...     "language": ["english"], "task_type": ["open"], "fields": ['{"q": "The black cat sat"}'],
    ...     "perturbable": [["q"]], "choices": [None], "answer": ["x"], "answers": [["x"]],
    ...     "labels": [None]})
    >>> res = perturb_count_frame(bench, probabilities=Probabilities(0.2, 0.2, 0.2), seed=1,
    ...     counts=[1, 2, 8], eligibility=Eligibility(min_letters=3))
    >>> res.table.column("variant").to_pylist(), res.summary["shortfall"]
    (['original', 'k=1', 'k=2'], {'1': 0, '2': 0, '8': 1})
    """
    language = check_benchmark(benchmark, source=source)
    counts = validate_counts(list(counts), source=source)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(f"perturb.draws must be an integer >= 1, found {draws!r}")
    homophones, reader = human.prepare(
        language,
        typo_model(probabilities.model).reads_context,
        probabilities.conversion,
        homophones,
    )
    if language == "japanese" and reader is None:
        reader = ime.JapaneseContext()  # the tokens and their POS, whatever the model
    rules = OccurrenceRules(eligibility, benchmark, language, reader)
    decide_ = functools.partial(decide, homophones=homophones)
    benchmark_rows = BenchmarkRows(benchmark, source=source)
    names, ids = benchmark_rows.names, benchmark_rows.ids
    rows = PerturbedColumns(sink=sink, benchmark=benchmark)
    counter = SummaryCounter(keyboard=not typo_model(probabilities.model).plain)
    # as in the words design: the edits a conversion could have made, its rate among them
    counter.counts_conversions = probabilities.conversion > 0 and homophones is not None
    top = counts[-1]
    shortfall = dict.fromkeys(counts, 0)
    made = dict.fromkeys(counts, 0)
    eligible_total = uneditable = edits_total = inside = 0

    def example(ex: Example) -> None:
        nonlocal eligible_total, uneditable, edits_total, inside
        r, fields, perturbable, protected = ex.r, ex.fields, ex.perturbable, ex.protected
        rules.row(r)
        words: list[Word] = []
        for name in perturbable:
            text = fields[name]
            shielded = protected_spans(text, protected) if protected else ()
            rules.field(text)
            for position, (start, end) in enumerate(word_tokens(text, language, reader)):
                if shielded and any(ps < end and start < pe for ps, pe in shielded):
                    counter.protected_occurrences += 1
                    continue
                if rules.active and rules.excluded(start, end):
                    continue
                words.append(Word(name, position, start, end))
        eligible_total += len(words)
        seed_of_original = original_seed("count", seed, ex.benchmark, ex.example_id)
        rows.add(PerturbedRow(r, "original", 0, 0, seed_of_original, ex.original_fields(), 0, ()))
        keys = [key_hasher(seed, names[r], ids[r], w.field, w.position) for w in words]
        for d in range(draws):
            order = sorted(
                range(len(words)),
                key=lambda i: _draw_parts(_order_hasher(keys[i]), d).digest(),
            )
            if order_by is not None:
                order = order_by(ex, d, words, order)
            chosen: list[Edit] = []
            for i in order:
                if len(chosen) == top and all_edits is None:
                    break
                w = words[i]
                op = _edit(w, fields[w.field], _draw_parts(keys[i], d), probabilities, decide_,
                           reader)  # fmt: skip
                if op is None:
                    uneditable += len(chosen) < top
                    continue
                chosen.append(
                    Edit(w.field, w.position, w.start, w.end, fields[w.field][w.start : w.end], op)
                )
            if all_edits is not None:
                all_edits[(names[r], ids[r], d)] = chosen
                chosen = chosen[:top]
            counter.count_operations([e.operation for e in chosen])
            for e in chosen:  # the kind drawn (before a redraw to one that could apply)
                counter.drawn[e.operation.drawn or e.operation.op] += 1
            if counter.counts_conversions:
                counter.conversion_eligible += human.convertible_edits(
                    chosen, fields, homophones, reader
                )
            for k in counts:
                if len(chosen) < k:
                    shortfall[k] += 1
                    continue
                edits = chosen[:k]
                changed = {}
                for name in dict.fromkeys(e.field for e in edits):
                    mine = [e for e in edits if e.field == name]
                    changed[name] = _apply(fields[name], mine)
                    inside += edits_on_target(fields[name], changed[name], mine)
                edits_total += k
                made[k] += 1
                variant = count_variant(k)
                row_key = _draw_parts(key_hasher(seed, names[r], ids[r], variant), d)
                in_order = sorted(edits, key=lambda e: (perturbable.index(e.field), e.start))
                rows.add(
                    PerturbedRow(
                        r,
                        variant,
                        k,
                        d,
                        int.from_bytes(row_key.digest()[:8], "big") >> 1,
                        _dumps({**fields, **changed}),
                        len(words),
                        in_order,
                    )
                )
        if rows.pending >= columns.FLUSH_ROWS:
            rows.flush()

    desc = f"perturb {names[0]} (count)"
    for_each_example(benchmark_rows, example, desc=desc, progress=progress)
    table, n_rows = rows.finish(benchmark)
    base = counter.summary(
        benchmark=names[0],
        language=language,
        examples=len(benchmark),
        targets=[],
        draws=draws,
        rows=n_rows,
        probabilities=probabilities,
        seed=seed,
    )
    for gone in ("target_words", "target_words_found", "targets_not_found",
                 "targets_not_found_top", "occurrences", "perturbed_fraction"):  # fmt: skip
        base.pop(gone)
    rules_in_force = eligibility or Eligibility()
    base.update(
        {
            "design": "count",
            "counts": list(counts),
            "eligible_words": eligible_total,
            "rows_by_k": {str(k): made[k] for k in counts},
            # examples (x draws) with fewer than k editable words: no row, never padded
            "shortfall": {str(k): shortfall[k] for k in counts},
            "uneditable_words": uneditable,
            "targeting": {
                "edits": edits_total,
                "inside_target": inside,
                "share": round(inside / edits_total, 6) if edits_total else None,
            },
            "redrawn": dict(sorted(counter.redrawn.items())),
            "eligibility": {
                "exclude": sorted(rules_in_force.exclude),
                "min_letters": rules_in_force.min_letters,
                "excluded": dict(sorted(rules.counts.items())),
            },
        }
    )
    return PerturbResult(table, base)


def _order_hasher(key: Any) -> Any:
    h = key.copy()
    h.update(_ORDER_TAG)
    return h


def _edit(
    word: Word,
    text: str,
    key: Any,
    probabilities: Probabilities,
    decide_: Any,
    reader: Any,
) -> Operation | None:
    """The one operation of an edited word: drawn from the hash of its key (and ``attempt`` for
    a redraw when the drawn kind had nothing to make), forced to fire."""
    surface = text[word.start : word.end]
    context = reader.occurrence(text, word.start, word.end) if reader is not None else None
    for attempt in range(MAX_ATTEMPTS):
        h = key.copy()
        h.update(_EDIT_TAG)
        if attempt:
            h.update(attempt.to_bytes(4, "big"))
        op = decide_(surface, forced_digest(h.digest(), probabilities), probabilities,
                     context=context)  # fmt: skip
        if isinstance(op, Operation) and op.perturbed != surface:
            return op
    return None
