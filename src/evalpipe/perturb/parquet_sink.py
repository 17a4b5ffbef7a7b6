"""A perturbed set written to Parquet row group by row group, with the bytes of a single write.

``atomic.write_parquet`` writes a whole table with ``pyarrow.parquet.write_table``, which cuts it
into row groups of ``ROW_GROUP_ROWS`` rows. :class:`ParquetRowGroups` is handed the same row
groups one at a time (:class:`evalpipe.perturb.columns.PerturbedColumns` with a sink) and writes
them with the same writer options to a temporary file renamed over the target on success
(:func:`parquet_row_groups`), so a
benchmark of any size needs memory for one row group, and the file is byte for byte the one
the whole table would have given.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evalpipe import atomic

# pyarrow's row group size when write_table is given none (its documented default): the
# streamed file must cut its row groups where a single write would.
ROW_GROUP_ROWS = 1024 * 1024


class ParquetRowGroups:
    """Appends row groups to one Parquet file with ``atomic.write_parquet``'s writer options.

    Open it with :func:`parquet_row_groups`, which makes the write atomic.
    """

    def __init__(self, path: Path, *, row_group_size: int = ROW_GROUP_ROWS) -> None:
        if row_group_size < 1:
            raise ValueError(f"row_group_size must be >= 1, found {row_group_size}")
        self.path = path
        self.row_group_size = row_group_size
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        """Append ``table`` in row groups of ``row_group_size`` rows (schema metadata dropped)."""
        table = table.replace_schema_metadata(None)
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self.path, table.schema, compression="zstd", write_statistics=True
            )
        self._writer.write_table(table, row_group_size=self.row_group_size)
        self.rows += table.num_rows

    def write_last(self, table: pa.Table) -> None:
        """Append the rows left after the full row groups. An empty remainder adds nothing (a
        whole-table write makes no empty row group) unless nothing was written at all."""
        if table.num_rows or self._writer is None:
            self.write(table)

    @property
    def started(self) -> bool:
        return self._writer is not None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


@contextlib.contextmanager
def parquet_row_groups(
    path: str | os.PathLike[str], *, row_group_size: int = ROW_GROUP_ROWS
) -> Iterator[ParquetRowGroups]:
    """Write row groups to ``path`` atomically: a temporary file beside it, renamed over it when
    the block ends cleanly, removed on an exception (nothing half-written at ``path``).

    Every :meth:`ParquetRowGroups.write` but the last must hand exactly ``row_group_size`` rows
    for the bytes to equal ``atomic.write_parquet`` of the whole table (whose row groups are
    ``ROW_GROUP_ROWS`` rows, the default here).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with parquet_row_groups(Path(tmp) / "t.parquet", row_group_size=2) as sink:
    ...         sink.write(pa.table({"a": [1, 2]}))
    ...         sink.write_last(pa.table({"a": [3]}))
    ...     pq.ParquetFile(Path(tmp) / "t.parquet").num_row_groups, sink.rows
    (2, 3)
    """
    with atomic.atomic_path(path) as tmp:
        sink = ParquetRowGroups(tmp, row_group_size=row_group_size)
        try:
            yield sink
        finally:
            sink.close()
        if not sink.started:
            raise RuntimeError(f"{path}: no rows were written (the last call is write_last)")
