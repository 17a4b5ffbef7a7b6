"""The matched control of the words design: the same typos on random words of the same example.

For every typo'd row of the words design (an example, a target word, a draw), the control row
applies the same typo model to as many occurrences of *other* words of the same example as the
target got edits, each edit made for sure (the operation drawn from the model's mix, conditional
on a typo). The words are matched to the target (docs/perturbation.md, "Matched control"):

- **class**: content vs function word. English: :data:`FUNCTION_WORDS_EN` (closed-class words:
  articles, pronouns, prepositions, conjunctions, auxiliaries, particles); Japanese: UniDic's
  content morphemes (``eligibility.is_content_morpheme``: nouns, verbs, adjectives, adverbs,
  adnominals, interjections) against the rest (particles, auxiliaries, affixes).
- **frequency band**: the Zipf value of wordfreq (``log10`` of the frequency per billion
  words) cut into whole-number bands, 0 for a word wordfreq does not list; a candidate must lie
  in the target's band or the next one.
- **subword split**: perturb runs once for every model, so it cannot ask the model's tokenizer.
  Its model-independent proxy is the word's script signature (the runs of script classes, e.g.
  ``latin`` or ``kanji+hiragana``), which must be equal; length and frequency band, matched too,
  carry the rest (frequent short words are one token in every BPE vocabulary, rare long ones
  split). The generate stage counts each edited word's tokens under the model's own tokenizer
  for both arms (``tokens_before``), so the split match is measured afterwards.
- **length**: the same number of characters, or the nearest.

Candidates are the example's word tokens (English: ``english.TOKEN``; Japanese: UniDic tokens) in
its perturbable fields with at least one letter, outside protected spans, that the eligibility
rules in force (``perturb.exclude``, ``perturb.min_letters``) allow and that are no occurrence of
the target word. Word types are ordered by (band distance, length distance), ties broken by a
hashed key; occurrences of a type in hashed order; the control takes occurrences from the best
type onwards until it holds as many edits as the target row. A target without a candidate, or
with fewer candidate occurrences than its edits, gets no control row: it is counted in the
summary (``control.unmatched``), never dropped silently.

Control rows are keyed like their target's typo row (``variant`` the target word, ``word_rank``
its rank, the same ``draw``) with ``condition`` "control", so each pairs with its typo row by key;
each example with a control row also gets an ``original`` row of condition "control" (the clean
prompt, answered once thanks to the generation cache). ``control_match`` says how the words were
matched: ``exact``, or the criteria that were relaxed (``band``, ``length``).
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalpipe.arms import CONTROL
from evalpipe.perturb import columns, human
from evalpipe.perturb.benchmark_rows import (
    protected_spans,
)
from evalpipe.perturb.columns import Edit, PerturbedColumns, PerturbedRow
from evalpipe.perturb.eligibility import Eligibility, RowContext, is_content_morpheme
from evalpipe.perturb.english import TOKEN, normalise_target
from evalpipe.perturb.frame import perturb_frame
from evalpipe.perturb.japanese import Tokenizer
from evalpipe.perturb.loop import BenchmarkRows, original_seed
from evalpipe.perturb.ops import Operation, Probabilities, decide, key_hasher, key_part
from evalpipe.perturb.parquet_sink import ParquetRowGroups
from evalpipe.perturb.scripts import char_class
from evalpipe.perturb.targets import make_finder, read_targets
from evalpipe.perturb.typo_models import typo_model
from evalpipe.seeding import hashed_seed

MAX_BAND_DISTANCE = 1  # a candidate lies in the target's Zipf band or the next one

_FUNCTION_WORDS = """
    a an the this that these those my your his her its our their some any no every each either
    neither all both few many much more most other another such what which who whom
    whose i me you he him she it we us they them myself yourself himself herself itself
    ourselves themselves mine yours hers ours theirs one's
    about above across after against along among around as at before behind below beneath
    beside between beyond but by despite down during except for from in inside into like near
    of off on onto out outside over past since through throughout till to toward towards under
    until up upon with within without
    and or nor so yet if because although though unless while whereas whether than then once
    when where why how
    be am is are was were been being have has had having do does did doing will would shall
    should can could may might must ought
    not n't there here very just too also only even
    don't doesn't didn't isn't aren't wasn't weren't won't wouldn't can't couldn't shouldn't
    i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd
    we'd they'd i'll you'll he'll she'll we'll they'll that's there's let's"""
