"""Login throttling that stops guessing without locking the rest of the team out.

Each login check costs a PBKDF2 hash, so an attacker who may guess as fast as the server answers
also gets a cheap way to load the CPU. Failures are counted in sliding windows, in buckets that
one person's typos cannot fill for somebody else:

- per (client address, annotator id): an annotator's own typos, or a guesser at one address,
  throttle that id from that address only;
- per annotator id, whatever the address: guesses at one account spread over many addresses;
- one shared bucket for ids that do not exist (typos in the id, or probing): a ceiling on the
  hashing an attacker can make the server do without knowing an id.

Everyone behind one shared address (an SSH tunnel, a reverse proxy) therefore keeps signing in
while a colleague, or an attacker, fails with another id. The CPU an attacker can spend per window
stays bounded: at most ``per_account`` checks per existing id plus ``unknown_overall`` for the rest.

A slot is reserved *before* the hash is computed (so concurrent requests cannot all slip under a
limit) and released when the login succeeds; only failures keep their slot.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

# Bucket keys: ("pair", address, id), ("account", id), ("unknown",).
_Key = tuple[str, ...]


@dataclass
class LoginLimiter:
    """Sliding-window counter of failed logins per (address, id), per id and for unknown ids.

    Parameters
    ----------
    per_pair:
        Failed attempts one address may make for one annotator id per window.
    per_account:
        Failed attempts for one annotator id from all addresses together per window.
    unknown_overall:
        Failed attempts with ids that do not exist, from all addresses together, per window.
    window_s:
        Window length in seconds.
    clock:
        Monotonic clock (injectable for unit tests).

    >>> lim = LoginLimiter(per_pair=1, per_account=5, unknown_overall=5, window_s=60)
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)[0] is not None
    True
    >>> lim.acquire("10.0.0.1", "ann_a", known=True)[0] is None  # ann_a from here: throttled
    True
    >>> lim.acquire("10.0.0.1", "ann_b", known=True)[0] is not None  # ann_b from here: not
    True
    """

    per_pair: int = 10
    per_account: int = 50
    unknown_overall: int = 100
    window_s: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _buckets: dict[_Key, deque[float]] = field(default_factory=dict, repr=False)

    def _keys(self, address: str, annotator_id: str, known: bool) -> list[tuple[_Key, int]]:
        if known:
            return [
                (("pair", address, annotator_id), self.per_pair),
                (("account", annotator_id), self.per_account),
            ]
        return [(("unknown",), self.unknown_overall)]

    def _expire(self, now: float) -> None:
        cutoff = now - self.window_s
        for key in list(self._buckets):
            q = self._buckets[key]
            while q and q[0] <= cutoff:
                q.popleft()
            if not q:
                del self._buckets[key]

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
            success), or ``(None, retry_after_seconds)`` when a limit is reached.
        """
        with self._lock:
            now = self.clock()
            self._expire(now)
            keys = self._keys(address, annotator_id, known)
            full = [
                self._buckets.get(key, deque())
                for key, cap in keys
                if len(self._buckets.get(key, ())) >= cap
            ]
            if full:
                retry = max((q[0] + self.window_s - now for q in full if q), default=self.window_s)
                return None, max(1.0, retry)
            for key, _cap in keys:
                self._buckets.setdefault(key, deque()).append(now)
            return now, 0.0

    def release(self, address: str, annotator_id: str, token: float, *, known: bool) -> None:
        """Give back the slot of a successful attempt."""
        with self._lock:
            for key, _cap in self._keys(address, annotator_id, known):
                q = self._buckets.get(key)
                if q is not None:
                    with contextlib.suppress(ValueError):
                        q.remove(token)
