"""Bounded concurrency in order: a fixed set of worker tasks over a list of items, with results
handed out chunk by chunk, in item order, while the next chunk's items are already in flight.

The OpenAI-compatible backend runs its requests through it: ``workers`` is the concurrency (the
event loop holds that many tasks, however many requests there are), and a chunk is what the
engine checkpoints to the generation cache. Workers may run ahead of the chunk being waited for
by ``lookahead`` items, so the server is never left without work while a chunk's last answers
arrive or while the caller writes its checkpoint; a run killed at any moment loses at most one
chunk plus ``lookahead`` answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class OrderedWorkers(Generic[T, R]):
    """``fn`` over ``items`` with ``workers`` tasks; :meth:`chunk` returns chunk ``k``'s results.

    Parameters
    ----------
    items:
        What to process, in order (workers take the next one when they are free).
    fn:
        The coroutine function for one item.
    workers:
        Tasks running ``fn`` at once.
    every:
        Items per chunk.
    lookahead:
        Items past the end of the chunk being waited for that workers may already start.

    Examples
    --------
    >>> async def double(x):
    ...     return 2 * x
    >>> async def main():
    ...     async with OrderedWorkers([1, 2, 3], double, workers=2, every=2) as run:
    ...         return [await run.chunk(0), await run.chunk(1)]
    >>> asyncio.run(main())
    [[2, 4], [6]]
    """

    def __init__(
        self,
        items: Sequence[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        workers: int,
        every: int,
        lookahead: int = 0,
    ) -> None:
        self.items, self.fn = items, fn
        self.every = max(1, every)
        self.lookahead = max(0, lookahead)
        self.n_chunks = -(-len(items) // self.every)
        self.out: list[Any] = [None] * len(items)
        self._left = [min(self.every, len(items) - k * self.every) for k in range(self.n_chunks)]
        self._done = [asyncio.Event() for _ in range(self.n_chunks)]
        self._next = 0
        self._released = min(len(items), self.every + self.lookahead)
        self._gate = asyncio.Event()
        self._failure: BaseException | None = None
        self._workers = max(1, min(workers, len(items)))
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> OrderedWorkers[T, R]:
        self._tasks = [asyncio.create_task(self._work()) for _ in range(self._workers)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        # on a failure or an early exit, nothing may go on retrying in the background
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _work(self) -> None:
        try:
            while True:
                while self._next >= self._released and self._next < len(self.items):
                    await self._gate.wait()
                if self._next >= len(self.items):
                    return
                i = self._next
                self._next += 1
                self.out[i] = await self.fn(self.items[i])
                k = i // self.every
                self._left[k] -= 1
                if not self._left[k]:
                    self._done[k].set()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if self._failure is None:
                self._failure = exc
            for event in self._done:
                event.set()  # wake the caller, who raises it
            raise

    async def chunk(self, k: int) -> list[R]:
        """Chunk ``k``'s results, in item order, once all of them are in; the first failure of
        any worker is raised here. Asking for chunk ``k`` says chunks before it are dealt with,
        so the workers may go on to ``lookahead`` items past its end."""
        released = min(len(self.items), (k + 1) * self.every + self.lookahead)
        if released > self._released:
            self._released = released
            gate, self._gate = self._gate, asyncio.Event()
            gate.set()
        await self._done[k].wait()
        if self._failure is not None:
            raise self._failure
        return self.out[k * self.every : (k + 1) * self.every]


async def bounded_map(
    items: Sequence[T], fn: Callable[[T], Awaitable[R]], *, workers: int
) -> list[R]:
    """``fn`` over every item with at most ``workers`` running at once, results in item order.

    Examples
    --------
    >>> async def square(x):
    ...     return x * x
    >>> asyncio.run(bounded_map([1, 2, 3], square, workers=2))
    [1, 4, 9]
    """
    if not items:
        return []
    async with OrderedWorkers(items, fn, workers=workers, every=len(items)) as run:
        return await run.chunk(0)