FUNCTION_WORDS_EN = frozenset(_FUNCTION_WORDS.split())
"""English closed-class words (function words); every other word is a content word."""


@dataclass(frozen=True)
class WordFeatures:
    """What a control word is matched on."""

    length: int  # characters
    band: int  # whole-number Zipf band, 0 when wordfreq does not list the word
    content: bool  # content word (True) or function word
    split: str  # script signature, e.g. "latin", "kanji+hiragana"


@functools.lru_cache(maxsize=2)
def _frequencies(language: str) -> Mapping[str, float]:
    import wordfreq

    return wordfreq.get_frequency_dict("en" if language == "english" else "ja", wordlist="best")


def zipf_band(word: str, *, language: str) -> int:
    """The whole-number Zipf band of ``word`` in wordfreq's list (0: not listed).

    Zipf = log10(frequency per billion words): "the" 7, "house" 5, "kettle" 3.

    Examples
    --------
    >>> zipf_band("the", language="english"), zipf_band("xqzv", language="english")
    (7, 0)
    """
    import math

    key = normalise_target(word) if language == "english" else word
    freq = _frequencies(language).get(key, 0.0)
    return max(0, math.floor(math.log10(freq) + 9.0)) if freq > 0 else 0


def script_signature(word: str) -> str:
    """The runs of script classes of ``word`` joined by "+" (``latin``, ``kanji+hiragana``).

    >>> script_signature("Cat"), script_signature("食べる")
    ('latin', 'kanji+hiragana')
    """
    runs: list[str] = []
    for ch in word:
        cls = char_class(ch) or "other"
        cls = "latin" if cls in ("latin_lower", "latin_upper") else cls
        if not runs or runs[-1] != cls:
            runs.append(cls)
    return "+".join(runs)


def word_features(word: str, *, language: str, pos: str | None = None) -> WordFeatures:
    """The matching features of one word (``pos``: the UniDic POS of a Japanese word).

    >>> word_features("the", language="english")
    WordFeatures(length=3, band=7, content=False, split='latin')
    """
    if language == "english":
        content = normalise_target(word) not in FUNCTION_WORDS_EN
    else:
        content = is_content_morpheme(pos)
    return WordFeatures(
        len(word), zipf_band(word, language=language), content, script_signature(word)
    )


@dataclass(frozen=True)
class Candidate:
    """One eligible occurrence of a candidate word in a field."""

    field: str
    occurrence: int  # the word's occurrences in the field, counted from 0
    start: int
    end: int
    word: str
    features: WordFeatures


def distance(target: WordFeatures, candidate: WordFeatures) -> tuple[int, int] | None:
    """``(band distance, length distance)`` of a candidate, or None when it cannot match
    (another class or script signature, or more than :data:`MAX_BAND_DISTANCE` bands away)."""
    if candidate.content != target.content or candidate.split != target.split:
        return None
    band = abs(candidate.band - target.band)
    if band > MAX_BAND_DISTANCE:
        return None
    return band, abs(candidate.length - target.length)


