"""`manage.py keys create|list|revoke`: API keys of a space. A new key is printed once."""

from datetime import datetime

from django.core.management.base import CommandError
from django.utils import timezone

from core.commands import GroupCommand
from spaces import selectors, services
from spaces.commands import key_dict, space_or_error


def parse_instant(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--expires-at: not an ISO 8601 date and time: {value!r}")
    if timezone.is_naive(parsed):
        raise CommandError(f"--expires-at: give a time zone, e.g. 2027-01-31T00:00:00Z: {value!r}")
    return parsed


class Command(GroupCommand):
    help = "Create, list and revoke the API keys of a space."
    actions = {
        "create": "Create a key for a space (at most 10 active); prints the key, which is shown only once.",
        "list": "List the keys of a space (prefix, state, times; never the key).",
        "revoke": "Revoke a key: it is refused from the next request on.",
    }

    def arguments_create(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")
        parser.add_argument("--name", default="", help="a label for the key (at most 100 characters)")
        parser.add_argument(
            "--expires-at", metavar="ISO8601", help="expiry with a time zone, e.g. 2027-01-31T00:00:00Z (default: none)"
        )

    def do_create(self, *, space_id, name, expires_at, **_):
        space = space_or_error(space_id)
        expiry = parse_instant(expires_at) if expires_at is not None else None
        key, raw = services.create_key(space=space, name=name, expires_at=expiry)
        self.stderr.write(f"Key {key.id} (sk_{key.prefix}_…) created for space {space.id}. "
                          "Store it now: it cannot be shown again.")
        return {**key_dict(key, timezone.now()), "key": raw}, raw

    def arguments_list(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")

    def do_list(self, *, space_id, **_):
        space = space_or_error(space_id)
        now = timezone.now()
        rows = [key_dict(key, now) for key in selectors.space_keys(space)]
        return rows, _table(rows) if rows else f"Space {space.id} has no keys."

    def arguments_revoke(self, parser):
        parser.add_argument("key_id", metavar="KEY_ID")

    def do_revoke(self, *, key_id, **_):
        key = selectors.get_key(key_id)
        if key is None:
            raise CommandError(f"no key with id {key_id!r}")
        already = key.revoked_at is not None
        services.revoke_key(key=key)
        data = key_dict(key, timezone.now())
        verb = "was already revoked at" if already else "revoked at"
        return data, f"Key {key.id} (sk_{key.prefix}_…) {verb} {data['revokedAt']}."


COLUMNS = [("ID", "id"), ("PREFIX", "prefix"), ("STATE", "state"), ("NAME", "name"), ("CREATED", "createdAt"),
           ("LAST USED", "lastUsedAt"), ("EXPIRES", "expiresAt"), ("REVOKED", "revokedAt")]


def _table(rows: list[dict]) -> str:
    cells = [[title for title, _ in COLUMNS]] + [[str(row[field] or "-") for _, field in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells)
