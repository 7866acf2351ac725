"""`manage.py webhooks add|list|remove|enable|disable|ping|rotate-secret|deliveries|resend`:
webhook endpoints of a space and their deliveries. A new endpoint's secret is printed once."""

from django.core.management.base import CommandError

from core.commands import GroupCommand, optional_instant, table, text_cell
from spaces.commands import space_or_error
from webhooks import selectors, services, targets
from webhooks.models import EVENT_TYPES, PING, Delivery, Endpoint


def endpoint_dict(endpoint: Endpoint) -> dict:
    """What an operator may see of an endpoint: never its secret."""
    return {
        "id": endpoint.id,
        "spaceId": endpoint.space_id,
        "url": endpoint.url,
        "events": endpoint.event_types,
        "enabled": endpoint.is_enabled,
        "payloadVersion": endpoint.payload_version,
        "failedInARow": endpoint.failure_streak,
        "disabledReason": endpoint.disabled_reason or None,
        "createdAt": optional_instant(endpoint.created_at),
        "disabledAt": optional_instant(endpoint.disabled_at),
    }


def delivery_dict(delivery: Delivery) -> dict:
    """A delivery as operators see it: the outcome so far, not the body."""
    return {
        "id": delivery.id,
        "endpointId": delivery.endpoint_id,
        "eventId": delivery.event_id,
        "eventType": delivery.event.type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "maxAttempts": delivery.max_attempts,
        "createdAt": optional_instant(delivery.created_at),
        "nextAttemptAt": optional_instant(delivery.next_attempt_at) if delivery.status == Delivery.Status.PENDING else None,
        "finishedAt": optional_instant(delivery.finished_at),
        "lastError": delivery.last_error or None,
    }


def endpoint_or_error(endpoint_id: str) -> Endpoint:
    endpoint = selectors.get_endpoint(endpoint_id)
    if endpoint is None:
        raise CommandError(f"no webhook endpoint with id {endpoint_id!r}")
    return endpoint