def order_candidates(
    target: WordFeatures, candidates: Sequence[Candidate], *, key: Sequence[Any]
) -> list[tuple[tuple[int, int], list[Candidate]]]:
    """The matching word types, best first, each with its occurrences in hashed order.

    Parameters
    ----------
    target : the target word's features.
    candidates : the example's eligible occurrences that are not the target.
    key : the hashed key of the choice (seed, benchmark, example, target variant).

    Returns
    -------
    ``[((band distance, length distance), occurrences), ...]``; types that cannot match are left
    out; ties are broken by ``hashed_seed(*key, word)``.
    """
    by_word: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_word.setdefault(c.word.lower() if c.word.isascii() else c.word, []).append(c)
    ranked = []
    for word, occurrences in by_word.items():
        d = distance(target, occurrences[0].features)
        if d is None:
            continue
        shuffled = sorted(occurrences, key=lambda c: hashed_seed(*key, word, c.field, c.start))
        ranked.append((d, hashed_seed(*key, word), shuffled))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [(d, occ) for d, _, occ in ranked]


def forced(digest: bytes, probs: Probabilities) -> bytes:
    """``digest`` with its decision draw moved inside the typo intervals, so an operation fires
    with the model's mix: draw ``v`` uniform on the intervals' total width, laid end to end."""
    total = sum(b - a for a, b, _ in probs.intervals)
    v = (int.from_bytes(digest[:8], "big") * total) >> 64
    for a, b, _ in probs.intervals:
        if v < b - a:
            return (a + v).to_bytes(8, "big") + digest[8:]
        v -= b - a
    raise AssertionError("unreachable: v < total")  # pragma: no cover


class ExampleWords:
    """The candidate occurrences of one example (computed once for all its targets)."""

    def __init__(
        self,
        fields: Mapping[str, str],
        perturbable: Sequence[str],
        *,
        language: str,
        rules: Eligibility,
        row: RowContext,
        protected: Sequence[str],
        tokenizer: Tokenizer | None,
    ) -> None:
        self.items: list[tuple[Candidate, str | None]] = []
        self.texts = {name: fields[name] for name in perturbable}
        for name in perturbable:
            text = fields[name]
            shielded = protected_spans(text, list(protected)) if protected else []
            blocked = rules.blocked_spans(text, row) if rules.active else {}
            counts: Counter[str] = Counter()
            spans: list[tuple[int, int, str | None]]  # start, end, part of speech
            if language == "english":
                spans = [(m.start(), m.end(), None) for m in TOKEN.finditer(text)]
            else:
                tokens = tokenizer.tokens(text)  # type: ignore[union-attr]
                spans = [(t.start, t.end, t.pos) for t in tokens]
            for start, end, pos in spans:
                word = text[start:end]
                k = counts[word]
                counts[word] += 1
                if not any(ch.isalpha() for ch in word):
                    continue
                if shielded and any(s < end and start < e for s, e in shielded):
                    continue
                if rules.active and rules.reason(
                    text, start, end, blocked, row, language=language, pos=pos
                ):
                    continue
                feats = word_features(word, language=language, pos=pos)
                self.items.append((Candidate(name, k, start, end, word, feats), pos))

    def excluding(self, spans: Mapping[str, Sequence[tuple[int, int]]]) -> list[Candidate]:
        """The candidates that overlap none of ``spans`` (field -> the target's occurrences)."""
        out = []
        for c, _ in self.items:
            taken = spans.get(c.field, ())
            if not any(s < c.end and c.start < e for s, e in taken):
                out.append(c)
        return out

    def pos_at(self, field: str, start: int) -> str | None:
        for c, pos in self.items:
            if c.field == field and c.start == start:
                return pos
        return None


