"""Each space's and each endpoint's share of the senders.

A sender (a thread of the embedded dispatcher, a Celery task) sends one batch at a time:
claims of one endpoint under one claim token, one attempt after another. A receiver that
accepts and never answers holds its sender for the whole timeout, so a space with a few
such endpoints could hold every sender and make every other space wait. So a space holds
at most WEBHOOKS_SPACE_SENDERS batches at once and an endpoint WEBHOOKS_ENDPOINT_SENDERS,
counted in the database (leases not expired, one per claim token), so the caps hold across
processes and workers; a claim passes over the deliveries of a space or endpoint at its
cap, and the others' go first."""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connections, router
from django.db.models import QuerySet

from webhooks.models import Delivery

# The advisory lock under which claims count the shares (an arbitrary number of our own).
CLAIM_LOCK = 740_001


@dataclass
class Shares:
    """The batches each space and each endpoint holds now (claim tokens whose lease runs)."""

    spaces: Counter = field(default_factory=Counter)
    endpoints: Counter = field(default_factory=Counter)

    @classmethod
    def held(cls, now: datetime) -> "Shares":
        """Counted in one query, on the partial index `delivery_claimed` (claimed rows only),
        inside the claim's transaction. On PostgreSQL claims are taken one at a time, under
        a transaction-level advisory lock (the ORM has no word for it): concurrent workers
        would each count the shares without the others' claims, not committed yet, and
        together exceed them. SQLite's transactions take the whole database's write lock."""
        connection = connections[router.db_for_write(Delivery)]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CLAIM_LOCK])
        shares = cls()
        batches = (Delivery.objects.filter(claimed_until__gt=now).order_by()
                   .values_list("claim_token", "endpoint_id", "endpoint__space_id").distinct())
        for _token, endpoint_id, space_id in batches:
            shares.spaces[space_id] += 1
            shares.endpoints[endpoint_id] += 1
        return shares

    def without_full(self, due: QuerySet[Delivery]) -> QuerySet[Delivery]:
        """`due` without the deliveries of spaces and endpoints at their cap."""
        spaces = [space for space, held in self.spaces.items() if held >= settings.WEBHOOKS_SPACE_SENDERS]
        endpoints = [endpoint for endpoint, held in self.endpoints.items()
                     if held >= settings.WEBHOOKS_ENDPOINT_SENDERS]
        if spaces:
            due = due.exclude(endpoint__space_id__in=spaces)
        if endpoints:
            due = due.exclude(endpoint_id__in=endpoints)
        return due

    def batches(self, candidates, *, senders: int, per_batch: int) -> list[list[str]]:
        """Split (delivery id, endpoint id, space id) candidates, the longest due first, into
        at most `senders` batches of at most `per_batch` deliveries of one endpoint each,
        within every space's and endpoint's cap; the ids of each batch."""
        spaces, endpoints = Counter(self.spaces), Counter(self.endpoints)
        batches: list[list[str]] = []
        filling: dict[str, list[str]] = {}  # endpoint id -> its batch being filled
        for pk, endpoint_id, space_id in candidates:
            batch = filling.get(endpoint_id)
            if batch is not None and len(batch) < per_batch:
                batch.append(pk)
            elif (len(batches) < senders and spaces[space_id] < settings.WEBHOOKS_SPACE_SENDERS
                  and endpoints[endpoint_id] < settings.WEBHOOKS_ENDPOINT_SENDERS):
                filling[endpoint_id] = batch = [pk]
                batches.append(batch)
                spaces[space_id] += 1
                endpoints[endpoint_id] += 1
        return batches
