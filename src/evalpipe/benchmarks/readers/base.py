"""What every publisher-file reader returns, and the small parsing helpers they share.

A reader turns one benchmark's folder of publisher files (``data/raw/benchmarks/<name>/``, the
files exactly as the publisher distributes them) into raw-schema rows plus, for each row, the
place it came from (``file:line``), so that a mapper's error names the line of the publisher's
file. Rows keep the publisher's own field names; the reader's ``mapper`` turns them into the
common example schema (``evalpipe.benchmarks.mapping``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalpipe.benchmarks.rows import Mapper
from evalpipe.errors import InputError


@dataclass(frozen=True)
class RawSplit:
    """Rows of one split, each with its location in the publisher's files.

    ``split`` is the name used in example ids (``<benchmark>/<split>/...``); it follows the Hub
    path's names (JGLUE's valid set is ``test``, as llm-jp-eval calls it) so that the same
    question gets the same id whichever source it was read from.
    """

    split: str
    rows: list[dict[str, Any]]
    locations: list[str]


@dataclass(frozen=True)
class PublisherFiles:
    """A benchmark read from its publisher's files.

    Attributes
    ----------
    evaluated : the evaluated split.
    fewshot : the train/dev split for few-shot demonstrations, or None when its file is absent.
    version : the dataset version as the files state it (e.g. ``JGLUE v1.1``), with a short
        content digest of the files read, so two different copies never share a version string.
    missing : optional files that were not found (the few-shot source), for the user's message.
    holdout : evaluated examples per subtask to hold out as the few-shot pool when there is no
        few-shot split (BBH, as on the Hub path).
    id_key : raw-row key holding a stable example id (IMDB's ``<split>/<pos|neg>/<id>``), or None
        for numbered ids.
    """

    evaluated: RawSplit
    fewshot: RawSplit | None
    version: str
    missing: tuple[str, ...] = ()
    holdout: int = 0
    id_key: str | None = None


@dataclass(frozen=True)
class Reader:
    """A registered publisher-file reader: how to read a folder, how to map its rows, what it
    expects. ``read(folder)``, or ``read(folder, subtasks)`` when ``per_subtask`` (one file per
    subtask the benchmark's spec lists: BBH, MMLU); call it through :meth:`load`."""

    name: str
    read: Callable[..., PublisherFiles]
    mapper: Mapper
    layout: tuple[str, ...] = field(default=())  # expected files, shown when the folder is wrong
    origin: str = ""  # where the publisher distributes the files
    per_subtask: bool = False

    def load(self, folder: Path, *, subtasks: Sequence[str] = ()) -> PublisherFiles:
        """The files in ``folder``; ``subtasks``: the spec's subtask list (``per_subtask``)."""
        return self.read(folder, tuple(subtasks)) if self.per_subtask else self.read(folder)


@dataclass(frozen=True)
class ListedFilesReader:
    """A generic registered reader (``json``): it reads the files a spec lists
    (``sources.files.test`` / ``fewshot``, glob patterns) and leaves mapping to the spec's mapper.
    ``read(folder, patterns, *, options) -> raw rows`` (a row may carry ``subtask``)."""

    name: str
    read: Callable[..., list[dict[str, Any]]]


def require_file(folder: Path, name: str, reader: str) -> Path:
    """``folder / name``, or an InputError saying which publisher file is expected there."""
    path = folder / name
    if not path.is_file():
        raise InputError(
            f"{path}: file not found; the {reader} reader expects the publisher's file "
            f"{name!r} in {folder}"
        )
    return path


def unpacked_root(folder: Path, marker: str, top: str) -> Path:
    """The folder holding ``marker``: ``folder`` itself, or the archive's own top folder in it.

    Unpacking a publisher's archive into ``folder`` leaves its top folder in between
    (``aclImdb_v1.tar.gz`` -> ``imdb/aclImdb/test/``, MMLU's ``data.tar`` -> ``mmlu/data/test/``,
    a copy of JGLUE's ``datasets/jnli-v1.1/`` -> ``jnli/jnli-v1.1/``); both layouts are read.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/<name>``.
    marker : a glob that matches in the right folder (``test``, ``valid-v*.json``).
    top : a glob for the archive's top folder (``aclImdb``, ``data``, ``jnli-v*``).

    Returns
    -------
    Path
        ``folder`` when ``marker`` matches there or nothing else fits; else the one top
        folder in which ``marker`` matches.

    Raises
    ------
    InputError
        When several top folders match (several versions side by side).
    """
    if any(folder.glob(marker)):
        return folder
    inner = sorted(p for p in folder.glob(top) if p.is_dir() and any(p.glob(marker)))
    if len(inner) > 1:
        raise InputError(
            f"{folder}: several folders hold {marker} ({', '.join(p.name for p in inner)}); "
            "keep one"
        )
    return inner[0] if inner else folder


def digest(paths: Iterable[Path]) -> str:
    """First 12 hex digits of sha256 over the files' names and bytes (in the given order)."""
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode("utf-8") + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a BOM is dropped); an InputError when it is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def read_jsonl(path: Path, *, expected: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a JSON-lines file and their ``file:line`` locations (blank lines skipped).

    Parameters
    ----------
    path : the file.
    expected : what one line should be, for the error message (e.g. ``{"question", "answer"}``).

    Returns
    -------
    (rows, locations)

    Raises
    ------
    InputError
        A line that is not one JSON object, naming the file and line.
    """
    rows: list[dict[str, Any]] = []
    locations: list[str] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise InputError(
                f"{path}:{number}: not valid JSON ({exc}); expected one JSON object per line "
                f"{expected}"
            ) from None
        if not isinstance(value, dict):
            raise InputError(
                f"{path}:{number}: expected one JSON object per line {expected}, "
                f"got {type(value).__name__}"
            )
        rows.append(value)
        locations.append(f"{path}:{number}")
    return rows, locations


def require_keys(row: dict[str, Any], keys: Iterable[str], where: str, expected: str) -> None:
    """An InputError naming the first missing key and the expected record layout."""
    for key in keys:
        if key not in row:
            raise InputError(
                f'{where}: field "{key}" is missing; expected {expected} (found keys {sorted(row)})'
            )


def load_dataset_rows(*args: Any, what: str, **kwargs: Any) -> list[dict[str, Any]]:
    """``datasets.load_dataset(*args, **kwargs)`` as a list of rows; any failure becomes an
    InputError naming ``what`` (``datasets`` is imported here: 1.5 s that bundled samples skip)."""
    import datasets

    datasets.disable_progress_bars()
    try:
        ds = datasets.load_dataset(*args, **kwargs)
    except InputError:
        raise
    except Exception as exc:  # datasets raises many types; the user needs the file and the cause
        raise InputError(
            f"{what}: could not load with datasets.load_dataset: {type(exc).__name__}: {exc}"
        ) from exc
    return ds.to_list()


def read_json_rows(path: str | Path, *, json_field: str | None = None) -> list[dict[str, Any]]:
    """Rows of a JSON (list of objects, or an object holding the list under ``json_field``) or
    JSONL file, read through ``datasets.load_dataset("json", ...)``.

    Parameters
    ----------
    path : the file.
    json_field : key of the list when the file is one JSON object (ignored for ``.jsonl``).

    Returns
    -------
    list of dict
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return []
    kwargs: dict[str, Any] = {"data_files": {"train": str(path)}, "split": "train"}
    if path.suffix == ".jsonl":
        json_field = None  # one object per line: there is no enclosing object to look into
    if json_field:
        kwargs["field"] = json_field
    try:
        return load_dataset_rows("json", what=str(path), **kwargs)
    except InputError:
        _explain_json(path, text, json_field)
        raise


def read_bundled_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a bundled sample file (small JSONL), the same as :func:`read_json_rows` gives.

    ``datasets``' JSON builder parses JSONL with pyarrow's JSON reader; calling that reader
    directly returns the same rows, types and key order (tests/test_benchmarks.py compares the
    two on every bundled file) without importing ``datasets``, which cost each ``benchmarks@``
    stage 1.5 s (perf/pipeline_wall.py). Anything pyarrow rejects goes through
    :func:`read_json_rows`, so its handling and error messages stay the same.

    Parameters
    ----------
    path : the JSONL file.

    Returns
    -------
    list of dict
    """
    path = Path(path)
    if not path.is_file() or path.suffix != ".jsonl":
        return read_json_rows(path)
    if not path.read_text(encoding="utf-8").strip():
        return []
    import pyarrow.json as paj

    try:
        return paj.read_json(path).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return read_json_rows(path)


def _explain_json(path: Path, text: str, json_field: str | None) -> None:
    """Raise an InputError naming the first line that is not valid JSON (datasets' own errors
    name an Arrow row, not a line of the file)."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if obj is not None:
        if isinstance(obj, dict) and json_field and not isinstance(obj.get(json_field), list):
            raise InputError(f'{path}: field "{json_field}": expected a list of examples')
        if isinstance(obj, dict) and not json_field:
            raise InputError(
                f"{path}: the file is one JSON object; set json_field to the key "
                f"that holds the list of examples (keys: {sorted(obj)})"
            )
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object per line")


def expand(folder: Path, patterns: Sequence[str]) -> list[Path]:
    """The files matching ``patterns`` under ``folder``, each pattern's matches sorted by name."""
    found: list[Path] = []
    for pattern in patterns:
        for path in sorted(folder.glob(pattern)):
            if path.is_file() and path not in found:
                found.append(path)
    return found
