"""What every stage command shares: params loading and turning InputError into a clean exit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalpipe.commands import (
    configure_logging,
    fail_cleanly,
    html_out_option,
    params_option,
    root_option,
)
from evalpipe.errors import InputError

__all__ = ["fail_cleanly", "html_out_option", "params_option", "read_parquet", "root_option"]

configure_logging()


def read_parquet(path: Path, hint: str | None = None) -> pd.DataFrame:
    """A stage's Parquet input; InputError naming the file (and how to make it) otherwise."""
    if not path.exists():
        raise InputError(f"{path}: not found" + (f" ({hint})" if hint else ""))
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
