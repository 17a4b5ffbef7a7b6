"""Atomic, deterministic writers: write to a temporary file beside the target, then rename.

Nothing half-written is ever left at the target path, and the bytes depend only on the data.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it over ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Pretty, key-sorted JSON with a trailing newline (diff-friendly, byte-stable)."""
    write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> None:
    lines = [json.dumps(row, ensure_ascii=False, sort_keys=False) for row in rows]
    write_text(path, "".join(line + "\n" for line in lines))


def write_parquet(
    path: str | os.PathLike[str],
    df: pd.DataFrame | pa.Table,
    *,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write Parquet without pandas metadata or timestamps, so equal frames give equal bytes.

    ``metadata`` (str -> str) is the only key-value metadata written, e.g. the dataset version
    of a benchmark file; it must itself be deterministic.
    """
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata(dict(metadata) if metadata else None)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", write_statistics=True)


def write_csv(path: str | os.PathLike[str], df: pd.DataFrame) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
