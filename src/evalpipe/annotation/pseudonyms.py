"""Pseudonymous raters: outside the web app's database an annotator is a salted SHA-256.

``pseudonym(id, salt) = sha256(id + salt)`` in hex (64 characters, ``^[a-f0-9]{64}$``), the
logging protocol's form. The salt is the campaign's secret: ``EVALPIPE_RATER_SALT``, else the
file ``.annotation-salt`` at the project root (made on first use, kept out of Git). With the salt
the web app maps a pseudonym back to its account (to send an item to the same raters again, or to
delete one person's data); without it the ids in batches, reports and metrics name nobody.

Only people are pseudonymised: LLM judges (``llm:``), the marker rater, the consensus and the
bundled samples' ``illustrative_*`` ids stay as they are; an adjudication keeps its prefix
(``adjudicated:<pseudonym>``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from evalpipe.annotation.schema import ADJUDICATED_PREFIX, Annotation, annotator_kind

PSEUDONYM_RE = re.compile(r"^[a-f0-9]{64}$")
SALT_ENV = "EVALPIPE_RATER_SALT"
SALT_FILE = ".annotation-salt"
ILLUSTRATIVE_PREFIX = "illustrative_"


def pseudonym(annotator_id: str, salt: str) -> str:
    """The salted SHA-256 of an annotator id, in hex.

    >>> pseudonym("ann_101", "pepper")[:16]
    '1fde85ac062da940'
    """
    return hashlib.sha256((annotator_id + salt).encode("utf-8")).hexdigest()


def is_pseudonym(annotator_id: str) -> bool:
    """Whether the id already has the pseudonym's form (64 lower-case hex digits)."""
    return bool(PSEUDONYM_RE.match(annotator_id))


def pseudonymise_id(annotator_id: str, salt: str) -> str:
    """A human's id as their pseudonym; other raters, pseudonyms and illustrative ids unchanged.

    >>> pseudonymise_id("llm:judge", "s"), pseudonymise_id("markers", "s")
    ('llm:judge', 'markers')
    >>> pseudonymise_id("adjudicated:kim", "s") == "adjudicated:" + pseudonym("kim", "s")
    True
    """
    kind = annotator_kind(annotator_id)
    if kind == "adjudicated":
        name = annotator_id.removeprefix(ADJUDICATED_PREFIX)
        return ADJUDICATED_PREFIX + pseudonymise_id(name, salt)
    if kind != "human" or is_pseudonym(annotator_id):
        return annotator_id
    if annotator_id.startswith(ILLUSTRATIVE_PREFIX):
        return annotator_id
    return pseudonym(annotator_id, salt)


def pseudonymise(annotations: Iterable[Annotation], salt: str) -> list[Annotation]:
    """The annotations with every human id replaced by :func:`pseudonymise_id`."""
    return [
        dataclasses.replace(a, annotator_id=pseudonymise_id(a.annotator_id, salt))
        for a in annotations
    ]


def rater_salt(root: str | Path = ".", *, create: bool = True) -> str:
    """The campaign's salt: ``EVALPIPE_RATER_SALT``, else ``root/.annotation-salt`` (created with
    32 random bytes, readable by the owner only, when missing and ``create``)."""
    env = os.environ.get(SALT_ENV, "").strip()
    if env:
        return env
    path = Path(root) / SALT_FILE
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    if not create:
        raise FileNotFoundError(f"{path}: no rater salt (set {SALT_ENV} or create the file)")
    salt = secrets.token_hex(32)
    path.write_text(salt + "\n", encoding="utf-8")
    path.chmod(0o600)
    return salt