@dataclass
class ControlCounts:
    """What the control design did in one benchmark (the summary's ``control`` key)."""

    targets: int = 0
    matched: int = 0
    unmatched: Counter[str] = field(default_factory=Counter)
    match: Counter[str] = field(default_factory=Counter)
    skipped: int = 0  # candidate occurrences where the drawn kind could not apply
    # Japanese with conversion_prob > 0, as in the words design: the control edits a conversion
    # could have made, and the conversions among them
    counts_conversions: bool = False
    conversion_eligible: int = 0
    conversions: int = 0

    def as_dict(self) -> dict[str, Any]:
        unmatched = self.unmatched or Counter()
        return {
            "rows": self.targets,
            "matched": self.matched,
            "matched_share": self.matched / self.targets if self.targets else None,
            "unmatched": sum(unmatched.values()),
            "unmatched_reasons": dict(sorted(unmatched.items())),
            "match": dict(sorted((self.match or Counter()).items())),
            "skipped_occurrences": self.skipped,
            "split_proxy": "script signature (model-independent; generate counts real tokens)",
            "max_band_distance": MAX_BAND_DISTANCE,
            **(
                {
                    "conversions": self.conversions,
                    "conversion_eligible": self.conversion_eligible,
                    "conversion_rate_eligible": (
                        round(self.conversions / self.conversion_eligible, 6)
                        if self.conversion_eligible
                        else 0.0
                    ),
                }
                if self.counts_conversions
                else {}
            ),
        }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _apply(fields: Mapping[str, Any], edits: Sequence[Edit]) -> str:
    changed = dict(fields)
    for name in {e.field for e in edits}:
        text = fields[name]
        pieces, cursor = [], 0
        for e in sorted((e for e in edits if e.field == name), key=lambda e: e.start):
            pieces += [text[cursor : e.start], e.operation.perturbed]
            cursor = e.end
        pieces.append(text[cursor:])
        changed[name] = "".join(pieces)
    return _dumps(changed)


