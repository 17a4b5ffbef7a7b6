"""What every command shares (the `evalpipe` tools and the DVC stages): the ``--params`` option,
turning an InputError into a clean exit, and the deprecation line of the old tool commands."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from evalpipe.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


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


def root_option(help: str | None = None) -> Callable[[F], F]:
    """``--root``, the project folder a command reads and writes under (default: here)."""
    return click.option(
        "--root", type=click.Path(file_okay=False), default=".", show_default=True, help=help
    )


def html_out_option(default: str) -> Callable[[F], F]:
    """``--out``, the HTML file a report command writes (``default``: where it goes under
    ``--root`` when not given)."""
    return click.option(
        "--out",
        type=click.Path(dir_okay=False),
        default=None,
        help=f"HTML file to write [default: {default} under --root].",
    )


def configure_logging() -> None:
    """INFO lines from the library's loggers on stderr, as the stages print them."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


def run_deprecated(
    command: click.Command, *, old: str, new: str, args: Sequence[str] | None = None
) -> None:
    """Run ``command`` under its old name after one line on stderr naming its new one.

    Parameters
    ----------
    command : the click command or group, now part of the ``evalpipe`` console script
    old : the deprecated way to call it, e.g. ``python -m stages.evaluate``
    new : how to call it now, e.g. ``evalpipe evaluate``
    args : its arguments (default: the command line's)
    """
    click.echo(f"deprecated: `{old}` will be removed in the next release; use `{new}`", err=True)
    configure_logging()
    command(args=None if args is None else list(args), prog_name=old)
