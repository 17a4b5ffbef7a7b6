"""The columns of a perturbed set (docs/architecture.md, "Artifacts"), built one row at a time.

``perturb_frame`` hands :class:`PerturbedColumns` one :class:`PerturbedRow` per output row, its
edits included; the builder turns them into Arrow columns every ``FLUSH_ROWS`` rows (so the
Python strings are freed as it goes, which keeps the working set flat as a benchmark grows),
states each row's typo facts (:mod:`evalpipe.perturb.attribution`) and finally joins the columns
carried over from the benchmark rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from evalpipe.arms import TYPO
from evalpipe.perturb.attribution import typo_facts_columns
from evalpipe.perturb.ops import Operation

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
OPTIONAL_CARRIED = ("target", "protected")  # benchmark extras, carried when present
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
# What perturb states once per row about its edits (docs/perturbation.md, "Output").
TYPO_TYPES = {
    "n_typos": pa.int32(),
    "n_edited_chars": pa.int32(),
    "op": pa.string(),
    "script": pa.string(),
}
# The per-row columns a flush makes besides ``fields`` and ``perturbations`` (``source`` is
# the benchmark row, which the carried columns are taken by).
SCALAR_TYPES = {
    "source": pa.int64(),
    "variant": pa.string(),
    "word_rank": pa.int64(),
    "draw": pa.int32(),
    "condition": pa.string(),
    "seed": pa.int64(),
    "occurrences": pa.int64(),
    "perturbed_occurrences": pa.int64(),
    **TYPO_TYPES,
}
FLUSH_ROWS = 16_384
_MAX_STRING_DATA = 2**31 - 1  # a string array's int32 offsets address this many bytes


class Edit(NamedTuple):
    """One operation on one occurrence of the row's target word."""

    field: str
    occurrence: int  # the word's occurrences in the field, counted from 0
    start: int  # code-point offsets of the occurrence in the field's text
    end: int
    original: str  # the occurrence's text, ``text[start:end]``
    operation: Operation


class PerturbedRow(NamedTuple):
    """One output row: the benchmark row it comes from and what was done to it."""

    source: int  # position of the benchmark row (its carried columns)
    variant: str  # "original" or the target word's row label
    word_rank: int  # 0 for the original row
    draw: int
    seed: int
    # the JSON object of every field after the edits: str, UTF-8 bytes, or the end offset of
    # its UTF-8 bytes written into the builder's ``fields_data`` (see PerturbedColumns)
    fields: str | bytes | int
    occurrences: int  # unprotected occurrences of the word in the perturbable fields
    edits: Sequence[Edit]  # empty for the original row
    condition: str = TYPO  # the arm (evalpipe.arms): the plain perturbed sets' rows are TYPO


class RowGroupSink(Protocol):
    """Where :class:`PerturbedColumns` sends every full row group as soon as it is flushed."""

    row_group_size: int

    def write(self, table: pa.Table) -> None: ...

    def write_last(self, table: pa.Table) -> None: ...


def _by_name(record: Any, records: Sequence[tuple]) -> dict[str, Sequence]:
    """The records' columns by field name (``zip(*records)``: one pass in C)."""
    columns = zip(*records, strict=True) if records else [()] * len(record._fields)
    return dict(zip(record._fields, columns, strict=True))


