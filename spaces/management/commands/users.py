"""`manage.py users ban|unban EMAIL`: a banned user's keys stop working at once."""

from django.core.management.base import CommandError

from core.commands import GroupCommand
from spaces import selectors, services
from spaces.commands import user_dict


class Command(GroupCommand):
    help = "Ban or unban a user by e-mail address."
    actions = {
        "ban": "Ban a user: keys of the spaces they own, and keys they created, are refused (401).",
        "unban": "Lift a ban.",
    }

    def arguments_ban(self, parser):
        parser.add_argument("email", metavar="EMAIL")

    arguments_unban = arguments_ban

    def do_ban(self, *, email, **_):
        return self._set(email, banned=True)

    def do_unban(self, *, email, **_):
        return self._set(email, banned=False)

    def _set(self, email: str, *, banned: bool):
        email = services.clean_email(email)
        user = selectors.get_user_by_email(email)
        if user is None:
            raise CommandError(f"no user with e-mail {email!r}")
        services.set_banned(user=user, banned=banned)
        return user_dict(user), f"{user.email} ({user.id}) is {'banned' if banned else 'no longer banned'}."
