"""data/scored/<model>/pairs.parquet written one row group at a time, and read one arm's rows in
batches.

:func:`evalpipe.atomic.write_parquet` converts the whole pairs table to Arrow before writing it: at
10 million pairs that copy is as large as the table. :func:`write_pairs` converts and writes one
row group at a time and gives the same bytes: the same schema (no pandas metadata), the same
row groups (pyarrow's default of 1024 * 1024 rows), each written from one contiguous chunk per
column as ``pyarrow.parquet.write_table`` writes a slice of a one-chunk table, with the same
compression and statistics.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.errors import InputError

# pyarrow.parquet.write_table's rows per row group when none is given.
ROW_GROUP_SIZE = 1024 * 1024


def write_pairs(
    path: str | os.PathLike[str], pairs: pd.DataFrame, *, row_group_size: int = ROW_GROUP_SIZE
) -> None:
    """Write ``pairs`` atomically with the bytes of ``atomic.write_parquet(path, pairs)``, holding
    at most ``row_group_size`` rows in Arrow at a time.

    Parameters
    ----------
    path : the target file (written beside it, then renamed).
    pairs : the pairs table (:func:`evalpipe.scoring.pairs.build_pairs`), or any frame.
    row_group_size : rows per row group; only a test changes it (``write_parquet`` writes
        :data:`ROW_GROUP_SIZE`), to cross a row-group boundary on a small frame.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> frame = pd.DataFrame({"view": ["a", "b", "c"], "n": [1, 2, 3]})
    >>> write_pairs(folder / "streamed.parquet", frame)
    >>> atomic.write_parquet(folder / "whole.parquet", frame)
    >>> (folder / "streamed.parquet").read_bytes() == (folder / "whole.parquet").read_bytes()
    True
    """
    if row_group_size < 1:
        raise ValueError(f"row_group_size must be positive, got {row_group_size}")
    if pairs.empty:
        atomic.write_parquet(path, pairs)
        return
    # the types write_parquet's one conversion infers from the whole frame (an object column's
    # type from all of its values, not one slice's)
    schema = pa.Schema.from_pandas(pairs, preserve_index=False).remove_metadata()
    with (
        atomic.atomic_path(path) as tmp,
        pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=True) as writer,
    ):
        for start in range(0, len(pairs), row_group_size):
            rows = pairs.iloc[start : start + row_group_size]
            table = pa.Table.from_pandas(rows, schema=schema, preserve_index=False)
            writer.write_table(
                table.replace_schema_metadata(None).combine_chunks(),
                row_group_size=row_group_size,
            )


def read_arm_pairs(path: Path, columns: list[str], arms: list[str]) -> pd.DataFrame:
    """``columns`` of the pairs of ``arms``, read in batches: the rows of other arms (a
    defence's) and the other columns are never held."""
    if not path.exists():
        raise InputError(f"{path}: missing (run `dvc repro` for the stage that writes it)")
    try:
        handle = pq.ParquetFile(path)
        missing = [c for c in columns if c not in handle.schema_arrow.names]
        if missing:
            raise KeyError(f"no column {missing}")
        batches = [
            batch.filter(pc.is_in(batch.column("condition"), pa.array(arms)))
            for batch in handle.iter_batches(batch_size=1 << 20, columns=columns)
        ]
        schema = pa.schema([handle.schema_arrow.field(c) for c in columns])
        return pa.Table.from_batches(batches, schema=schema).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a damaged file or a missing column
        raise InputError(f"{path}: cannot read Parquet columns {columns}: {exc}") from exc