class MatchedControl:
    """The control rows of one benchmark, made as the typo rows are read (in their order).

    Holds the word list's finder, the typo model and the benchmark's rows (the inputs), the
    candidates of the example in hand (the typo rows come example by example, so one example's
    words are kept at a time), the examples that already have their control ``original`` row,
    and the control rows made since the builder last handed them on (``rows``, ``labels``).
    """

    def __init__(
        self,
        benchmark: pd.DataFrame,
        words: pd.DataFrame,
        *,
        probabilities: Probabilities,
        seed: int,
        eligibility: Eligibility | None = None,
        tokenizer: Tokenizer | None = None,
        homophones: Any = None,
        words_source: str = "word list",
        source: str = "benchmark",
        rows: PerturbedColumns | None = None,
    ) -> None:
        language = str(benchmark["language"].iloc[0])
        targets = read_targets(words, language=language, source=words_source)
        if language == "japanese" and tokenizer is None:
            tokenizer = Tokenizer()
        self.find = make_finder(targets, language, source=words_source, tokenizer=tokenizer).find
        self.homophones, self.reader = human.prepare(
            language,
            typo_model(probabilities.model).reads_context,
            probabilities.conversion,
            homophones,
        )
        self.language, self.tokenizer = language, tokenizer
        self.probabilities, self.seed = probabilities, seed
        self.benchmark = benchmark
        self.rules = eligibility or Eligibility()
        self.index_of = {(t.variant, t.rank): i for i, t in enumerate(targets)}
        self.position = {str(e): i for i, e in enumerate(benchmark["example_id"].astype(str))}
        self.benchmark_rows = BenchmarkRows(benchmark, source=source)  # examples read as needed
        self.name = str(benchmark["benchmark"].iloc[0])
        self.rows = PerturbedColumns() if rows is None else rows
        self.labels: list[str | None] = []  # control_match of the rows in ``rows``
        self.counts = ControlCounts(unmatched=Counter(), match=Counter())
        self.counts.counts_conversions = (
            probabilities.conversion > 0 and self.homophones is not None
        )
        self.has_original: set[int] = set()
        self._example: tuple[int, ExampleWords, dict[str, Any]] | None = None

    def _words_of(self, r: int) -> tuple[ExampleWords, dict[str, Any]]:
        """Example ``r``'s candidates and fields (the last example's kept, the others rebuilt)."""
        if self._example is None or self._example[0] != r:
            fields, perturbable, protected = self.benchmark_rows.example(r)[4:]
            row = self.benchmark.iloc[r]
            context = RowContext.from_row(row.to_dict()) if self.rules.active else RowContext()
            words = ExampleWords(
                {k: fields[k] for k in perturbable},
                perturbable,
                language=self.language,
                rules=self.rules,
                row=context,
                protected=protected,
                tokenizer=self.tokenizer,
            )
            self._example = (r, words, fields)
        return self._example[1], self._example[2]

    def follow(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Add the control rows of typo rows ``records`` (``example_id, variant, word_rank, draw,
        perturbations``; ``original`` rows are passed over), in order, to ``rows``."""
        language, reader, homophones = self.language, self.reader, self.homophones
        probabilities, counts, seed, name = self.probabilities, self.counts, self.seed, self.name
        rows = self.rows
        for rec in records:
            if rec["variant"] == "original":
                continue
            counts.targets += 1
            r = self.position[str(rec["example_id"])]
            ex, fields = self._words_of(r)
            t = self.index_of.get((rec["variant"], int(rec["word_rank"])))
            edits_done = rec["perturbations"]
            first = edits_done[0]
            # every occurrence of the target word (edited or not) is off limits
            taken: dict[str, list[tuple[int, int]]] = {
                field_name: [(s, e) for i, s, e in self.find(text) if i == t]
                for field_name, text in ex.texts.items()
            }
            for e in edits_done:
                taken.setdefault(e["field"], []).append((e["start"], e["end"]))
            pos = ex.pos_at(first["field"], first["start"]) if language == "japanese" else None
            target = word_features(first["original"], language=language, pos=pos)
            key = (seed, name, rec["example_id"], CONTROL, rec["variant"])
            ranked = order_candidates(target, ex.excluding(taken), key=key)
            need = len(edits_done)
            if not ranked:
                counts.unmatched["no_candidate"] += 1
                continue
            if sum(len(occ) for _, occ in ranked) < need:
                counts.unmatched["too_few_occurrences"] += 1
                continue
            draw = int(rec["draw"])
            edits: list[Edit] = []
            relaxed: set[str] = set()
            used = 0  # eligible occurrences of the words the edits fell on
            for (band, length), occurrences in ranked:
                used += len(occurrences)
                for c in occurrences:
                    if len(edits) == need:
                        break
                    h = key_hasher(*key, c.field, c.start)
                    if draw:
                        h.update(key_part(draw))
                    text = fields[c.field]
                    ctx = reader.occurrence(text, c.start, c.end) if reader else None
                    op = decide(
                        c.word,
                        forced(h.digest(), probabilities),
                        probabilities,
                        homophones=homophones,
                        context=ctx,
                    )
                    if not isinstance(op, Operation):
                        counts.skipped += 1
                        continue
                    edits.append(Edit(c.field, c.occurrence, c.start, c.end, c.word, op))
                    relaxed |= {"band"} if band else set()
                    relaxed |= {"length"} if length else set()
                if len(edits) == need:
                    break
            if len(edits) < need:
                counts.unmatched["no_typo_applies"] += 1
                continue
            if r not in self.has_original:
                self.has_original.add(r)
                rows.add(
                    PerturbedRow(
                        r,
                        "original",
                        0,
                        0,
                        original_seed(CONTROL, *key[:3]),
                        _dumps(fields),
                        0,
                        (),
                        CONTROL,
                    )
                )
                self.labels.append(None)
            counts.matched += 1
            if counts.counts_conversions:
                counts.conversions += sum(e.operation.op == "conversion" for e in edits)
                counts.conversion_eligible += human.convertible_edits(
                    edits, fields, homophones, reader
                )
            label = "+".join(sorted(relaxed)) or "exact"
            counts.match[label] += 1
            rows.add(
                PerturbedRow(
                    r,
                    rec["variant"],
                    int(rec["word_rank"]),
                    draw,
                    hashed_seed(*key, draw),
                    _apply(fields, edits),
                    used,
                    edits,
                    CONTROL,
                )
            )
            self.labels.append(label)
            if rows.pending >= columns.FLUSH_ROWS:
                rows.flush()  # the Python rows freed as they go; the chunks are joined later

    def summary(self) -> dict[str, Any]:
        """The summary's ``control`` key."""
        return {"control": self.counts.as_dict()}


def _control_part(table: pa.Table, labels: Sequence[str | None], schema: pa.Schema) -> pa.Table:
    """Control rows as they sit in the file: their ``control_match`` labels added, the typo
    rows' column order and types, every column one chunk (the whole control table is built
    in one piece, so each row group's slice of it is one chunk per column)."""
    table = table.append_column("control_match", pa.array(labels, pa.string()))
    return table.select(schema.names).cast(schema).combine_chunks()


def _with_match(table: pa.Table) -> pa.Table:
    """Typo rows with the ``control_match`` column, null on every row."""
    return table.append_column("control_match", pa.nulls(table.num_rows, pa.string()))


def add_controls(
    table: pa.Table,
    benchmark: pd.DataFrame,
    words: pd.DataFrame,
    *,
    probabilities: Probabilities,
    seed: int,
    eligibility: Eligibility | None = None,
    tokenizer: Tokenizer | None = None,
    homophones: Any = None,
    words_source: str = "word list",
    source: str = "benchmark",
) -> tuple[pa.Table, dict[str, Any]]:
    """The perturbed table with the matched control rows appended.

    Parameters
    ----------
    table : ``perturb_frame``'s table (words design).
    benchmark, words : the frames ``perturb_frame`` read.
    probabilities, seed, eligibility : as given to ``perturb_frame``.
    tokenizer, homophones : shared Japanese resources (built on demand).
    words_source, source : file names for error messages.

    Returns
    -------
    (table, summary)
        The rows of ``table`` (condition "typo") followed by the control rows (condition
        "control": one ``original`` row per example with a control and one row per matched
        typo row, in order), with a ``control_match`` column (null on typo rows); the summary's
        ``control`` key (:meth:`ControlCounts.as_dict`). :func:`perturb_with_controls` writes
        the same rows to a Parquet file as it goes.
    """
    control = MatchedControl(
        benchmark,
        words,
        probabilities=probabilities,
        seed=seed,
        eligibility=eligibility,
        tokenizer=tokenizer,
        homophones=homophones,
        words_source=words_source,
        source=source,
    )
    for batch in table.select(list(RECORD_COLUMNS)).to_batches():
        control.follow(batch.to_pylist())
    typo = _with_match(table)
    made = _control_part(control.rows.table(benchmark), control.labels, typo.schema)
    return pa.concat_tables([typo, made]), control.summary()


# What the control reads of each typo row.
RECORD_COLUMNS = ("example_id", "variant", "word_rank", "draw", "perturbations")


class _TypoRowGroups:
    """The sink ``perturb_frame`` writes the typo rows to: each full row group goes on to the
    file with its null ``control_match``, and its typo rows' records to a side file the control
    reads back; the last, partial row group is kept to open the control rows' first group."""

    def __init__(self, sink: ParquetRowGroups, records: Path) -> None:
        self.sink = sink
        self.row_group_size = sink.row_group_size
        self.rows = 0
        self.records = records
        self.last: pa.Table | None = None
        self._writer: pq.ParquetWriter | None = None

    def _keep_records(self, table: pa.Table) -> None:
        part = table.select(list(RECORD_COLUMNS))
        part = part.filter(pc.not_equal(part.column("variant"), "original"))
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.records, part.schema, compression="zstd")
        self._writer.write_table(part)

    def write(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        self._keep_records(table)
        self.sink.write(_with_match(table))

    def write_last(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        self._keep_records(table)
        self.last = _with_match(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _ControlRowGroups:
    """The sink of the control rows' builder: the first row group completes the typo rows'
    last one (``head``), every group gets its ``control_match`` labels and the typo rows'
    schema, and goes to the file."""

    def __init__(self, sink: ParquetRowGroups, head: pa.Table, labels: list[str | None]) -> None:
        self.sink = sink
        self.schema = head.schema
        self.head: pa.Table | None = head if head.num_rows else None
        self.labels = labels
        # the control rows that complete the next row group of the file
        self.row_group_size = sink.row_group_size - head.num_rows

    def _group(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        part = _control_part(table, self.labels[:n], self.schema)
        del self.labels[:n]
        if self.head is not None:
            part = pa.concat_tables([self.head, part]) if n else self.head
            self.head = None
        self.row_group_size = self.sink.row_group_size
        return part

    def write(self, table: pa.Table) -> None:
        self.sink.write(self._group(table))

    def write_last(self, table: pa.Table) -> None:
        self.sink.write_last(self._group(table))


def perturb_with_controls(
    benchmark: pd.DataFrame,
    words: pd.DataFrame,
    *,
    sink: ParquetRowGroups,
    probabilities: Probabilities,
    seed: int,
    eligibility: Eligibility | None = None,
    tokenizer: Tokenizer | None = None,
    homophones: Any = None,
    words_source: str = "word list",
    source: str = "benchmark",
    **options: Any,
) -> dict[str, Any]:
    """The words design's typo rows, then their matched control rows, written to ``sink`` row
    group by row group: the bytes of ``atomic.write_parquet`` of :func:`add_controls`'s table.

    The typo rows go to the file as ``perturb_frame`` makes them; the five columns the control
    reads of each (``RECORD_COLUMNS``, original rows left out) go to a temporary Parquet file
    beside the output, which is read back one batch at a time once the typo rows are done. Held
    in memory: one row group of typo rows, then of control rows, one batch of records, the
    candidate words of one example, and the positions of the examples that have a control
    ``original`` row (plus the benchmark and the word list).

    Parameters
    ----------
    benchmark, words, probabilities, seed, eligibility, tokenizer, homophones, words_source,
    source : as for ``perturb_frame`` and :func:`add_controls`.
    sink : the output (``parquet_sink.parquet_row_groups``).
    options : the rest of ``perturb_frame``'s keywords (``draws``, ``progress``, ``jobs``).

    Returns
    -------
    The summary: ``perturb_frame``'s (``rows``: the typo rows) and the ``control`` key.
    """
    folder = Path(sink.path).parent
    with tempfile.TemporaryDirectory(prefix=".control-records-", dir=folder) as tmp:
        typo = _TypoRowGroups(sink, Path(tmp) / "records.parquet")
        try:
            # perturb_frame calls no more than write, write_last, rows and row_group_size
            result = perturb_frame(
                benchmark,
                words,
                sink=cast(ParquetRowGroups, typo),
                probabilities=probabilities,
                seed=seed,
                eligibility=eligibility,
                tokenizer=tokenizer,
                homophones=homophones,
                words_source=words_source,
                source=source,
                **options,
            )
        finally:
            typo.close()
        assert typo.last is not None  # perturb_frame ends with write_last
        control = MatchedControl(
            benchmark,
            words,
            probabilities=probabilities,
            seed=seed,
            eligibility=eligibility,
            tokenizer=tokenizer,
            homophones=homophones,
            words_source=words_source,
            source=source,
        )
        out = _ControlRowGroups(sink, typo.last, control.labels)
        control.rows = PerturbedColumns(sink=out, benchmark=benchmark)
        records = pq.ParquetFile(typo.records)
        for batch in records.iter_batches(batch_size=columns.FLUSH_ROWS):
            control.follow(batch.to_pylist())
        out.write_last(control.rows.table(benchmark))
    return {**result.summary, **control.summary()}
