"""Idempotent creates: the same `Idempotency-Key` and body within 24 hours get the first
answer again, and concurrent duplicates make one resource.

The record is inserted before the resource is made, in the same transaction: a concurrent
duplicate's insert waits on the unique (space, key) index (PostgreSQL) or on the write
lock (SQLite) until the first commits, then fails and replays the committed answer. Only
successes are kept: a request that fails leaves no record and may be retried with the
same key.
"""

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ServiceError
from idempotency.models import IdempotencyRecord
from spaces.models import Space

TTL = timedelta(hours=24)
MAX_KEY_LENGTH = 255
# Printable ASCII without spaces: what survives every HTTP stack unchanged.
KEY_PATTERN = r"^[\x21-\x7E]{1,255}$"
_KEY = re.compile(r"[\x21-\x7E]{1,255}")


class KeyReused(ServiceError):
    """The key was used in the last 24 hours for another operation or another body."""


def valid_key(key: str) -> bool:
    return bool(_KEY.fullmatch(key))


def fingerprint(operation: str, body: dict) -> str:
    """The same for the same JSON body, whatever its key order and whitespace."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{operation}\n{canonical}".encode()).hexdigest()


def _live(space: Space, key: str, now: datetime) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(space=space, key=key, created_at__gt=now - TTL, status_code__gt=0).first()


def _replay(record: IdempotencyRecord, operation: str, digest: str) -> tuple[int, dict, bool]:
    if record.operation != operation or record.fingerprint != digest:
        raise KeyReused(
            "Idempotency-Key: already used in the last 24 hours for another request "
            f"({record.operation}{', another body' if record.operation == operation else ''}); use a new key"
        )
    return record.status_code, json.loads(record.response), True


def run(
    *, space: Space, key: str, operation: str, body: dict, create: Callable[[], tuple[int, dict]]
) -> tuple[int, dict, bool]:
    """Call `create` (which returns the status and the response body) at most once per
    space and key in 24 hours. Returns (status, body, replayed)."""
    now = timezone.now()
    digest = fingerprint(operation, body)
    record = _live(space, key, now)
    if record is not None:
        return _replay(record, operation, digest)
    try:
        with transaction.atomic():
            # An expired record of the key (not purged yet) makes way for the new one.
            IdempotencyRecord.objects.filter(space=space, key=key, created_at__lte=now - TTL).delete()
            record = IdempotencyRecord.objects.create(
                space=space, key=key, operation=operation, fingerprint=digest, created_at=now
            )
            status, data = create()
            IdempotencyRecord.objects.filter(pk=record.pk).update(
                status_code=status, response=json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            )
            return status, data, False
    except IntegrityError:
        # A concurrent duplicate committed first: answer what it answered.
        record = _live(space, key, timezone.now())
        if record is None:
            raise
        return _replay(record, operation, digest)


def purge(*, now: datetime | None = None) -> int:
    """Forget records older than 24 hours. Returns how many."""
    now = now or timezone.now()
    return IdempotencyRecord.objects.filter(created_at__lte=now - TTL).delete()[0]
