"""Perturb a whole benchmark frame: one original row per example plus one row per (example,
target word, draw) where at least one operation fired, with the provenance of every operation.

This module holds the loop: which occurrences get a typo (hashed per occurrence, ops.decide) and
the texts they make. The rows go to :class:`evalpipe.perturb.columns.PerturbedColumns` (the
table and each row's typo facts), the counts to
:class:`evalpipe.perturb.summary.SummaryCounter`; the benchmark rows are read by
:mod:`evalpipe.perturb.benchmark_rows`, the word list by :mod:`evalpipe.perturb.targets`.

Returns a pyarrow Table rather than a pandas DataFrame: the ``perturbations`` column is a
list<struct>, which pandas would turn into hundreds of thousands of Python dicts for no gain; the
stage writes the table as it is and ``PerturbResult.to_pandas()`` is there for inspection.
"""

from __future__ import annotations

import bisect
import json
import json.encoder
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from evalpipe.arms import TYPO
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of
from evalpipe.perturb import columns, human
from evalpipe.perturb.benchmark_rows import (
    check_benchmark,
    protected_spans,
)
from evalpipe.perturb.columns import PerturbedColumns, PerturbedRow
from evalpipe.perturb.eligibility import Eligibility, OccurrenceRules
from evalpipe.perturb.japanese import Tokenizer
from evalpipe.perturb.loop import (
    BenchmarkRows,
    Example,
    for_each_example,
    original_seed,
    paused_gc,
)
from evalpipe.perturb.ops import Probabilities, Skipped, key_hasher, key_part, typo_maker
from evalpipe.perturb.parallel import map_ranges
from evalpipe.perturb.parquet_sink import ParquetRowGroups
from evalpipe.perturb.summary import SummaryCounter
from evalpipe.perturb.targets import make_finder, read_targets
from evalpipe.perturb.typo_models import typo_model

_encode_text = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


