"""Login throttling that slows guessing without locking anyone out.

Each login check costs a PBKDF2 hash, so an attacker who may guess as fast as the server answers
also gets a cheap way to load the CPU. Failures are counted in sliding windows, in buckets that
one person's typos cannot fill for somebody else:

- per (client address, annotator id): the first ``per_pair`` failures in the window are free;
  after that each attempt from that address for that id waits a delay that doubles with every
  further failure (``base_delay_s``, 2x, 4x, ... up to ``max_delay_s``). A guesser is slowed to one
  try per ``max_delay_s``; the owner behind the same shared address (an SSH tunnel, a reverse
  proxy) waits at most that long, never for the whole window as with a hard lock;
- per annotator id, whatever the address: after ``per_account`` failures the same growing delay,
  for addresses that have themselves failed with that id in the window. An address with no
  failure of its own (the owner signing in from elsewhere) is never held back by someone else's
  guesses;
- one shared bucket for ids that do not exist (typos in the id, or probing), a hard ceiling on the
  hashing an attacker can make the server do without knowing an id.

A slot is reserved *before* the hash is computed (so concurrent requests cannot all slip under a
limit) and released when the login succeeds; only failures keep their slot.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# Bucket keys: ("pair", address, id), ("account", id), ("unknown",).
_Key = tuple[str, ...]


@dataclass
class LoginLimiter:
    """Sliding-window counter of failed logins with a growing delay per (address, id) and id.

    Parameters
    ----------
    per_pair:
        Failed attempts one address may make for one annotator id per window before each further
        attempt waits.
    per_account:
        Failed attempts for one annotator id from all addresses together per window before the
        addresses that failed with it wait too.
    unknown_overall:
        Failed attempts with ids that do not exist, from all addresses together, per window
        (a hard ceiling).
    window_s:
        Window length in seconds: failures older than this are forgotten.
    base_delay_s, max_delay_s:
        The first wait past a limit, doubled with every further failure, capped at the maximum.
    clock:
        Monotonic clock (injectable for unit tests).

    >>> now = [0.0]
    >>> lim = LoginLimiter(per_pair=1, per_account=5, unknown_overall=5, window_s=60,
    ...                    base_delay_s=2, max_delay_s=8, clock=lambda: now[0])
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)[0] is not None  # a failure, free
    True
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)  # past the limit: wait 2 s
    (None, 2.0)
    >>> lim.acquire("10.0.0.2", "ann_a", known=True)[0] is not None  # another address: not
    True
    >>> now[0] = 2.0
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)[0] is not None  # after the wait: a try
    True
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)  # the wait doubles
    (None, 4.0)
    """

    per_pair: int = 10
    per_account: int = 50
    unknown_overall: int = 100
    window_s: float = 300.0
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _buckets: dict[_Key, deque[float]] = field(default_factory=dict, repr=False)

    def _keys(self, address: str, annotator_id: str, known: bool) -> list[_Key]:
        if known:
            return [("pair", address, annotator_id), ("account", annotator_id)]
        return [("unknown",)]

    def _expire(self, now: float) -> None:
        cutoff = now - self.window_s
        for key in list(self._buckets):
            q = self._buckets[key]
            while q and q[0] <= cutoff:
                q.popleft()
            if not q:
                del self._buckets[key]

    def delay(self, failures_past_limit: int) -> float:
        """The wait after ``failures_past_limit`` failures beyond a free allowance (0: the first).

        >>> [LoginLimiter().delay(k) for k in (0, 1, 2, 6, 20)]
        [1.0, 2.0, 4.0, 60.0, 60.0]
        """
        return float(min(self.max_delay_s, self.base_delay_s * 2.0 ** min(failures_past_limit, 60)))

    def _wait(self, q: deque[float], free: int, now: float) -> float:
        if len(q) < free:
            return 0.0
        return q[-1] + self.delay(len(q) - free) - now

    def acquire(
        self, address: str, annotator_id: str, *, known: bool
    ) -> tuple[float | None, float]:
        """Reserve a slot for one attempt.

        Parameters
        ----------
        address:
            The client address (as the app sees it; behind a trusted proxy, the forwarded one).
        annotator_id:
            The id typed in the form.
        known:
            Whether an account with that id exists (unknown ids share one bucket).

        Returns
        -------
        tuple[float | None, float]
            ``(token, 0)`` when the attempt may proceed (pass the token to :meth:`release` on
            success), or ``(None, retry_after_seconds)`` when it must wait.
        """
        with self._lock:
            now = self.clock()
            self._expire(now)
            keys = self._keys(address, annotator_id, known)
            if known:
                pair = self._buckets.get(keys[0], deque())
                account = self._buckets.get(keys[1], deque())
                wait = self._wait(pair, self.per_pair, now)
                if pair:  # the id-wide delay holds back only addresses that failed with it
                    wait = max(wait, self._wait(account, self.per_account, now))
            else:
                unknown = self._buckets.get(keys[0], deque())
                wait = (
                    unknown[0] + self.window_s - now
                    if len(unknown) >= self.unknown_overall
                    else 0.0
                )
            if wait > 0:
                return None, float(max(1, math.ceil(wait)))
            for key in keys:
                self._buckets.setdefault(key, deque()).append(now)
            return now, 0.0

    def release(self, address: str, annotator_id: str, token: float, *, known: bool) -> None:
        """Give back the slot of a successful attempt."""
        with self._lock:
            for key in self._keys(address, annotator_id, known):
                q = self._buckets.get(key)
                if q is not None:
                    with contextlib.suppress(ValueError):
                        q.remove(token)
