"""Keyset pagination, newest first: `(created_at, id)` descending, with signed cursors.

A page never skips or repeats a row while rows are created or deleted between requests. A
cursor is signed with a salt naming the list it belongs to (a space's polls, an endpoint's
deliveries...), so a cursor of one list is refused by every other."""

from datetime import datetime

from django.core import signing
from django.utils.dateparse import parse_datetime

from core.errors import ServiceError


class BadCursor(ServiceError):
    def __init__(self):
        super().__init__("cursor: not a cursor issued by this service for this list")


def cursor_position(cursor: str | None, *, salt: str) -> tuple[datetime, str] | None:
    """The `(created_at, id)` a page starts after; None without a cursor. Raises BadCursor."""
    if not cursor:
        return None
    try:
        created_at, row_id = signing.Signer(salt=salt).unsign_object(cursor)
        created_at = parse_datetime(created_at)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadCursor()
    if created_at is None or not isinstance(row_id, str):
        raise BadCursor()
    return created_at, row_id


def page_of(rows: list, *, salt: str, limit: int) -> tuple[list, str | None]:
    """The page from up to `limit + 1` rows read in keyset order (rows with `created_at` and
    `id`), and the cursor of the next page (None on the last)."""
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], signing.Signer(salt=salt).sign_object([last.created_at.isoformat(), last.id])


def keyset_page(queryset, *, salt: str, limit: int, cursor: str | None) -> tuple[list, str | None]:
    """Up to `limit` rows after `cursor` (from the start without one) and the cursor of the
    next page (None on the last). One query. Raises BadCursor."""
    queryset = queryset.order_by("-created_at", "-id")
    after = cursor_position(cursor, salt=salt)
    if after is not None:
        created_at, row_id = after
        # One range of the index on (created_at, id) from the cursor on: the rows at the
        # cursor's instant up to its id left out (an OR of the two cases is no range).
        queryset = queryset.filter(created_at__lte=created_at).exclude(created_at=created_at, pk__gte=row_id)
    return page_of(list(queryset[: limit + 1]), salt=salt, limit=limit)