def _dumps(value: Any) -> str:
    """The contract's JSON form of a fields object or value (sorted keys, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _FieldsJson:
    """An example's ``fields`` JSON (the contract's form, ``_dumps``) with some occurrences
    replaced, written as UTF-8 bytes into the builder's buffer (what the ``fields`` column
    stores: :class:`evalpipe.perturb.columns.PerturbedColumns` makes the column from that
    buffer as it is).

    JSON escapes each character on its own, so the JSON of a spliced text is the splice of the
    text's JSON. A field whose text has nothing to escape appears in the whole example's JSON
    as it is: a row's JSON is then that document with the edited spans cut out and the
    perturbed words put in, without building the field's text and encoding it again.
    """

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        encoded = [
            (key, _encode_text(key) + ": ", _dumps(value)) for key, value in sorted(fields.items())
        ]
        self._encoded = encoded
        doc = "{" + ", ".join(ek + ev for _, ek, ev in encoded) + "}"
        self.doc = doc.encode()
        self.view = memoryview(self.doc)  # slices of a view are copied once, into the row
        # field -> UTF-8 offset in doc of its text's first character, for texts written
        # unescaped
        self.at: dict[str, int] = {}
        ascii_doc = doc.isascii()
        offset = 1
        for key, ek, ev in encoded:
            offset += len(ek)
            value = fields[key]
            if isinstance(value, str) and len(ev) == len(value) + 2 and ev[1:-1] == value:
                self.at[key] = offset + 1 if ascii_doc else len(doc[: offset + 1].encode())
            offset += len(ev) + 2  # the value and the ", " after it
        # field -> the UTF-8 offset of each character of its text, None for an ASCII text (the
        # code-point offsets are the byte offsets); made when a row first edits the field
        self._bytes_at: dict[str, list[int] | None] = dict.fromkeys(self.at) if ascii_doc else {}

    def _offsets(self, name: str) -> list[int] | None:
        try:
            return self._bytes_at[name]
        except KeyError:
            offsets = self._bytes_at[name] = _utf8_offsets(self.fields[name])
            return offsets

    def write(self, out: bytearray, edits: list[tuple]) -> None:
        """Append the JSON, UTF-8 encoded, with each edit's occurrence replaced by its perturbed
        word to ``out`` (edits as tuples of ``Edit``'s fields, in text order within each field;
        occurrences never overlap): the document's unchanged slices are copied into ``out``
        straight from the document, with no row-sized object in between."""
        doc, at = self.view, self.at
        if len(edits) == 1:
            name, _, start, end, _, op = edits[0]
            base = at.get(name)
            if base is not None:
                offsets = self._offsets(name)
                if offsets is not None:
                    start, end = offsets[start], offsets[end]
                out += doc[: base + start]
                out += _encode_text(op.perturbed)[1:-1].encode()
                out += doc[base + end :]
                return
        elif all(e[0] in at for e in edits):
            spans = []
            for name, _, start, end, _, op in edits:
                offsets = self._offsets(name)
                if offsets is not None:
                    start, end = offsets[start], offsets[end]
                spans.append((at[name] + start, at[name] + end, op.perturbed))
            if len({e[0] for e in edits}) > 1:
                spans.sort(key=_first)
            cursor = 0
            for start, end, perturbed in spans:
                out += doc[cursor:start]
                out += _encode_text(perturbed)[1:-1].encode()
                cursor = end
            out += doc[cursor:]
            return
        changed = {
            name: _spliced(self.fields[name], [e for e in edits if e[0] == name])
            for name in {e[0] for e in edits}
        }
        out += (
            "{"
            + ", ".join(
                ek + (_encode_text(changed[key]) if key in changed else ev)
                for key, ek, ev in self._encoded
            )
            + "}"
        ).encode()


def _utf8_offsets(text: str) -> list[int] | None:
    """The UTF-8 offset of each code point of ``text`` and of its end (None when ``text`` is
    ASCII: the code-point offsets are the byte offsets).

    Examples
    --------
    >>> _utf8_offsets("aé漢😀"), _utf8_offsets("ab")
    ([0, 1, 3, 6, 10], None)
    """
    if text.isascii():
        return None
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    sizes = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    offsets = np.zeros(len(points) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets.tolist()


def _bound(v: int) -> bytes:
    """A draw bound as bytes that order with 32-byte digests as ``v`` with their first 8 bytes
    read as a big-endian int (``v <= 2**64``)."""
    return v.to_bytes(8, "big") if v < 2**64 else b"\xff" * 33


def _first(span: tuple) -> Any:
    return span[0]


def _spliced(text: str, edits: list[tuple]) -> str:
    """``text`` with each edit's occurrence replaced by its perturbed word (edits in text order,
    all of this text's field, as tuples of ``Edit``'s fields)."""
    pieces = []
    cursor = 0
    for _, _, start, end, _, op in edits:
        pieces.append(text[cursor:start])
        pieces.append(op.perturbed)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


@dataclass
class PerturbResult:
    """The perturbed table (columns per docs/architecture.md) and the benchmark's summary."""

    table: pa.Table | None  # None when the rows went to a sink (``perturb_frame(sink=...)``)
    summary: dict[str, Any] = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        if self.table is None:
            raise ValueError("the rows were written to a sink; read the file it wrote")
        return self.table.to_pandas()


class _ExampleRows:
    """A worker's stand-in for the builder: each example's rows, as a list per example (the
    parent's builder flushes; here nothing is ever pending)."""

    pending = 0

    def __init__(self) -> None:
        self.examples: list[list[PerturbedRow]] = []
        self.fields_data = bytearray()  # every row's written fields (PerturbedColumns)

    def start(self, ex: Example) -> Example:
        self.examples.append([])
        return ex

    def add(self, row: PerturbedRow) -> None:
        self.examples[-1].append(row)

    def flush(self) -> None:  # pragma: no cover - never called: nothing is pending
        pass


