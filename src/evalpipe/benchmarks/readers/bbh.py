"""BIG-Bench Hard as suzgunmirac/BIG-Bench-Hard distributes it: ``bbh/<subtask>.json``, each one
JSON object ``{"canary": ..., "examples": [{"input", "target"}, ...]}``.

There is no train split. When the publisher's ``cot-prompts/<subtask>.txt`` files are there too,
their three exemplars per subtask are the few-shot pool and all 6,511 examples are evaluated;
otherwise, as on the Hub path, three examples per subtask are held out of the evaluated set as
the pool (chosen by a hash of the example id). Options stay inside ``input`` as the publisher
wrote them; the Hub mapper moves the ``Options:`` block to ``choices``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from evalpipe.benchmarks import mapping
from evalpipe.benchmarks.readers.base import PublisherFiles, RawSplit, Reader, digest, read_text
from evalpipe.errors import InputError

EXPECTED = '{"canary": ..., "examples": [{"input": ..., "target": ...}, ...]}'
HOLDOUT = 3
COT_EXPECTED = (
    'the canary, a "-----" line, the task description, then blocks "Q: <input>\\nA: Let\'s think '
    'step by step. ... So the answer is <answer>." separated by blank lines'
)
_ANSWER = re.compile(r"So the answer is (.+?)\.?\s*$", re.S)


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


def read_cot_prompts(path: Path, subtask: str) -> tuple[list[dict], list[str]]:
    """The exemplars of one ``cot-prompts/<subtask>.txt`` as ``{input, target, subtask}`` rows.

    ``target`` is the exemplar's final answer (``So the answer is (D).`` -> ``(D)``): the
    answer-only demonstration, as the BBH paper's answer-only prompts use the same exemplars.

    Parameters
    ----------
    path : the file.
    subtask : its subtask.

    Returns
    -------
    (rows, locations)
    """
    text = read_text(path)
    _, sep, body = text.partition("\n-----\n")
    if not sep:
        raise InputError(f'{path}: no "-----" line after the canary; expected {COT_EXPECTED}')
    start = text.count("\n", 0, len(text) - len(body)) + 1
    rows, locations = [], []
    offset = 0
    for block in re.split(r"\n\n(?=Q: )", body):
        line = start + body.count("\n", 0, body.find(block, offset))
        offset = body.find(block, offset) + len(block)
        if not block.startswith("Q: "):
            continue  # the task description
        question, sep, reasoning = block[3:].partition("\nA: ")
        match = _ANSWER.search(reasoning.strip())
        if not sep or not match:
            raise InputError(
                f'{path}:{line}: exemplar without "A: ... So the answer is <answer>."; '
                f"expected {COT_EXPECTED}"
            )
        rows.append({"input": question, "target": match.group(1).strip(), "subtask": subtask})
        locations.append(f"{path}:{line}")
    if not rows:
        raise InputError(f'{path}: no "Q: " exemplars; expected {COT_EXPECTED}')
    return rows, locations


def read(folder: Path, subtasks: tuple[str, ...]) -> PublisherFiles:
    """Read every ``<subtask>.json`` of the 27 BBH subtasks present in ``folder``.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/bbh`` (the publisher's ``bbh/`` folder).
    subtasks : the subtasks the bbh spec lists (``evalpipe.benchmarks.BBH_SUBTASKS``).

    Returns
    -------
    PublisherFiles
        ``missing`` lists subtasks whose file is absent; a ``.json`` file whose name is not a
        BBH subtask is an error (a misplaced or renamed file would otherwise be skipped).
    """
    known = subtasks
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
    missing = [f"{s}.json" for s in known if s not in present]
    fewshot = None
    cot = folder / "cot-prompts"
    if cot.is_dir():
        shot_rows: list[dict] = []
        shot_locations: list[str] = []
        for subtask in present:
            path = cot / f"{subtask}.txt"
            if not path.is_file():
                missing.append(f"cot-prompts/{subtask}.txt")
                continue
            sub_rows, sub_locations = read_cot_prompts(path, subtask)
            shot_rows += sub_rows
            shot_locations += sub_locations
            files.append(path)
        fewshot = RawSplit("cot", shot_rows, shot_locations)
    return PublisherFiles(
        evaluated=RawSplit("test", rows, locations),
        fewshot=fewshot,
        version=f"suzgunmirac/BIG-Bench-Hard ({digest(files)})",
        missing=tuple(missing),
        holdout=0 if fewshot is not None else HOLDOUT,
    )


READER = Reader(
    name="bbh",
    read=read,
    per_subtask=True,
    mapper=mapping.bbh,
    layout=(
        "<subtask>.json for each of the 27 subtasks",
        "cot-prompts/<subtask>.txt (optional: the publisher's few-shot exemplars)",
    ),
    origin="github.com/suzgunmirac/BIG-Bench-Hard, bbh/",
)