class PerturbedColumns:
    """Collects :class:`PerturbedRow` records and builds the perturbed table from them.

    With a ``sink`` (and the ``benchmark`` the rows come from), every full row group of
    ``sink.row_group_size`` rows goes to ``sink.write`` as soon as a flush completes it, so only
    one row group of Arrow data is held; :meth:`table` then returns the rows left over.

    A row's ``fields`` may be written rather than handed over: its UTF-8 JSON appended to
    ``fields_data`` and the row's ``fields`` the length of ``fields_data`` after it. The words
    design writes each row's JSON there piece by piece (the clean document's slices and the
    perturbed words), so no row's bytes are built as an object and then copied again; a flush
    makes the column from that buffer as it is. Not mixed with rows whose ``fields`` are texts.

    Examples
    --------
    >>> cols = PerturbedColumns()
    >>> cols.add(PerturbedRow(0, "original", 0, 0, 7, '{"q": "the"}', 0, ()))
    >>> op = Operation("delete", 0, "t", None, "he")
    >>> cols.add(PerturbedRow(0, "the", 1, 0, 9, '{"q": "he"}', 1, [Edit("q", 0, 0, 3, "the", op)]))
    >>> bench = pd.DataFrame({"benchmark": ["b"], "example_id": ["1"], "subtask": [None],
    ...     "language": ["english"], "task_type": ["mc"], "perturbable": [["q"]],
    ...     "choices": [None], "answer": ["A"], "answers": [["A"]], "labels": [None]})
    >>> table = cols.table(bench)
    >>> table.column("n_edited_chars").to_pylist(), table.column("op").to_pylist()
    ([0, 1], [None, 'delete'])
    """

    def __init__(
        self, *, sink: RowGroupSink | None = None, benchmark: pd.DataFrame | None = None
    ) -> None:
        self._pending: list[PerturbedRow | tuple] = []
        self.fields_data = bytearray()  # the pending rows' written fields (see above)
        self._queued: list[ColumnBlock] | None = None  # add_block's rows not yet flushed
        self._queued_rows = 0
        # the flushed rows' one-chunk columns, by name, as the flushes' chunks
        self._scalars: dict[str, list[pa.Array]] = {name: [] for name in SCALAR_TYPES}
        self._flushed = 0
        self.made = 0  # rows flushed so far, taken or not
        self._fields: list[pa.Array] = []
        self._perturbations: list[pa.Array] = []
        self._carried: tuple[pa.Table, list[str], pa.Array] | None = None
        self.sink = sink
        self.benchmark = benchmark  # with a sink: the rows the full row groups are joined with

    def add(self, row: PerturbedRow | tuple) -> None:
        """Add a row: a PerturbedRow, or a plain tuple of all its fields (cheaper to build)."""
        self._pending.append(row)

    @property
    def pending(self) -> int:
        """Rows added since the last :meth:`flush`."""
        return len(self._pending) + self._queued_rows

    @property
    def flushed(self) -> int:
        """Rows turned into Arrow chunks and not yet taken (:meth:`take`)."""
        return self._flushed

    def flush(self) -> None:
        """Turn the pending rows into Arrow chunks and drop their Python objects."""
        if self._queued is not None:
            self._append(_join(self._queued))
            self._queued, self._queued_rows = [], 0
            return
        self._append(build_block(self._pending, self.fields_data))
        self._pending = []
        # a new buffer: the flushed column wraps the old one, which is never written again
        self.fields_data = bytearray()

    def add_block(self, block: ColumnBlock, sizes: Sequence[int]) -> None:
        """Add the rows of ``block`` (:func:`build_block` of consecutive examples, ``sizes`` rows
        each, the original row first), flushing where the perturb loop does (once
        ``FLUSH_ROWS`` are pending after an example's original row): the chunks, and so the
        file's bytes, are those of adding the rows one by one. Not mixed with :meth:`add`."""
        if self._queued is None:
            self._queued, self._queued_rows = [], 0
        start = at = 0
        for size in sizes:
            self._queued_rows += 1
            if self._queued_rows >= FLUSH_ROWS:
                self._queued.append(_slice(block, start, at + 1))
                self.flush()
                start = at + 1
            self._queued_rows += size - 1
            at += size
        if start < at:
            self._queued.append(_slice(block, start, at))

    def _append(self, block: ColumnBlock) -> None:
        out = self._scalars
        for name, values in block.scalars.items():
            out[name].append(values)
        self._flushed += len(block.fields)
        self.made += len(block.fields)
        self._fields.append(block.fields)
        self._perturbations.append(block.perturbations)
        sink = self.sink
        if sink is not None:
            while self.flushed >= sink.row_group_size:
                sink.write(self.take(sink.row_group_size, self.benchmark))

    def table(self, benchmark: pd.DataFrame) -> pa.Table:
        """The perturbed table: every row added, in order, with the columns of its benchmark row.

        Parameters
        ----------
        benchmark : the benchmark rows the records' ``source`` positions index (``benchmark,
            example_id`` and ``CARRIED_COLUMNS``; ``OPTIONAL_CARRIED`` when present).

        Returns
        -------
        pyarrow.Table with ``benchmark, example_id, variant, word_rank, draw, condition, seed, fields,
        perturbations, occurrences, perturbed_occurrences, n_typos, n_edited_chars, op,
        script`` and the carried columns, without schema metadata. With a sink, only the rows not yet
        written (the last, partial row group), for the sink's ``write_last``.
        """
        self.flush()
        return self.take(self.flushed, benchmark)

    def finish(self, benchmark: pd.DataFrame) -> tuple[pa.Table | None, int]:
        """The last rows, and how many rows were made: ``(table(benchmark), its rows)``, or, with a
        sink, ``(None, every row made)`` once the last rows went to its ``write_last``."""
        table = self.table(benchmark)
        if self.sink is None:
            return table, table.num_rows
        self.sink.write_last(table)
        return None, self.made

    def take(self, n: int, benchmark: pd.DataFrame) -> pa.Table:
        """The first ``n`` flushed rows as a table (:meth:`table`'s columns), dropped from here.

        The ``fields`` and ``perturbations`` columns keep the chunks :meth:`flush` made (cut at
        ``n``) and every other column is one chunk, exactly as in a slice of the whole table:
        the Parquet writer's pages follow the chunks, so a file written row group by row group
        from these tables has the bytes of the whole table written at once.
        """
        if self._carried is None:
            extra = [c for c in OPTIONAL_CARRIED if c in benchmark.columns]
            frame = benchmark[["benchmark", "example_id", *CARRIED_COLUMNS, *extra]]
            carried = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
            ids = pa.array(benchmark["example_id"].astype(str).tolist(), pa.string())
            self._carried = carried, extra, ids
        carried_all, extra, ids = self._carried
        rows = {
            name: _one_chunk(_take_chunks(chunks, n), SCALAR_TYPES[name])
            for name, chunks in self._scalars.items()
        }
        self._flushed -= n
        fields = _take_chunks(self._fields, n)
        perturbations = _take_chunks(self._perturbations, n)
        source = rows["source"]
        carried = carried_all.take(source)
        columns: dict[str, pa.Array | pa.ChunkedArray] = {
            "benchmark": carried.column("benchmark").cast(pa.string()),
            "example_id": ids.take(source),
            "variant": rows["variant"],
            "word_rank": rows["word_rank"],
            "draw": rows["draw"],
            "condition": rows["condition"],
            "seed": rows["seed"],
            "fields": pa.chunked_array(fields, pa.string()),
            "perturbations": pa.chunked_array(perturbations, pa.list_(PERTURBATION_TYPE)),
            "occurrences": rows["occurrences"],
            "perturbed_occurrences": rows["perturbed_occurrences"],
        }
        for name in TYPO_TYPES:
            columns[name] = rows[name]
        for name in (*CARRIED_COLUMNS, *extra):
            columns[name] = carried.column(name).cast(CARRIED_TYPES[name])
        return pa.table(columns).replace_schema_metadata(None)


