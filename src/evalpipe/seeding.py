"""Seeds derived from the full key of what they randomise, so every random stream is
reproducible on its own and no two keys collide by arithmetic (the upstream study's
``base*10000 + example*100 + word`` did once the word index reached 100)."""

from __future__ import annotations

import hashlib


def hashed_seed(*parts: object) -> int:
    """A 63-bit seed from the parts (joined by the unit separator, then SHA-256).

    63 bits fit a signed 64-bit integer (NumPy, Parquet int64 columns) as well as an unsigned one.

    Parameters
    ----------
    *parts : the key, e.g. ``(seed, benchmark, word)``.

    Returns
    -------
    int in [0, 2**63).

    Examples
    --------
    >>> hashed_seed(42, "gsm8k", "the") == hashed_seed(42, "gsm8k", "the")
    True
    >>> hashed_seed(42, "gsm8k", "the") != hashed_seed(42, "gsm8k", "of")
    True
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1
