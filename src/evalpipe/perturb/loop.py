"""The one perturb loop: every example of a benchmark, read once (its fields, perturbable
fields and protected strings), handed to a design; and the row seeds of every design.

A design is what makes an example's rows: ``words`` (:func:`evalpipe.perturb.perturb_frame`:
every occurrence of one target word per row), ``count`` (:mod:`evalpipe.perturb.count`:
exactly k eligible words per row) and ``control`` (:mod:`evalpipe.perturb.control`: the same
typos on matched random words, one row per typo row). A design is a function of one
:class:`Example` (``for_each_example`` runs it over the benchmark) or, for ``control``, which
follows the typo rows, reads the examples it needs through :meth:`BenchmarkRows.example`.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pandas as pd
from tqdm import tqdm

from evalpipe.arms import CONTROL
from evalpipe.perturb.benchmark_rows import parse_fields, perturbable_fields, protected_strings
from evalpipe.perturb.ops import key_hasher, key_part
from evalpipe.seeding import hashed_seed


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class Example(NamedTuple):
    """One benchmark row, read: ``r`` its index, ``fields`` the parsed texts, ``perturbable``
    the fields a typo may touch (sorted), ``protected`` the strings it may not."""

    r: int
    benchmark: str
    example_id: str
    stored: Any  # the row's ``fields`` as stored (a JSON string, or a mapping)
    fields: dict[str, Any]
    perturbable: list[str]
    protected: list[str]

    def original_fields(self) -> str:
        """The clean row's ``fields`` column: the stored JSON as it is, else the contract's."""
        return self.stored if isinstance(self.stored, str) else _dumps(self.fields)


class BenchmarkRows:
    """The columns of a benchmark frame every design reads, and each row's setup."""

    def __init__(self, benchmark: pd.DataFrame, *, source: str) -> None:
        self.source = source
        self.names = benchmark["benchmark"].astype(str).tolist()
        self.ids = benchmark["example_id"].astype(str).tolist()
        self.fields = benchmark["fields"].tolist()
        self.perturbable = benchmark["perturbable"].tolist()
        self.protected = (
            benchmark["protected"].tolist()
            if "protected" in benchmark.columns
            else [None] * len(benchmark)
        )

    def __len__(self) -> int:
        return len(self.ids)

    def example(self, r: int) -> Example:
        """Row ``r`` read and checked (InputError naming the file, row and column)."""
        row = r + 1
        fields = parse_fields(self.fields[r], source=self.source, row=row)
        perturbable = perturbable_fields(self.perturbable[r], fields, source=self.source, row=row)
        protected = protected_strings(self.protected[r], source=self.source, row=row)
        return Example(
            r, self.names[r], self.ids[r], self.fields[r], fields, perturbable, protected
        )


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector paused (and restored after).

    The designs make millions of small acyclic objects; the cyclic collector would only rescan
    them.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()


AHEAD = 64  # examples handed to for_each_example's ``ahead`` at a time


def for_each_example(
    rows: BenchmarkRows,
    design: Callable[[Example], None],
    *,
    desc: str,
    progress: bool,
    within: range | None = None,
    ahead: Callable[[list[Example]], None] | None = None,
) -> None:
    """Run ``design`` over every example (or those of ``within``), in order, the cyclic
    collector paused; ``ahead`` is first given each batch of ``AHEAD`` examples (e.g. to
    tokenise their texts back to back)."""
    with paused_gc():
        todo = range(len(rows)) if within is None else within
        if ahead is None:
            for r in tqdm(todo, desc=desc, unit="ex", disable=not progress):
                design(rows.example(r))
            return
        with tqdm(total=len(todo), desc=desc, unit="ex", disable=not progress) as bar:
            for lo in range(0, len(todo), AHEAD):
                batch = [rows.example(r) for r in todo[lo : lo + AHEAD]]
                ahead(batch)
                for ex in batch:
                    design(ex)
                bar.update(len(batch))


# The clean row's seed of each design. The three derivations differ (an empty key part, the
# bytes "original", the seeding module's hash with the arm's name) because each design was
# added on its own; they stay as they are so that every existing study's perturbed sets, and
# so its caches, metrics and tables, are reproduced byte for byte. A new design should use
# ``hashed_seed`` (as ``control`` does).
def original_seed(design: str, seed: int, benchmark: str, example_id: str) -> int:
    """The seed of an example's clean (``original``) row under ``design``.

    >>> original_seed("words", 42, "b", "1") != original_seed("count", 42, "b", "1")
    True
    """
    if design == CONTROL:
        return hashed_seed(seed, benchmark, example_id, CONTROL)
    h = key_hasher(seed, benchmark, example_id)
    h.update(key_part("") if design == "words" else b"original")
    return int.from_bytes(h.digest()[:8], "big") >> 1
