"""Keyset pagination, newest first: `(created_at, id)` descending, with signed cursors.

A page never skips or repeats a row while rows are created or deleted between requests. A
cursor is signed with a salt naming the list it belongs to (a space's polls, an endpoint's
deliveries...), so a cursor of one list is refused by every other."""

from django.core import signing
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from core.errors import ServiceError


class BadCursor(ServiceError):
    def __init__(self):
        super().__init__("cursor: not a cursor issued by this service for this list")


def keyset_page(queryset, *, salt: str, limit: int, cursor: str | None) -> tuple[list, str | None]:
    """Up to `limit` rows after `cursor` (from the start without one) and the cursor of the
    next page (None on the last). One query. Raises BadCursor."""
    signer = signing.Signer(salt=salt)
    queryset = queryset.order_by("-created_at", "-id")
    if cursor:
        try:
            created_at, row_id = signer.unsign_object(cursor)
            created_at = parse_datetime(created_at)
        except (signing.BadSignature, ValueError, TypeError):
            raise BadCursor()
        if created_at is None or not isinstance(row_id, str):
            raise BadCursor()
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=row_id))
    rows = list(queryset[: limit + 1])
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], signer.sign_object([last.created_at.isoformat(), last.pk])
