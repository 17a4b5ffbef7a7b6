"""IMDB as the Stanford aclImdb archive distributes it: ``test/pos/<id>_<rating>.txt`` and
``test/neg/<id>_<rating>.txt`` (one review per file; ratings 7-10 positive, 1-4 negative), and
optionally ``train/pos`` / ``train/neg`` for few-shot demonstrations.

Example ids are ``imdb/<split>/<pos|neg>/<id>`` (the archive's own ids): the Hub copy's row
order is not the archive's, so numbered ids could not agree with the Hub path anyway.
"""

from __future__ import annotations

import re
from pathlib import Path

from evalpipe.benchmarks import mapping
from evalpipe.benchmarks.readers.base import (
    PublisherFiles,
    RawSplit,
    Reader,
    digest,
    read_text,
    unpacked_root,
)
from evalpipe.errors import InputError

_NAME = re.compile(r"(\d+)_(\d+)\.txt")
RATINGS = {"pos": range(7, 11), "neg": range(1, 5)}


def _split(folder: Path, split: str) -> tuple[RawSplit, list[Path]]:
    rows: list[dict] = []
    locations: list[str] = []
    files: list[Path] = []
    for polarity in ("neg", "pos"):
        sub = folder / polarity
        if not sub.is_dir():
            raise InputError(
                f"{sub}: folder not found; expected {split}/pos/*.txt and {split}/neg/*.txt "
                f"(the aclImdb archive layout)"
            )
        entries = []
        for path in sub.glob("*.txt"):
            match = _NAME.fullmatch(path.name)
            if not match:
                raise InputError(
                    f"{path}: expected a review file named <id>_<rating>.txt (e.g. 0_10.txt)"
                )
            review_id, rating = int(match.group(1)), int(match.group(2))
            if rating not in RATINGS[polarity]:
                raise InputError(
                    f"{path}: rating {rating} does not belong in {polarity}/ (expected "
                    f"{RATINGS[polarity].start}-{RATINGS[polarity].stop - 1})"
                )
            entries.append((review_id, path))
        for review_id, path in sorted(entries):
            rows.append(
                {
                    "text": read_text(path),
                    "label": 1 if polarity == "pos" else 0,
                    "id": f"{split}/{polarity}/{review_id}",
                }
            )
            locations.append(str(path))
            files.append(path)
    if not rows:
        raise InputError(f"{folder}: no review files in {split}/pos or {split}/neg")
    return RawSplit(split, rows, locations), files


def read(folder: Path) -> PublisherFiles:
    """Read ``test/{pos,neg}/*.txt`` and, when present, ``train/{pos,neg}/*.txt``.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/imdb``: the archive's ``aclImdb/`` folder, or the archive
        unpacked into it (``imdb/aclImdb/test/...``).

    Returns
    -------
    PublisherFiles
    """
    folder = unpacked_root(folder, "test", "aclImdb")
    test, files = _split(folder / "test", "test")
    fewshot = None
    if (folder / "train").is_dir():
        fewshot, train_files = _split(folder / "train", "train")
        files += train_files
    return PublisherFiles(
        evaluated=test,
        fewshot=fewshot,
        version=f"aclImdb v1 ({digest(files)})",
        missing=() if fewshot else ("train/pos, train/neg",),
        id_key="id",
    )


READER = Reader(
    name="imdb",
    read=read,
    mapper=mapping.imdb,
    layout=("test/pos/<id>_<rating>.txt", "test/neg/<id>_<rating>.txt", "train/... (optional)"),
    origin="ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
)