class ColumnBlock(NamedTuple):
    """Rows as columns: what a flush makes of them (:func:`build_block`)."""

    scalars: dict[str, pa.Array]  # the one-chunk columns, by name (SCALAR_TYPES)
    fields: pa.Array
    perturbations: pa.Array


def build_block(
    rows: Sequence[PerturbedRow | tuple], fields_data: bytes | bytearray = b""
) -> ColumnBlock:
    """The columns of ``rows`` (PerturbedRows, or plain tuples of their fields): their typo
    facts stated, every column an Arrow array (one flush chunk each). ``fields_data`` holds
    the rows' written fields when their ``fields`` are end offsets (see PerturbedColumns);
    it is wrapped, not copied, so it must not change afterwards."""
    row = _by_name(PerturbedRow, rows)
    edits = list(itertools.chain.from_iterable(row["edits"]))
    edit = _by_name(Edit, edits)
    values = {**edit, **_by_name(Operation, edit["operation"])}
    children = {f.name: pa.array(values[f.name], f.type) for f in PERTURBATION_TYPE}
    structs = pa.StructArray.from_arrays(list(children.values()), fields=list(PERTURBATION_TYPE))
    n_rows = len(rows)
    counts = np.fromiter(map(len, row["edits"]), dtype=np.int64, count=n_rows)
    offsets = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    scalars = {
        name: pa.array(row[name], SCALAR_TYPES[name])
        for name in ("source", "variant", "word_rank", "draw", "condition", "seed", "occurrences")
    }
    scalars["perturbed_occurrences"] = pa.array(counts, pa.int64())
    facts = typo_facts_columns(
        children["op"], children["original_char"], children["new_char"], counts
    )
    for name, kind in TYPO_TYPES.items():
        scalars[name] = facts[name].cast(kind)
    fields = row["fields"]
    if fields and isinstance(fields[0], int):
        texts = _written(fields_data, fields)
    else:
        texts = _strings(fields)
    return ColumnBlock(scalars, texts, pa.ListArray.from_arrays(pa.array(offsets), structs))


