"""API key format and hashing: `sk_<8 chars>_<32 chars>`, base64url alphabet.

The 8-character prefix finds the row; the whole key is checked against a salted SHA-256
(the secret has 192 random bits, so a slow hash would add nothing but latency).
"""

import hashlib
import hmac
import secrets
import string

PREFIX_LENGTH = 8
SECRET_LENGTH = 32
KEY_LENGTH = 3 + PREFIX_LENGTH + 1 + SECRET_LENGTH
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")


def _token(length: int) -> str:
    return secrets.token_urlsafe(length)[:length]


def new_key() -> tuple[str, str]:
    """A fresh key and its prefix."""
    prefix = _token(PREFIX_LENGTH)
    return f"sk_{prefix}_{_token(SECRET_LENGTH)}", prefix


def prefix_of(key: str) -> str | None:
    """The prefix of a well-formed key, else None. Only the base64url alphabet is looked up
    (PostgreSQL refuses a NUL in a query: that would be a 500, not a 401)."""
    if len(key) != KEY_LENGTH or not key.startswith("sk_") or key[3 + PREFIX_LENGTH] != "_":
        return None
    prefix = key[3 : 3 + PREFIX_LENGTH]
    return prefix if _ALPHABET.issuperset(prefix) else None


def hash_key(key: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()


def new_salt() -> str:
    return secrets.token_hex(16)


def key_matches(key: str, salt: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key, salt), stored_hash)
