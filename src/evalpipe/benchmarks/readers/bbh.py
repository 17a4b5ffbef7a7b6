"""BIG-Bench Hard as suzgunmirac/BIG-Bench-Hard distributes it: ``bbh/<subtask>.json``, each one
JSON object ``{"canary": ..., "examples": [{"input", "target"}, ...]}``.

There is no train split, so, as on the Hub path, three examples per subtask are held out of the
evaluated set as the few-shot pool (chosen by a hash of the example id). Options stay inside
``input`` as the publisher wrote them; the Hub mapper moves the ``Options:`` block to
``choices``.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalpipe.benchmarks import mapping
from evalpipe.benchmarks.readers.base import PublisherFiles, RawSplit, Reader, digest, read_text
from evalpipe.errors import InputError

EXPECTED = '{"canary": ..., "examples": [{"input": ..., "target": ...}, ...]}'
HOLDOUT = 3


def _subtasks() -> tuple[str, ...]:
    from evalpipe.benchmarks.spec import BBH_SUBTASKS

    return BBH_SUBTASKS


def _read_subtask(path: Path, subtask: str) -> tuple[list[dict], list[str]]:
    try:
        obj = json.loads(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); expected {EXPECTED}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("examples"), list):
        found = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise InputError(
            f'{path}: expected one JSON object with an "examples" list, {EXPECTED}; found {found}'
        )
    rows, locations = [], []
    for i, example in enumerate(obj["examples"]):
        where = f"{path}: examples[{i}]"
        if not isinstance(example, dict) or not {"input", "target"} <= set(example):
            raise InputError(f'{where}: expected an object {{"input": ..., "target": ...}}')
        rows.append({"input": example["input"], "target": example["target"], "subtask": subtask})
        locations.append(where)
    return rows, locations


def read(folder: Path) -> PublisherFiles:
    """Read every ``<subtask>.json`` of the 27 BBH subtasks present in ``folder``.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/bbh`` (the publisher's ``bbh/`` folder).

    Returns
    -------
    PublisherFiles
        ``missing`` lists subtasks whose file is absent; a ``.json`` file whose name is not a
        BBH subtask is an error (a misplaced or renamed file would otherwise be skipped).
    """
    known = _subtasks()
    if not folder.is_dir():
        raise InputError(f"{folder}: folder not found; expected the bbh/<subtask>.json files")
    unknown = sorted(p.name for p in folder.glob("*.json") if p.stem not in known)
    if unknown:
        raise InputError(
            f"{folder / unknown[0]}: not a BIG-Bench Hard subtask file; expected "
            f"<subtask>.json for the subtasks {', '.join(known)}"
        )
    present = [s for s in known if (folder / f"{s}.json").is_file()]
    if not present:
        raise InputError(
            f"{folder}: no BIG-Bench Hard subtask files; expected <subtask>.json "
            f"(e.g. boolean_expressions.json) from the bbh/ folder of suzgunmirac/BIG-Bench-Hard"
        )
    rows: list[dict] = []
    locations: list[str] = []
    for subtask in present:
        sub_rows, sub_locations = _read_subtask(folder / f"{subtask}.json", subtask)
        rows += sub_rows
        locations += sub_locations
    files = [folder / f"{s}.json" for s in present]
    return PublisherFiles(
        evaluated=RawSplit("test", rows, locations),
        fewshot=None,
        version=f"suzgunmirac/BIG-Bench-Hard ({digest(files)})",
        missing=tuple(f"{s}.json" for s in known if s not in present),
        holdout=HOLDOUT,
    )


READER = Reader(
    name="bbh",
    read=read,
    mapper=mapping.bbh,
    layout=("<subtask>.json for each of the 27 subtasks",),
    origin="github.com/suzgunmirac/BIG-Bench-Hard, bbh/",
)