def _written(data: bytes | bytearray, ends: Sequence[int]) -> pa.Array:
    """The string array of values written one after another into ``data``, each ending at
    the given offset (the first starting at 0), wrapping ``data`` without a copy.

    Examples
    --------
    >>> _written(bytearray('{"q": "漢"}{}'.encode()), [12, 14]).to_pylist()
    ['{"q": "漢"}', '{}']
    """
    if len(data) > _MAX_STRING_DATA:  # more than int32 offsets address: as _strings does
        starts = [0, *ends[:-1]]
        return pa.array([bytes(data[a:b]) for a, b in zip(starts, ends, strict=True)], pa.string())
    offsets = np.zeros(len(ends) + 1, dtype=np.int32)
    offsets[1:] = ends
    return pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data))


def _strings(values: Sequence[str | bytes]) -> pa.Array:
    """A string array of ``values``: str, or UTF-8 bytes, which are joined into the array's
    data buffer as they are, with no conversion per value.

    Examples
    --------
    >>> _strings(['{"q": "漢"}'.encode(), b"{}"]).to_pylist(), _strings(["{}"]).to_pylist()
    (['{"q": "漢"}', '{}'], ['{}'])
    """
    try:
        data = b"".join(values)  # type: ignore[arg-type]
    except TypeError:  # str values (the count and control designs)
        return pa.array(values, pa.string())
    if len(data) > _MAX_STRING_DATA:
        return pa.array(values, pa.string())
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int32, count=len(values)), out=offsets[1:])
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(data))


def write_block(block: ColumnBlock, path: Path) -> None:
    """Write ``block`` to ``path`` as an Arrow IPC file (:func:`read_block` maps it back).

    Worker processes hand their rows to the parent this way: a pickle through the pool's
    pipe is copied several times on both sides and read 64 KiB at a time by the parent's
    result thread, which made that thread the busiest part of the parent (about 2.5 s of CPU
    for the Japanese side-by-side input's 510 MB of rows). A file is written once, and the
    parent maps it.
    """
    batch = pa.RecordBatch.from_arrays(
        [*block.scalars.values(), block.fields, block.perturbations],
        names=[*block.scalars, "fields", "perturbations"],
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)


def read_block(path: Path) -> ColumnBlock:
    """The block :func:`write_block` wrote to ``path``, its arrays on the file's memory map
    (no copy); the file is removed (the map keeps its pages until the arrays are freed)."""
    with pa.memory_map(str(path)) as source:
        batch = pa.ipc.open_file(source).get_batch(0)
    path.unlink()
    names = batch.schema.names
    scalars = {name: batch.column(i) for i, name in enumerate(names[:-2])}
    return ColumnBlock(scalars, batch.column(len(names) - 2), batch.column(len(names) - 1))


def _slice(block: ColumnBlock, lo: int, hi: int) -> ColumnBlock:
    return ColumnBlock(
        {name: values.slice(lo, hi - lo) for name, values in block.scalars.items()},
        block.fields.slice(lo, hi - lo),
        block.perturbations.slice(lo, hi - lo),
    )


def _join(blocks: list[ColumnBlock]) -> ColumnBlock:
    """The blocks' rows as one block (one chunk per Arrow column)."""
    if not blocks:
        return build_block([])
    return ColumnBlock(
        {name: pa.concat_arrays([b.scalars[name] for b in blocks]) for name in blocks[0].scalars},
        pa.concat_arrays([b.fields for b in blocks]),
        pa.concat_arrays([b.perturbations for b in blocks]),
    )


def _one_chunk(chunks: list[pa.Array], kind: pa.DataType) -> pa.Array:
    if len(chunks) == 1:
        return chunks[0]
    return pa.concat_arrays(chunks) if chunks else pa.array([], kind)


def _take_chunks(chunks: list[pa.Array], n: int) -> list[pa.Array]:
    """Remove the first ``n`` rows of ``chunks`` (in place) and return them, chunk by chunk."""
    taken: list[pa.Array] = []
    while chunks and (n > 0 or not len(chunks[0])):
        chunk = chunks[0]
        if len(chunk) <= n:
            taken.append(chunks.pop(0))
            n -= len(chunk)
        else:
            taken.append(chunk.slice(0, n))
            chunks[0] = chunk.slice(n)
            n = 0
    return taken
