"""Perturb a whole benchmark frame: one original row per example plus one row per (example,
target word) where at least one operation fired, with the provenance of every operation.

Returns a pyarrow Table rather than a pandas DataFrame: the ``perturbations`` column is a
list<struct>, which pandas would turn into hundreds of thousands of Python dicts for no gain; the
stage writes the table as it is and ``PerturbResult.to_pandas()`` is there for inspection.
"""

from __future__ import annotations

import bisect
import functools
import gc
import json
import json.encoder
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES
from evalpipe.perturb import human
from evalpipe.perturb.eligibility import Eligibility, OccurrenceRules
from evalpipe.perturb.english import EnglishFinder
from evalpipe.perturb.japanese import JapaneseFinder, Tokenizer
from evalpipe.perturb.ops import (
    OPS,
    Operation,
    Probabilities,
    Skipped,
    decide,
    key_hasher,
    key_part,
)
from evalpipe.perturb.scripts import char_class

REQUIRED_COLUMNS = ("benchmark", "example_id", "language", "fields", "perturbable")
CARRIED_COLUMNS = (
    "subtask",
    "language",
    "task_type",
    "perturbable",
    "choices",
    "answer",
    "answers",
    "labels",
)
# Fixed types, so that every benchmark's file has the same schema (an all-null column would
# otherwise be typed null).
_TEXTS = pa.list_(pa.string())
CARRIED_TYPES = {
    "subtask": pa.string(),
    "language": pa.string(),
    "task_type": pa.string(),
    "perturbable": _TEXTS,
    "choices": _TEXTS,
    "answer": pa.string(),
    "answers": _TEXTS,
    "labels": _TEXTS,
    "target": pa.string(),
    "protected": _TEXTS,
}
OPTIONAL_CARRIED = ("target", "protected")  # benchmark extras, carried when present
FLUSH_ROWS = 16_384
OUTPUT_KEYS = (
    "benchmark",
    "example_id",
    "variant",
    "word_rank",
    "draw",
    "seed",
    "fields",
    "perturbations",
    "occurrences",
    "perturbed_occurrences",
)

PERTURBATION_TYPE = pa.struct(
    [
        ("field", pa.string()),
        ("occurrence", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("original", pa.string()),
        ("perturbed", pa.string()),
        ("op", pa.string()),
        ("position", pa.int32()),
        ("original_char", pa.string()),
        ("new_char", pa.string()),
        ("rule", pa.string()),
        ("keys", pa.string()),
        ("reading", pa.string()),
    ]
)


_encode_text = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) uses


def _dumps(value: Any) -> str:
    """The contract's JSON form of a fields object or value (sorted keys, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


NOT_FOUND_SHOWN = 20  # target words named in targets_not_found_top


@dataclass
class PerturbResult:
    """The perturbed table (columns per docs/architecture.md) and the benchmark's summary."""

    table: pa.Table
    summary: dict[str, Any] = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        return self.table.to_pandas()


@dataclass(frozen=True)
class Target:
    rank: int
    word: str
    variant: str  # the row label; "word/pos" where one lemma appears with several POS
    lemma: str | None
    pos: str | None


def _script_language(word: str) -> str | None:
    for ch in word:
        cls = char_class(ch)
        if cls in ("hiragana", "katakana", "kanji", "halfwidth_katakana"):
            return "japanese"
    if any(ch.isascii() and ch.isalpha() for ch in word):
        return "english"
    return None


