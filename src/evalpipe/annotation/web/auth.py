"""Login tokens and the secret key: random tokens, stored only as salted hashes.

There is no sign-up: an operator creates each account with ``evalpipe annotate
add-annotator ID`` and hands the printed token to the annotator.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from evalpipe.errors import InputError

SECRET_ENV = "EVALPIPE_SECRET_KEY"
# Tokens are 128+ random bits, so a fast salted PBKDF2 is enough; it keeps logins quick under load.
_HASH_METHOD = "pbkdf2:sha256:100000"
_DUMMY_HASH = generate_password_hash("not-a-token", method=_HASH_METHOD)


def new_token() -> str:
    """A fresh login token (24 URL-safe characters, 144 random bits)."""
    return secrets.token_urlsafe(18)


def hash_token(token: str) -> str:
    return generate_password_hash(token, method=_HASH_METHOD)


def check_token(hashed: str, token: str) -> bool:
    return check_password_hash(hashed, token)


def burn_time() -> None:
    """Spend the time of one hash check (login for an unknown id costs the same as a bad token)."""
    check_password_hash(_DUMMY_HASH, "x")


def load_secret_key(secret_file: str | os.PathLike[str] | None = None) -> str:
    """The Flask secret key, from ``secret_file`` or the environment variable EVALPIPE_SECRET_KEY.

    Raises
    ------
    InputError
        If neither is given or the key is shorter than 16 characters.
    """
    if secret_file is not None:
        path = Path(secret_file)
        try:
            key = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise InputError(f"{path}: secret file not found") from None
        source = str(path)
    else:
        key = os.environ.get(SECRET_ENV, "").strip()
        source = f"environment variable {SECRET_ENV}"
    if not key:
        raise InputError(
            f"no secret key: set {SECRET_ENV} or pass --secret-file "
            f"(e.g. `python -c 'import secrets; print(secrets.token_hex(32))' > .annotation-secret`)"
        )
    if len(key) < 16:
        raise InputError(f"{source}: secret key too short (expected at least 16 characters)")
    return key