def parse_events(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [name.strip() for name in value.split(",")]


class Command(GroupCommand):
    help = "Add, list, remove, enable, disable and ping the webhook endpoints of a space; list and resend deliveries."
    actions = {
        "add": "Add an endpoint (at most 5 per space); prints its id and its secret, which is shown only once.",
        "list": "List the endpoints of a space (never their secrets).",
        "remove": "Remove an endpoint and its delivery log.",
        "enable": "Enable a disabled endpoint: it receives the events from now on (none are replayed).",
        "disable": "Disable an endpoint: nothing more is sent to it; pending retries are canceled.",
        "ping": "Send a test ping (type 'ping', data {}) now and print the outcome; exits 1 if it failed.",
        "rotate-secret": "Give an endpoint a new secret (printed once); the old one keeps signing for 24 hours.",
        "deliveries": "List deliveries newest first (status, attempts, last error), by endpoint, space, status or type.",
        "resend": "Send a delivery's event to its endpoint again, as a new delivery with the full retry schedule.",
    }

    def arguments_add(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")
        parser.add_argument("url", metavar="URL", help="https URL of the receiver")
        parser.add_argument("--events", metavar="A,B",
                            help=f"comma-separated event types (default: all of them): {', '.join(EVENT_TYPES)}")

    def do_add(self, *, space_id, url, events, **_):
        space = space_or_error(space_id)
        endpoint, secret = services.create_endpoint(space=space, url=url, event_types=parse_events(events))
        self.stderr.write(f"Endpoint {endpoint.id} added to space {space.id}. "
                          "Store the secret now: it cannot be shown again.")
        if targets.private_switch_needed(endpoint.url):
            self.stderr.write(f"Warning: {targets.PRIVATE_SWITCH_WARNING}.")
        text = f"id: {endpoint.id}\nsecret: {secret}"
        return {**endpoint_dict(endpoint), "secret": secret}, text

    def arguments_list(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")

    def do_list(self, *, space_id, **_):
        space = space_or_error(space_id)
        rows = [endpoint_dict(endpoint) for endpoint in selectors.space_endpoints(space.id)]
        return rows, _table(rows) if rows else f"Space {space.id} has no webhook endpoints."

    def arguments_remove(self, parser):
        parser.add_argument("endpoint_id", metavar="ENDPOINT_ID")

    def do_remove(self, *, endpoint_id, **_):
        endpoint = endpoint_or_error(endpoint_id)
        data = endpoint_dict(endpoint)
        services.delete_endpoint(endpoint=endpoint)
        return {**data, "removed": True}, f"Endpoint {data['id']} ({data['url']}) removed."

    def arguments_enable(self, parser):
        parser.add_argument("endpoint_id", metavar="ENDPOINT_ID")

    def do_enable(self, *, endpoint_id, **_):
        endpoint = services.enable_endpoint(endpoint=endpoint_or_error(endpoint_id))
        return endpoint_dict(endpoint), f"Endpoint {endpoint.id} is enabled."

    def arguments_disable(self, parser):
        parser.add_argument("endpoint_id", metavar="ENDPOINT_ID")

    def do_disable(self, *, endpoint_id, **_):
        endpoint = services.disable_endpoint(endpoint=endpoint_or_error(endpoint_id))
        return endpoint_dict(endpoint), f"Endpoint {endpoint.id} is disabled."

    def arguments_ping(self, parser):
        parser.add_argument("endpoint_id", metavar="ENDPOINT_ID")

    def do_ping(self, *, endpoint_id, **_):
        delivery = services.send_ping(endpoint=endpoint_or_error(endpoint_id))
        attempt = selectors.delivery_attempts(delivery.pk).last()
        delivered = delivery.status == Delivery.Status.SUCCEEDED
        data = {
            "endpointId": endpoint_id,
            "eventId": delivery.event_id,
            "deliveryId": attempt.id,
            "delivered": delivered,
            "statusCode": attempt.status_code,
            "error": attempt.error or None,
            "durationMs": attempt.duration_ms,
        }
        text = (f"Ping {'delivered' if delivered else 'failed'}: "
                f"{attempt.error or f'HTTP {attempt.status_code}'} in {attempt.duration_ms} ms.")
        self.result_failed = not delivered
        return data, text

    def arguments_rotate_secret(self, parser):
        parser.add_argument("endpoint_id", metavar="ENDPOINT_ID")

    def do_rotate_secret(self, *, endpoint_id, **_):
        endpoint, secret = services.rotate_secret(endpoint=endpoint_or_error(endpoint_id))
        self.stderr.write(f"Endpoint {endpoint.id} has a new secret; the old one keeps signing until "
                          f"{optional_instant(endpoint.previous_secret_expires_at)}. Store it now: it cannot be shown again.")
        data = {**endpoint_dict(endpoint), "secret": secret,
                "previousSecretExpiresAt": optional_instant(endpoint.previous_secret_expires_at)}
        return data, f"id: {endpoint.id}\nsecret: {secret}"

    def arguments_deliveries(self, parser):
        parser.add_argument("--endpoint", metavar="ENDPOINT_ID", help="only deliveries to this endpoint")
        parser.add_argument("--space", metavar="SPACE_ID", help="only deliveries to this space's endpoints")
        parser.add_argument("--status", choices=[status.value for status in Delivery.Status])
        parser.add_argument("--event-type", metavar="TYPE", choices=[*EVENT_TYPES, PING],
                            help=f"only this event type: {', '.join(EVENT_TYPES)} or {PING}")
        parser.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")

    def do_deliveries(self, *, endpoint, space, status, event_type, limit, **_):
        if endpoint:
            endpoint_or_error(endpoint)
        if space:
            space_or_error(space)
        rows = [delivery_dict(delivery) for delivery in selectors.operator_deliveries(
            endpoint_id=endpoint, space_id=space, status=status, event_type=event_type, limit=limit)]
        columns = [("ID", "id"), ("STATUS", "status"), ("ATTEMPTS", "attempts"), ("CREATED", "createdAt"),
                   ("ENDPOINT", "endpointId"), ("EVENT", "eventType"), ("LAST ERROR", "lastError")]
        return rows, _table(rows, columns) if rows else "No deliveries."

    def arguments_resend(self, parser):
        parser.add_argument("delivery_id", metavar="DELIVERY_ID")

    def do_resend(self, *, delivery_id, **_):
        delivery = selectors.get_delivery(delivery_id)
        if delivery is None:
            raise CommandError(f"no webhook delivery with id {delivery_id!r}")
        again = selectors.get_delivery(services.resend_delivery(delivery=delivery).pk)
        return ({**delivery_dict(again), "resentFrom": delivery.id},
                f"Delivery {again.id} queued: event {again.event_id} ({again.event.type}) to endpoint {again.endpoint_id}.")

    def handle(self, *args, **options):
        self.result_failed = False
        super().handle(*args, **options)
        if self.result_failed:
            raise CommandError("the ping was not delivered")


COLUMNS = [("ID", "id"), ("ENABLED", "enabled"), ("FAILED IN A ROW", "failedInARow"), ("CREATED", "createdAt"),
           ("URL", "url"), ("EVENTS", "events")]


def _cell(value) -> str:
    if isinstance(value, list):
        return "all" if value == list(EVENT_TYPES) else ",".join(value)
    return text_cell(value)


def _table(rows: list[dict], columns=COLUMNS) -> str:
    return table(rows, columns, _cell)
