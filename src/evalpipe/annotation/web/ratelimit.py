"""Login throttling: failed attempts per client address and overall, in a sliding window.

Each login check costs a PBKDF2 hash, so an attacker who may guess as fast as the server answers
also gets a cheap way to load the CPU. A slot is reserved *before* the hash is computed (so
concurrent requests cannot all slip under the limit) and released when the login succeeds; only
failures keep their slot. Once a limit is reached the server answers 429 without hashing.
The overall limit bounds the cost of guesses spread over many addresses; it can lock everybody
out for one window during such an attack, which is the price of bounding the CPU spent.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class LoginLimiter:
    """Sliding-window counter of failed logins.

    Parameters
    ----------
    per_address:
        Failed attempts one address may make per window.
    overall:
        Failed attempts all addresses together may make per window.
    window_s:
        Window length in seconds.
    clock:
        Monotonic clock (injectable for unit tests).
    """

    per_address: int = 10
    overall: int = 100
    window_s: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _by_address: dict[str, deque[float]] = field(default_factory=dict, repr=False)
    _all: deque[float] = field(default_factory=deque, repr=False)

    def _expire(self, now: float) -> None:
        cutoff = now - self.window_s
        while self._all and self._all[0] <= cutoff:
            self._all.popleft()
        for address in list(self._by_address):
            q = self._by_address[address]
            while q and q[0] <= cutoff:
                q.popleft()
            if not q:
                del self._by_address[address]

    def acquire(self, address: str) -> tuple[float | None, float]:
        """Reserve a slot for one attempt.

        Returns
        -------
        tuple[float | None, float]
            ``(token, 0)`` when the attempt may proceed (pass the token to :meth:`release` on
            success), or ``(None, retry_after_seconds)`` when a limit is reached.
        """
        with self._lock:
            now = self.clock()
            self._expire(now)
            mine = self._by_address.setdefault(address, deque())
            full = [
                q
                for q, cap in ((mine, self.per_address), (self._all, self.overall))
                if len(q) >= cap
            ]
            if full:
                if not mine:
                    del self._by_address[address]
                retry = max(q[0] + self.window_s - now for q in full)
                return None, max(1.0, retry)
            mine.append(now)
            self._all.append(now)
            return now, 0.0

    def release(self, address: str, token: float) -> None:
        """Give back the slot of a successful attempt."""
        with self._lock:
            for q in (self._by_address.get(address), self._all):
                if q is not None:
                    with contextlib.suppress(ValueError):
                        q.remove(token)