def read_targets(words: pd.DataFrame, *, language: str, source: str = "word list") -> list[Target]:
    """Validate a word list (columns ``rank, word``; ``lemma, pos`` optional) for ``language``.

    Parameters
    ----------
    words : the word-list frame, e.g. data/words/{language}.parquet.
    language : the benchmark's language; most words must be written in its script.
    source : the word list's file name, for error messages.

    Returns
    -------
    Targets in rank order.

    Raises
    ------
    InputError for a missing column, an empty list, a missing or non-integer rank or an empty
    word, or a list whose words are mostly in another language's script.
    """
    missing = [c for c in ("rank", "word") if c not in words.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {missing}; expected a word list with "
            f"columns rank, word, lemma, pos, score (run `python -m stages.words "
            f"--language {language}`)"
        )
    if len(words) == 0:
        raise InputError(
            f"{source}: the word list is empty; expected at least one target word "
            "(check words.top_n in params.yaml)"
        )
    frame = words.sort_values("rank", kind="mergesort").reset_index(drop=True)
    lemmas = frame["lemma"].tolist() if "lemma" in frame.columns else [None] * len(frame)
    poses = frame["pos"].tolist() if "pos" in frame.columns else [None] * len(frame)
    raw: list[tuple[int, str, str | None, str | None]] = []
    for i, (rank, word) in enumerate(
        zip(frame["rank"].tolist(), frame["word"].tolist(), strict=True)
    ):
        if not isinstance(word, str) or not word.strip():
            raise InputError(
                f"{source}, row {i + 1}, column 'word': expected a word, found {word!r}"
            )
        try:
            rank_int = int(rank)
        except (TypeError, ValueError):
            raise InputError(
                f"{source}, row {i + 1}, column 'rank': expected an integer, found {rank!r}"
            ) from None
        lemma = lemmas[i] if isinstance(lemmas[i], str) and lemmas[i] else None
        pos = poses[i] if isinstance(poses[i], str) and poses[i] else None
        raw.append((rank_int, word, lemma, pos))
    scripts = [_script_language(w) for _, w, _, _ in raw]
    foreign = [
        w for (_, w, _, _), s in zip(raw, scripts, strict=True) if s is not None and s != language
    ]
    if len(foreign) * 2 > len(raw):
        raise InputError(
            f"{source}: the target words are not {language} ({len(foreign)} of {len(raw)} are "
            f"written in another script, e.g. {foreign[:3]}); the benchmark's language is "
            f"{language}: use data/words/{language}.parquet (`python -m stages.words --language "
            f"{language}`)"
        )
    counts: dict[str, int] = {}
    for _, w, _, _ in raw:
        counts[w] = counts.get(w, 0) + 1
    return [Target(r, w, f"{w}/{p}" if counts[w] > 1 and p else w, lem, p) for r, w, lem, p in raw]


def _parse_fields(value: Any, *, source: str, row: int) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{source}, row {row}, column 'fields': expected a JSON object of "
                f"named texts, found invalid JSON ({exc.msg})"
            ) from None
    else:
        parsed = value
    if not isinstance(parsed, dict):
        raise InputError(
            f"{source}, row {row}, column 'fields': expected a JSON object of named "
            f"texts, found {type(parsed).__name__}"
        )
    return parsed


def _perturbable(value: Any, fields: dict[str, Any], *, source: str, row: int) -> list[str]:
    if value is None or isinstance(value, str):
        raise InputError(
            f"{source}, row {row}, column 'perturbable': expected a list of field "
            f"names, found {value!r}"
        )
    names = [str(v) for v in list(value)]
    for name in names:
        if name not in fields:
            raise InputError(
                f"{source}, row {row}, column 'perturbable': field {name!r} is not "
                f"in 'fields' (which has {sorted(fields)})"
            )
        if not isinstance(fields[name], str):
            raise InputError(
                f"{source}, row {row}, column 'fields': field {name!r} must be "
                f"text, found {type(fields[name]).__name__}"
            )
    return sorted(set(names))  # order-independent: the seed key names the field


def _protected(value: Any, *, source: str, row: int) -> list[str]:
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, str):
        raise InputError(
            f"{source}, row {row}, column 'protected': expected a list of strings, found {value!r}"
        )
    return [str(v) for v in list(value) if v]