def perturb_frame(
    benchmark: pd.DataFrame,
    words: pd.DataFrame,
    *,
    probabilities: Probabilities,
    seed: int,
    source: str = "benchmark",
    words_source: str = "word list",
    tokenizer: Tokenizer | None = None,
    homophones: Any = None,
    draws: int = default_of("perturb.draws"),
    progress: bool = False,
    eligibility: Eligibility | None = None,
    sink: ParquetRowGroups | None = None,
    jobs: int = 1,
) -> PerturbResult:
    """Perturb every occurrence of every target word in the benchmark's perturbable fields.

    Parameters
    ----------
    benchmark : benchmark rows (docs/architecture.md): ``benchmark, example_id, language,
        fields`` (JSON object string), ``perturbable`` (list of field names) and the carried
        columns ``subtask, task_type, choices, answer, answers, labels`` (``target`` and
        ``protected`` are carried too when present). Occurrences overlapping a ``protected``
        string (e.g. the JSQuAD answer span) are never perturbed nor counted.
    words : the target word list for the benchmark's language (``rank, word, lemma, pos``).
    probabilities : the validated typo model (``validate_probabilities``).
    seed : the global seed; every operation's randomness is hashed from (seed, benchmark,
        example_id, target word, field, occurrence).
    source, words_source : file names for error messages.
    tokenizer : a Japanese Tokenizer to reuse (built on demand otherwise).
    homophones : a ``homophones.Homophones`` to reuse for Japanese conversion slips (built on
        demand when ``probabilities.conversion > 0``).
    draws : independent typo draws per (example, target word): draw ``d >= 1`` hashes the key
        ``(..., field, occurrence, d)``, draw 0 the key without ``d``, so ``draws=1`` gives the
        rows of a single draw and each draw keeps the common random numbers of ``decide``.
    progress : show a tqdm bar over examples.
    eligibility : the occurrences never edited (``eligibility.from_params``; None: all may be).
    sink : write the rows there row group by row group as they are made
        (``parquet_sink.parquet_row_groups``: the bytes of ``atomic.write_parquet`` of the
        table) instead of returning them; the result's ``table`` is then None.
    jobs : worker processes perturbing contiguous ranges of examples (forked, Linux); their
        rows are joined in example order, so the table, the file's bytes and the summary are
        those of ``jobs=1`` (in this process). Not an output-changing parameter.

    Returns
    -------
    PerturbResult: ``table`` with columns ``benchmark, example_id, variant, word_rank, draw, seed,
    fields, perturbations, occurrences, perturbed_occurrences`` plus the carried columns, ordered
    by example (input order), then the original row (draw 0), then word rank, then draw; and
    ``summary`` (examples,
    target words, target words found, occurrences, perturbed occurrences, rows, operations by
    kind and by rule, keyboard fallbacks by script class, skipped transpositions / conversions).

    Examples
    --------
    >>> bench = pd.DataFrame({"benchmark": ["demo"], "example_id": ["1"], "subtask": [None],
    ...     "language": ["english"], "task_type": ["mc"], "fields": ['{"q": "The cat"}'],
    ...     "perturbable": [["q"]], "choices": [None], "answer": ["A"], "answers": [["A"]],
    ...     "labels": [None]})
    >>> words = pd.DataFrame({"rank": [1], "word": ["the"], "lemma": [None], "pos": [None]})
    >>> res = perturb_frame(bench, words, probabilities=Probabilities(1, 0, 0), seed=1)
    >>> res.table.column("variant").to_pylist()
    ['original', 'the']
    """
    language = check_benchmark(benchmark, source=source)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(f"perturb.draws must be an integer >= 1, found {draws!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs must be an integer >= 1, found {jobs!r}")
    targets = read_targets(words, language=language, source=words_source)
    finder = make_finder(targets, language, source=words_source, tokenizer=tokenizer)
    find = finder.find
    homophones, reader = human.prepare(
        language,
        typo_model(probabilities.model).reads_context,
        probabilities.conversion,
        homophones,
    )
    eligible = OccurrenceRules(eligibility, benchmark, language, reader)
    rules_active = eligible.active

    # Japanese: MeCab runs over a batch of examples' texts before the loop reaches them
    def ahead(batch: list[Example]) -> None:
        finder.prepare([ex.fields[name] for ex in batch for name in ex.perturbable])

    prepare = ahead if finder.batches else None

    benchmark_rows = BenchmarkRows(benchmark, source=source)
    names = benchmark_rows.names
    make = typo_maker(probabilities, homophones=homophones)
    rows = PerturbedColumns(sink=sink, benchmark=benchmark)
    # keyboard or natural: replacements by the uniform rule are counted as fallbacks
    counter = SummaryCounter(keyboard=not typo_model(probabilities.model).plain)
    drawn_counts = counter.drawn
    # the denominator of the conversion rate: every occurrence a conversion could change
    count_convertible = counter.counts_conversions = (
        probabilities.conversion > 0 and homophones is not None
    )

    # Key parts encoded once, not once per occurrence. The key (seed, benchmark, example, word,
    # field, occurrence[, draw]) is hashed by copying the example's hasher state and adding the
    # rest in one update: a key is shorter than one BLAKE2b block, so no compression is saved by
    # keeping deeper states, and a copy is cheaper than a new personalised hasher.
    variant_parts = [key_part(t.variant) for t in targets]
    variant_field_parts: dict[str, list[bytes]] = {}  # field -> each target's word + field
    int_parts = [key_part(k) for k in range(256)]
    draw_parts = [b""] + [key_part(d) for d in range(1, draws)]
    draw_range = range(draws)
    first_8 = struct.Struct(">Q").unpack_from  # the draw u: digest bytes 0-7, big-endian
    # the draw's typo intervals (ops.drawn_kind): u outside all of them is no typo
    starts = [a for a, _, _ in probabilities.intervals]
    ends = [b for _, b, _ in probabilities.intervals]
    kinds = [op for _, _, op in probabilities.intervals]
    find_interval = bisect.bisect_right
    typo_end = max(ends, default=0)  # a draw u from here on is no typo (most draws)
    # The same bounds as bytes, compared with the whole digest: digest >= v.to_bytes(8) exactly
    # when u >= v (equal first 8 bytes: the longer digest is the greater), so the one-draw
    # loop tests a draw without unpacking it; 2**64, above every u, is above every digest.
    starts_b = [_bound(a) for a in starts]
    ends_b = [_bound(b) for b in ends]
    typo_end_b = _bound(typo_end)

    plain = draws == 1 and not rules_active and not count_convertible and reader is None

    def plain_field(
        example_hasher: Any,
        name: str,
        text: str,
        word_field: list[bytes],
        k_of: dict[int, int],
        fired_by: dict,
    ) -> None:
        """The loop below for one draw and a field where no occurrence is set aside, no
        conversion is counted and no context read (the common case): the same draws and edits,
        with none of those checks per occurrence."""
        copy = example_hasher.copy
        for t, start, end in find(text):
            k = k_of.get(t, 0)
            k_of[t] = k + 1
            h = copy()
            h.update(word_field[t] + (int_parts[k] if k < 256 else key_part(k)))
            digest = h.digest()
            if digest >= typo_end_b:
                continue
            at = find_interval(starts_b, digest) - 1
            if at < 0 or digest >= ends_b[at]:
                continue
            kind = kinds[at]
            drawn_counts[kind] += 1
            word = text[start:end]
            op = make(kind, word, digest, None)
            if isinstance(op, Skipped):
                counter.count_skipped(op)
            elif op is not None:
                edit = (name, k, start, end, word, op)
                hit = fired_by.get((t, 0))
                if hit is None:
                    fired_by[(t, 0)] = [edit]
                else:
                    hit.append(edit)

    def example(ex: Example) -> None:
        r, fields, perturbable, protected = ex.r, ex.fields, ex.perturbable, ex.protected
        example_hasher = key_hasher(seed, ex.benchmark, ex.example_id)
        eligible.row(r)
        seed_of_original = original_seed("words", seed, ex.benchmark, ex.example_id)
        # every row's JSON is written into the builder's buffer (PerturbedColumns.fields_data)
        data = rows.fields_data
        data += ex.original_fields().encode()
        rows.add(PerturbedRow(r, "original", 0, 0, seed_of_original, len(data), 0, ()))

        # One pass over the example's occurrences: hash each, keep only those where a typo fires.
        counts: dict[int, int] = {}
        # (target, draw) -> the edits of its row, plain tuples of Edit's fields: hundreds of
        # thousands are made, and a named tuple costs several times a tuple to build
        fired_by: dict[tuple[int, int], list[tuple]] = {}
        for name in perturbable:
            text = fields[name]
            word_field = variant_field_parts.get(name)
            if word_field is None:
                part = key_part(name)
                word_field = variant_field_parts[name] = [v + part for v in variant_parts]
            k_of: dict[int, int] = {}
            shielded = protected_spans(text, protected) if protected else ()
            skipped: dict[int, int] = {}
            ruled_out: dict[int, int] = {}  # occurrences the eligibility rules exclude
            eligible.field(text)
            if plain and not shielded:
                plain_field(example_hasher, name, text, word_field, k_of, fired_by)
            else:
                for t, start, end in find(text):
                    k = k_of.get(t, 0)
                    k_of[t] = k + 1
                    if shielded and any(ps < end and start < pe for ps, pe in shielded):
                        skipped[t] = skipped.get(t, 0) + 1  # e.g. inside the JSQuAD answer span
                        continue
                    if rules_active and eligible.excluded(start, end):
                        ruled_out[t] = ruled_out.get(t, 0) + 1
                        continue
                    if count_convertible and human.can_convert(
                        text[start:end],
                        homophones,
                        reader.occurrence(text, start, end) if reader else None,
                    ):
                        counter.conversion_eligible += draws
                    h = example_hasher.copy()
                    h.update(word_field[t] + (int_parts[k] if k < 256 else key_part(k)))
                    for d in draw_range:
                        if d == 0:
                            digest = h.digest()
                        else:
                            hd = h.copy()
                            hd.update(draw_parts[d])
                            digest = hd.digest()
                        (u,) = first_8(digest)
                        at = find_interval(starts, u) - 1
                        if at < 0 or u >= ends[at]:
                            continue  # no typo on this draw
                        kind = kinds[at]
                        drawn_counts[kind] += 1
                        word = text[start:end]
                        op = make(
                            kind,
                            word,
                            digest,
                            reader.occurrence(text, start, end) if reader else None,
                        )
                        if isinstance(op, Skipped):
                            counter.count_skipped(op)
                        elif op is not None:
                            edit = (name, k, start, end, word, op)  # an Edit's fields (_spliced)
                            hit = fired_by.get((t, d))
                            if hit is None:
                                fired_by[(t, d)] = [edit]
                            else:
                                hit.append(edit)
            for t, n in k_of.items():
                if n > skipped.get(t, 0) + ruled_out.get(t, 0):
                    counts[t] = counts.get(t, 0) + n - skipped.get(t, 0) - ruled_out.get(t, 0)
            counter.protected_occurrences += sum(skipped.values())
        if rows.pending >= columns.FLUSH_ROWS:
            rows.flush()
        if not counts:
            return
        counter.found_targets.update(counts)
        counter.occurrences += sum(counts.values())
        as_json = _FieldsJson(fields)
        write = as_json.write
        data = rows.fields_data  # a new buffer if the rows were flushed above
        made: list[tuple] = []  # the example's edits in row order, counted once
        for t, d in sorted(fired_by):
            edits = fired_by[(t, d)]
            made.extend(edits)
            write(data, edits)
            row_hasher = example_hasher.copy()
            row_hasher.update(variant_parts[t] + draw_parts[d])
            target = targets[t]
            rows.add(  # a PerturbedRow's fields, as a plain tuple (see fired_by)
                (
                    r,
                    target.variant,
                    target.rank,
                    d,
                    first_8(row_hasher.digest())[0] >> 1,
                    len(data),
                    counts[t],
                    edits,
                    TYPO,
                )
            )
        counter.count_operations([e[5] for e in made])

    if jobs == 1 or len(benchmark_rows) < 2:
        for_each_example(
            benchmark_rows,
            example,
            desc=f"perturb {names[0]}",
            progress=progress,
            ahead=prepare,
        )
    else:

        def perturb_range(lo: int, hi: int) -> tuple[list[int], Path, SummaryCounter, dict]:
            # In a forked worker: this process's own copies of the builder and counters are
            # swapped for a recorder and fresh counts. The rows go back as Arrow columns (what
            # a flush makes of them) in a file (columns.write_block), which the parent maps and
            # joins in order at the single pass's flush points (PerturbedColumns.add_block).
            nonlocal rows, counter, drawn_counts
            recorder = rows = _ExampleRows()  # type: ignore[assignment]
            counter = SummaryCounter(keyboard=counter.keyboard)
            counter.counts_conversions = count_convertible
            drawn_counts = counter.drawn
            eligible.counts = {}
            for_each_example(
                benchmark_rows,
                lambda ex: example(recorder.start(ex)),
                desc="",
                progress=False,
                within=range(lo, hi),
                ahead=prepare,
            )
            made = recorder.examples
            block = columns.build_block(
                [row for rows_of in made for row in rows_of], recorder.fields_data
            )
            shipped = Path(shipping) / f"rows-{lo}.arrow"
            columns.write_block(block, shipped)
            return [len(rows_of) for rows_of in made], shipped, counter, eligible.counts

        size = max(1, min(512, len(benchmark_rows) // (8 * jobs)))
        bar = tqdm(
            total=len(benchmark_rows), desc=f"perturb {names[0]}", unit="ex", disable=not progress
        )
        with paused_gc(), tempfile.TemporaryDirectory(prefix="evalpipe-rows-") as shipping:
            for sizes, shipped, counts, excluded in map_ranges(
                perturb_range, len(benchmark_rows), jobs=jobs, size=size
            ):
                rows.add_block(columns.read_block(shipped), sizes)
                counter.merge(counts)
                for why, n in excluded.items():
                    eligible.counts[why] = eligible.counts.get(why, 0) + n
                bar.update(len(sizes))
        bar.close()
    table, n_rows = rows.finish(benchmark)
    summary = counter.summary(
        benchmark=names[0],
        language=language,
        examples=len(benchmark),
        targets=targets,
        draws=draws,
        rows=n_rows,
        probabilities=probabilities,
        seed=seed,
    )
    summary.update(eligible.summary(probabilities.model, counter.redrawn))  # {} for uniform
    return PerturbResult(table, summary)
