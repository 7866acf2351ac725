"""Random identifiers: never sequential, never revealing counts.

Each character is one uniform draw from its alphabet, made from a byte of the operating
system's generator (`os.urandom`): a byte below the largest multiple of the alphabet's size
up to 256 gives `alphabet[byte % size]`, the few above it are dropped (rejection sampling,
as `secrets.choice` does), both done in C by `bytes.translate`: one system call per id and
no Python loop per character (creating a poll of 10 options makes a dozen ids)."""

import os
import string


def _alphabet(characters: str) -> tuple[bytes, bytes]:
    """The `bytes.translate` table of an alphabet, and the bytes to drop (those that would
    make its first characters likelier)."""
    size = len(characters)
    return bytes(ord(characters[byte % size]) for byte in range(256)), bytes(range(256 - 256 % size, 256))


_LOWER_DIGITS = _alphabet(string.ascii_lowercase + string.digits)
_ALNUM = _alphabet(string.ascii_letters + string.digits)


def _draw(alphabet: tuple[bytes, bytes], length: int) -> str:
    text = b""
    while len(text) < length:  # a few spare bytes make a second round very rare
        text += os.urandom(length + 8).translate(*alphabet)
    return text[:length].decode("ascii")


def random_id() -> str:
    """Ids of options, participants, users, spaces, keys and events: 24 of [a-z0-9]."""
    return _draw(_LOWER_DIGITS, 24)


def grouped_ids(count: int) -> list[str]:
    """`count` ids of rows stored together (a new poll's options), in `random_id`'s format
    (24 of [a-z0-9]): a random head of 8 shared by the group, then a random tail of 16 each
    (82 bits: as unguessable, and never sequential). In the primary key's index they sit side
    by side, so that a new poll of ten options changes one leaf page of it instead of ten:
    SQLite appends every page a commit changed to its WAL (about 35 a `POST /v1/polls` with
    uniformly random ids, 25 so), PostgreSQL logs a whole page the first time one changes
    after a checkpoint."""
    text = _draw(_LOWER_DIGITS, 8 + 16 * count)
    return [text[:8] + text[start:start + 16] for start in range(8, 8 + 16 * count, 16)]


def poll_id() -> str:
    """Poll ids double as invite links: 12 of [A-Za-z0-9] (71 bits)."""
    return _draw(_ALNUM, 12)