def _protected_spans(text: str, protected: list[str]) -> list[tuple[int, int]]:
    """Every place in ``text`` where a protected string occurs (overlaps included)."""
    spans = []
    for needle in protected:
        at = text.find(needle)
        while at >= 0:
            spans.append((at, at + len(needle)))
            at = text.find(needle, at + 1)
    return spans


def make_finder(
    targets: list[Target],
    language: str,
    *,
    source: str = "word list",
    tokenizer: Tokenizer | None = None,
) -> Callable[[str], list[tuple[int, int, int]]]:
    """The occurrence finder for ``language``: text -> [(target index, start, end)]."""
    if language == "english":
        return EnglishFinder([t.word for t in targets], source=source).find
    return JapaneseFinder([(t.word, t.lemma, t.pos) for t in targets], tokenizer=tokenizer).find


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
    draws: int = 1,
    progress: bool = False,
    eligibility: Eligibility | None = None,
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
    missing = [c for c in (*REQUIRED_COLUMNS, *CARRIED_COLUMNS) if c not in benchmark.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {sorted(set(missing))}; expected the "
            "benchmark columns of docs/architecture.md"
        )
    if benchmark.empty:
        raise InputError(f"{source}: no examples")
    languages = sorted({str(v) for v in benchmark["language"].tolist()})
    if len(languages) != 1 or languages[0] not in LANGUAGES:
        raise InputError(
            f"{source}, column 'language': expected one of {list(LANGUAGES)} for "
            f"every row, found {languages}"
        )
    language = languages[0]
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(f"perturb.draws must be an integer >= 1, found {draws!r}")
    ids = benchmark["example_id"].astype(str).tolist()
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise InputError(f"{source}, column 'example_id': duplicate id {dup!r}; ids must be unique")
    targets = read_targets(words, language=language, source=words_source)
    find = make_finder(targets, language, source=words_source, tokenizer=tokenizer)
    homophones, reader = human.prepare(
        language, probabilities.model, probabilities.conversion, homophones
    )
    eligible = OccurrenceRules(eligibility, benchmark, language, reader)
    redrawn: Counter[str] = Counter()

    names = benchmark["benchmark"].astype(str).tolist()
    fields_col = benchmark["fields"].tolist()
    pert_col = benchmark["perturbable"].tolist()
    prot_col = (
        benchmark["protected"].tolist()
        if "protected" in benchmark.columns
        else [None] * len(benchmark)
    )
    decide_ = functools.partial(decide, homophones=homophones)

    src_rows: list[int] = []
    variants: list[str] = []
    ranks: list[int] = []
    draw_col: list[int] = []
    seeds: list[int] = []
    fields_out: list[str] = []
    n_occ: list[int] = []
    n_pert: list[int] = []
    list_offsets: list[int] = [0]
    p_field: list[str] = []
    p_occ: list[int] = []
    p_start: list[int] = []
    p_end: list[int] = []
    p_orig: list[str] = []
    p_new: list[str] = []
    p_op: list[str] = []
    p_pos: list[int] = []
    p_ochar: list[str | None] = []
    p_nchar: list[str | None] = []
    p_rule: list[str] = []
    p_keys: list[str | None] = []
    p_reading: list[str | None] = []
    found_targets: set[int] = set()
    total_occ = 0
    total_pert = 0
    total_protected = 0
    op_counts = dict.fromkeys(OPS, 0)
    rule_counts: dict[str, dict[str, int]] = {op: {} for op in OPS}
    fallback_counts: dict[str, int] = {}
    skipped_counts: dict[str, dict[str, int]] = {"transpose": {}, "conversion": {}}
    keyboard = probabilities.model != "uniform"  # keyboard or natural: fallbacks counted

    # Key parts hashed once, not once per occurrence: the digest of (seed, benchmark, example,
    # word, field, occurrence) is reached by extending copies of the shared prefixes.
    variant_parts = [key_part(t.variant) for t in targets]
    original_part = key_part("")
    int_parts = [key_part(k) for k in range(256)]
    draw_parts = [b""] + [key_part(d) for d in range(1, draws)]
    draw_range = range(draws)
    # the draw's typo intervals (ops.decide): u outside all of them is no typo
    starts = [a for a, _, _ in probabilities.intervals]
    ends = [b for _, b, _ in probabilities.intervals]
    kinds = [op for _, _, op in probabilities.intervals]
    drawn_counts = dict.fromkeys(OPS, 0)
    find_interval = bisect.bisect_right
    field_parts: dict[str, bytes] = {}

    # Rows go to Arrow every FLUSH_ROWS rows: the Python strings are freed as we go, which keeps
    # the working set (and the time per example) flat as the benchmark grows.
    field_chunks: list[pa.Array] = []
    pert_chunks: list[pa.Array] = []

    def flush() -> None:
        field_chunks.append(pa.array(fields_out, pa.string()))
        structs = pa.StructArray.from_arrays(
            [
                pa.array(p_field, pa.string()),
                pa.array(p_occ, pa.int32()),
                pa.array(p_start, pa.int32()),
                pa.array(p_end, pa.int32()),
                pa.array(p_orig, pa.string()),
                pa.array(p_new, pa.string()),
                pa.array(p_op, pa.string()),
                pa.array(p_pos, pa.int32()),
                pa.array(p_ochar, pa.string()),
                pa.array(p_nchar, pa.string()),
                pa.array(p_rule, pa.string()),
                pa.array(p_keys, pa.string()),
                pa.array(p_reading, pa.string()),
            ],
            fields=list(PERTURBATION_TYPE),
        )
        pert_chunks.append(pa.ListArray.from_arrays(pa.array(list_offsets, pa.int32()), structs))
        for column in (
            fields_out,
            p_field,
            p_occ,
            p_start,
            p_end,
            p_orig,
            p_new,
            p_op,
            p_pos,
            p_ochar,
            p_nchar,
            p_rule,
            p_keys,
            p_reading,
        ):
            column.clear()
        list_offsets[:] = [0]

    # The loop makes millions of small acyclic objects; the cyclic collector would only rescan
    # them, so it is paused (and restored) for the loop.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in tqdm(
            range(len(benchmark)), desc=f"perturb {names[0]}", unit="ex", disable=not progress
        ):
            fields = _parse_fields(fields_col[r], source=source, row=r + 1)
            perturbable = _perturbable(pert_col[r], fields, source=source, row=r + 1)
            protected = _protected(prot_col[r], source=source, row=r + 1)
            example_hasher = key_hasher(seed, names[r], ids[r])
            eligible.row(r)
            h = example_hasher.copy()
            h.update(original_part)
            src_rows.append(r)
            variants.append("original")
            ranks.append(0)
            draw_col.append(0)
            seeds.append(int.from_bytes(h.digest()[:8], "big") >> 1)
            fields_out.append(fields_col[r] if isinstance(fields_col[r], str) else _dumps(fields))
            n_occ.append(0)
            n_pert.append(0)
            list_offsets.append(len(p_field))

            # One pass over the example's occurrences: hash each, keep only those where a typo fires.
            word_hashers: dict[int, Any] = {}
            counts: dict[int, int] = {}
            fired_by: dict[tuple[int, int], list[tuple[str, int, int, int, Operation]]] = {}
            for name in perturbable:
                text = fields[name]
                part = field_parts.get(name)
                if part is None:
                    part = field_parts[name] = key_part(name)
                field_hashers: dict[int, Any] = {}
                k_of: dict[int, int] = {}
                shielded = _protected_spans(text, protected) if protected else ()
                skipped: dict[int, int] = {}
                ruled_out: dict[int, int] = {}  # occurrences the eligibility rules exclude
                eligible.field(text)
                for t, start, end in find(text):
                    k = k_of.get(t, 0)
                    k_of[t] = k + 1
                    if shielded and any(ps < end and start < pe for ps, pe in shielded):
                        skipped[t] = skipped.get(t, 0) + 1  # e.g. inside the JSQuAD answer span
                        continue
                    if eligible.active and eligible.excluded(start, end):
                        ruled_out[t] = ruled_out.get(t, 0) + 1
                        continue
                    fh = field_hashers.get(t)
                    if fh is None:
                        wh = word_hashers.get(t)
                        if wh is None:
                            wh = word_hashers[t] = example_hasher.copy()
                            wh.update(variant_parts[t])
                        fh = field_hashers[t] = wh.copy()
                        fh.update(part)
                    h = fh.copy()
                    h.update(int_parts[k] if k < 256 else key_part(k))
                    for d in draw_range:
                        if d == 0:
                            digest = h.digest()
                        else:
                            hd = h.copy()
                            hd.update(draw_parts[d])
                            digest = hd.digest()
                        u = int.from_bytes(digest[:8], "big")
                        at = find_interval(starts, u) - 1
                        if at < 0 or u >= ends[at]:
                            continue  # the common case: no typo for this occurrence
                        drawn_counts[kinds[at]] += 1
                        ctx = reader.occurrence(text, start, end) if reader else None
                        op = decide_(text[start:end], digest, probabilities, context=ctx)
                        if type(op) is Skipped:
                            reasons = skipped_counts.setdefault(op.op, {})
                            reasons[op.reason] = reasons.get(op.reason, 0) + 1
                        elif op is not None:
                            hit = fired_by.get((t, d))
                            if hit is None:
                                fired_by[(t, d)] = [(name, k, start, end, op)]
                            else:
                                hit.append((name, k, start, end, op))
                for t, n in k_of.items():
                    if n > skipped.get(t, 0) + ruled_out.get(t, 0):
                        counts[t] = counts.get(t, 0) + n - skipped.get(t, 0) - ruled_out.get(t, 0)
                total_protected += sum(skipped.values())
            if len(fields_out) >= FLUSH_ROWS:
                flush()
            if not counts:
                continue
            found_targets.update(counts)
            total_occ += sum(counts.values())
            encoded: list[tuple[str, str, str]] | None = None  # (key, '"key": ', value JSON)
            for t, d in sorted(fired_by):
                fired = fired_by[(t, d)]
                occurrences = counts[t]
                word_hasher = word_hashers[t]
                total_pert += len(fired)
                changed: dict[str, str] = {}
                for name in {f[0] for f in fired}:
                    text = fields[name]
                    pieces = []
                    cursor = 0
                    for fname, _, start, end, op in fired:
                        if fname == name:
                            pieces.append(text[cursor:start])
                            pieces.append(op.perturbed)
                            cursor = end
                    pieces.append(text[cursor:])
                    changed[name] = "".join(pieces)
                if encoded is None:
                    encoded = [
                        (key, _encode_text(key) + ": ", _dumps(value))
                        for key, value in sorted(fields.items())
                    ]
                fields_out.append(
                    "{"
                    + ", ".join(
                        ek + (_encode_text(changed[key]) if key in changed else ev)
                        for key, ek, ev in encoded
                    )
                    + "}"
                )
                for name, k, start, end, op in fired:
                    p_field.append(name)
                    p_occ.append(k)
                    p_start.append(start)
                    p_end.append(end)
                    p_orig.append(fields[name][start:end])
                    p_new.append(op.perturbed)
                    p_op.append(op.op)
                    p_pos.append(op.position)
                    p_ochar.append(op.original_char)
                    p_nchar.append(op.new_char)
                    p_rule.append(op.rule)
                    p_keys.append(op.keys)
                    p_reading.append(op.reading)
                    op_counts[op.op] += 1
                    if op.drawn:  # the kind drawn could not apply: this one was drawn instead
                        redrawn[f"{op.drawn}->{op.op}"] += 1
                    rules = rule_counts[op.op]
                    rules[op.rule] = rules.get(op.rule, 0) + 1
                    if keyboard and op.rule == "uniform":
                        cls = char_class(
                            (op.new_char if op.op == "insert" else op.original_char)[0]
                        )
                        fallback_counts[cls] = fallback_counts.get(cls, 0) + 1
                src_rows.append(r)
                variants.append(targets[t].variant)
                ranks.append(targets[t].rank)
                draw_col.append(d)
                if d:
                    word_hasher = word_hasher.copy()
                    word_hasher.update(draw_parts[d])
                seeds.append(int.from_bytes(word_hasher.digest()[:8], "big") >> 1)
                n_occ.append(occurrences)
                n_pert.append(len(fired))
                list_offsets.append(len(p_field))

    finally:
        if gc_was_enabled:
            gc.enable()
    flush()
    take = pa.array(src_rows, pa.int64())
    extra = [c for c in OPTIONAL_CARRIED if c in benchmark.columns]
    carried = pa.Table.from_pandas(
        benchmark[["benchmark", "example_id", *CARRIED_COLUMNS, *extra]].reset_index(drop=True),
        preserve_index=False,
    ).take(take)
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        "benchmark": carried.column("benchmark").cast(pa.string()),
        "example_id": pa.array([ids[i] for i in src_rows], pa.string()),
        "variant": pa.array(variants, pa.string()),
        "word_rank": pa.array(ranks, pa.int64()),
        "draw": pa.array(draw_col, pa.int32()),
        "seed": pa.array(seeds, pa.int64()),
        "fields": pa.chunked_array(field_chunks, pa.string()),
        "perturbations": pa.chunked_array(pert_chunks, pa.list_(PERTURBATION_TYPE)),
        "occurrences": pa.array(n_occ, pa.int64()),
        "perturbed_occurrences": pa.array(n_pert, pa.int64()),
    }
    for name in (*CARRIED_COLUMNS, *extra):
        columns[name] = carried.column(name).cast(CARRIED_TYPES[name])
    table = pa.table(columns).replace_schema_metadata(None)
    summary = {
        "benchmark": names[0],
        "language": language,
        "examples": len(benchmark),
        "target_words": len(targets),
        "target_words_found": len(found_targets),
        # target words with no (unprotected) occurrence here: the count, and the best-ranked
        # few by name (the full list would repeat most of the word list on a small benchmark)
        "targets_not_found": len(targets) - len(found_targets),
        "targets_not_found_top": [
            t.variant
            for t in sorted(
                (t for i, t in enumerate(targets) if i not in found_targets),
                key=lambda t: (t.rank, t.variant),
            )[:NOT_FOUND_SHOWN]
        ],
        "occurrences": total_occ,
        "perturbed_occurrences": total_pert,
        # over every draw: each occurrence is drawn `draws` times
        "perturbed_fraction": round(total_pert / (total_occ * draws), 6) if total_occ else 0.0,
        "draws": draws,
        "rows": table.num_rows,
        "perturbed_rows": table.num_rows - len(benchmark),
        "protected_occurrences": total_protected,
        "operations": op_counts,
        # the kind each typo draw picked, before a replacement / insertion with no eligible
        # place became a deletion and before skipped transpositions / conversions
        "drawn": drawn_counts,
        # how each kind's new text was chosen (ops.RULES): uniform, qwerty, romaji, ...
        "operations_by_rule": {op: dict(sorted(r.items())) for op, r in rule_counts.items()},
        # model keyboard: replacements / insertions made by today's rule, by script class
        "keyboard_fallback": dict(sorted(fallback_counts.items())),
        # drawn transpositions / conversions with nothing to make (left unchanged), by reason
        "skipped": {op: dict(sorted(r.items())) for op, r in skipped_counts.items()},
        **probabilities.as_dict(),
        "seed": seed,
        **eligible.summary(probabilities.model, redrawn),  # {} for uniform without rules
    }
    return PerturbResult(table, summary)
