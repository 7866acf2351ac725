"""`manage.py ratelimit status|reset SPACE_ID [--json]`: a space's counters, seen or forgotten.

Overrides of the limits themselves are set in the back office (Rate limits > overrides).
"""

from django.core.management.base import CommandError

from core.commands import GroupCommand
from ratelimit import selectors, services
from ratelimit.stores import StoreUnavailable
from spaces.commands import space_or_error


class Command(GroupCommand):
    help = "Show or reset the rate-limit counters of a space."
    actions = {
        "status": "Show the space's limits and how much of each window is used; counts nothing.",
        "reset": "Forget both windows of the space: its next request opens new ones.",
    }

    def arguments_status(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")

    arguments_reset = arguments_status

    def do_status(self, *, space_id, **_):
        space = space_or_error(space_id)
        try:
            usage = selectors.usage(space_id=space.pk)
        except StoreUnavailable as exc:
            raise CommandError(f"the rate-limit store is unreachable: {exc}")
        data = {"space": space.pk, **usage.as_dict()}
        override = usage.override
        limits = "default limits" if override is None else (
            f"override: per minute {override.per_minute or 'default'}, per day {override.per_day or 'default'}"
            + (f" ({override.note})" if override.note else "")
        )
        text = (
            f"Space {space.name} ({space.pk}), {usage.store} store\n"
            f"Policy {data['policy']} ({limits})\n"
            f"{usage.summary()}"
        )
        return data, text

    def do_reset(self, *, space_id, **_):
        space = space_or_error(space_id)
        try:
            services.reset_counters(space_id=space.pk)
        except StoreUnavailable as exc:
            raise CommandError(f"the rate-limit store is unreachable: {exc}")
        data, text = self.do_status(space_id=space.pk)
        return data, f"Counters of space {space.pk} reset.\n{text}"
