"""The annotation web app's storage: one SQLite database in WAL mode, one area per module.

- :mod:`.db`: schema, per-thread connections, the write transaction, meta, backup;
- :mod:`.accounts`: accounts, tokens, sessions;
- :mod:`.queue`: items, assignments, queues, top-ups and releases;
- :mod:`.ratings`: ratings, skips, comments, flags, drafts;
- :mod:`.review`: adjudications;
- :mod:`.training`: training rounds and qualification attempts.

:class:`Store` is the one entry point (the app, the CLI, the tests and the perf scripts all take a
``Store``). It is assembled from the areas as mixins over :class:`~.db.Database`, not by
composition, because the areas share more than an interface: one connection per thread and one
``BEGIN IMMEDIATE`` transaction in which a write checks several tables at once (saving a rating
checks the assignment, clears the draft and the skip; a top-up reads ratings, sessions and
assignments and writes assignments in one commit). Each mixin reaches the shared connection
through ``self``; composed parts would each need that connection handed to them and a facade
forwarding some fifty methods.
"""

from __future__ import annotations

from evalpipe.annotation.web.store.accounts import (
    ANNOTATOR_ID_RE,
    RESERVED_IDS,
    ROLES,
    SESSION_HOURS,
    Accounts,
    Annotator,
    check_annotator_id,
)
from evalpipe.annotation.web.store.db import (
    MAX_ACTIVE_MS_PER_ITEM,
    MAX_ACTIVE_MS_PER_VISIT,
    SCHEMA,
    Database,
    utc_now,
)
from evalpipe.annotation.web.store.queue import Queue, Slot
from evalpipe.annotation.web.store.ratings import (
    MAX_COMMENT_CHARS,
    Rating,
    Ratings,
    comment_too_long,
    to_annotations,
)
from evalpipe.annotation.web.store.review import Adjudication, Review
from evalpipe.annotation.web.store.training import Training


class Store(Accounts, Queue, Ratings, Review, Training):
    """All reads and writes of the annotation database (see the package docstring).

    Parameters
    ----------
    path:
        The SQLite file (created with its folder if missing).
    synchronous:
        ``"FULL"`` (default): each commit is fsynced before the response, so an acknowledged
        rating survives a power cut. ``"NORMAL"``: commits reach the OS before the response and
        are fsynced at checkpoints; still nothing lost if the server process is killed.
    """


__all__ = [
    "ANNOTATOR_ID_RE",
    "MAX_ACTIVE_MS_PER_ITEM",
    "MAX_ACTIVE_MS_PER_VISIT",
    "MAX_COMMENT_CHARS",
    "RESERVED_IDS",
    "ROLES",
    "SCHEMA",
    "SESSION_HOURS",
    "Adjudication",
    "Annotator",
    "Database",
    "Rating",
    "Slot",
    "Store",
    "check_annotator_id",
    "comment_too_long",
    "to_annotations",
    "utc_now",
]
