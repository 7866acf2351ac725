"""Rows that PostgreSQL packs into one text value (`ROW(a, b, ...)::text`), and their values
back as psycopg gives them for the columns themselves.

For reads that compare many rows with those they read before and unpack only the few that
changed (`polls.queries`): psycopg makes a Python value of every column of every row it
fetches, and the comparison then looks at each; packed, a row is one value, compared as one
string. Fetching a page of 50 polls of 20 columns took 90 us of the client's CPU as columns,
48 us packed (of which the round trip is about 40).
"""

import re
from collections.abc import Callable, Sequence

from psycopg.adapt import Transformer
from psycopg.pq import Format

# A record's text as record_out writes it (as psycopg.types.composite parses it): a NULL is
# nothing between two commas; a value that is empty or holds a quote, a backslash, a comma,
# a parenthesis or white space is quoted, its quotes and backslashes doubled.
_FIELD = re.compile(rb"""(?x)
      (,)                       # a NULL
    | " ((?: [^"] | "")*) " ,?  # a quoted value
    | ([^",)]+) ,?              # an unquoted value
""")
_DOUBLED = re.compile(rb'(["\\])\1')
_MODIFIER = re.compile(r"\(.*?\)")  # a type's modifier: `(12)` of `varchar(12)`


def fields(text: str) -> list[bytes | None]:
    """The fields of a record's text, `(...)`, each as the text of its value or None."""
    data = text.encode()[1:-1]
    found: list[bytes | None] = []
    match = None
    for match in _FIELD.finditer(data):
        if match.group(1):
            found.append(None)
        elif match.group(2) is not None:
            found.append(_DOUBLED.sub(rb"\1", match.group(2)))
        else:
            found.append(match.group(3))
    if match is not None and match.group().endswith(b","):
        found.append(None)  # after the last comma: a NULL the pattern cannot see
    return found


def unmodified(db_type: str) -> str:
    """Django's column type `db_type` without its modifier: `varchar(12)` -> `varchar`,
    `numeric(10, 2)` -> `numeric`, `timestamp with time zone` as it is."""
    return _MODIFIER.sub("", db_type)


def oid(types, db_type: str) -> int:
    """The type oid, in the registry `types` (a connection's), of a column of Django's type
    `db_type`."""
    return types[unmodified(db_type)].oid


def unpacker(connection, db_types: Sequence[str]) -> Callable[[str], tuple]:
    """`values(text)`: the values of a record of columns of these Django types (`ROW(...)::text`),
    each as the psycopg `connection` (its loaders) gives that column's value in text."""
    transformer = Transformer(connection)
    transformer.set_loader_types([oid(connection.adapters.types, db_type) for db_type in db_types], Format.TEXT)
    load = transformer.load_sequence

    def values(text: str) -> tuple:
        return load(fields(text))

    return values
