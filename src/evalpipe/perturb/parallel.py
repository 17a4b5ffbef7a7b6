"""Run a function over contiguous ranges of examples in forked worker processes, results in order.

Every example's randomness is hashed from its own key (:mod:`evalpipe.perturb.ops`), so the
rows of an example do not depend on the others and ranges of examples can be perturbed
anywhere; the caller joins the results in range order, which gives the rows of a single
process. Workers are forked (Linux), so they inherit what the parent already built: the word
finder, MeCab/UniDic and the homophone tables are loaded once, before the fork, and shared
copy-on-write by every worker. At most ``2 * jobs`` ranges are in flight, so the results
waiting for the parent stay a few ranges long whatever the benchmark's size.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

# The work of the pool being run: set before the fork, so every worker inherits it (a closure
# cannot be pickled, a module-level name can).
_work: Callable[[int, int], Any] | None = None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _run(lo: int, hi: int) -> Any:
    assert _work is not None
    return _work(lo, hi)


def ranges(n: int, size: int) -> list[tuple[int, int]]:
    """``[0, n)`` cut into consecutive ranges of ``size`` (the last may be shorter).

    >>> ranges(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    """
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def map_ranges(work: Callable[[int, int], Any], n: int, *, jobs: int, size: int) -> Iterator[Any]:
    """``work(lo, hi)`` for every range of ``ranges(n, size)``, on ``jobs`` forked processes,
    yielded in range order. An exception in a worker is raised here (the pool is then stopped)."""
    global _work
    if _work is not None:
        raise RuntimeError("map_ranges is not re-entrant")
    cut = ranges(n, size)
    _work = work
    try:
        # no more workers than ranges: a small benchmark on a many-core machine forks few
        pool = multiprocessing.get_context("fork").Pool(max(1, min(jobs, len(cut))))
    finally:
        _work = None  # the workers have their copy; the parent needs none
    with pool:  # terminates the workers on exit, also on an error
        pending: deque = deque()
        todo = iter(cut)
        for lo_hi in todo:
            pending.append(pool.apply_async(_run, lo_hi))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            result = pending.popleft().get()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.apply_async(_run, nxt))
            yield result
