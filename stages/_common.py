"""What every stage command shares: params loading and turning InputError into a clean exit."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import pandas as pd

from evalpipe.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


def fail_cleanly(func: F) -> F:
    """Print an InputError's message (it names file, row, field, expectation) and exit 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


params_option = click.option(
    "--params",
    "params_path",
    default="params.yaml",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The params file to read.",
)


def read_parquet(path: Path, hint: str | None = None) -> pd.DataFrame:
    """A stage's Parquet input; InputError naming the file (and how to make it) otherwise."""
    if not path.exists():
        raise InputError(f"{path}: not found" + (f" ({hint})" if hint else ""))
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
