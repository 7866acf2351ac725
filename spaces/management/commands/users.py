"""`manage.py users list|ban|unban`: a banned user's keys stop working at once."""

from django.core.management.base import CommandError

from core.commands import GroupCommand, optional_instant, table
from spaces import selectors, services
from spaces.commands import user_dict


class Command(GroupCommand):
    help = "List users; ban or unban a user by e-mail address."
    actions = {
        "list": "List users by e-mail address: banned or not, spaces owned and joined.",
        "ban": "Ban a user: keys of the spaces they own, and keys they created, are refused (401).",
        "unban": "Lift a ban.",
    }

    def arguments_list(self, parser):
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--banned", action="store_true", default=None, help="only banned users")
        state.add_argument("--not-banned", dest="banned", action="store_false", help="only users who are not banned")
        parser.add_argument("--email", metavar="TEXT", help="only users whose e-mail address contains TEXT")
        parser.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")

    def do_list(self, *, banned, email, limit, **_):
        rows = [
            {**user_dict(user), "ownedSpaces": user.owned_count, "memberOf": user.member_count,
             "createdAt": optional_instant(user.created_at)}
            for user in selectors.list_users(banned=banned, email_contains=email, limit=limit)
        ]
        columns = [("ID", "id"), ("BANNED", "banned"), ("OWNS", "ownedSpaces"), ("MEMBER OF", "memberOf"),
                   ("E-MAIL", "email"), ("NAME", "name")]
        return rows, table(rows, columns) if rows else "No users."

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
