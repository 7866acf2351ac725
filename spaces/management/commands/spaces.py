"""`manage.py spaces list|show|create|add-member|set-plan`: spaces, their members and their plan."""

from django.utils import timezone

from core.commands import GroupCommand, optional_instant, table
from spaces import selectors, services
from spaces.commands import key_dict, space_or_error, user_dict

PLANS = {"pro": True, "free": False}


class Command(GroupCommand):
    help = "List and show spaces, create them, add members, switch a space between the Pro and free plans."
    actions = {
        "list": "List spaces by name: plan, owner, members and active keys.",
        "show": "Show a space: its owner, plan, members and API keys (never the keys themselves).",
        "create": "Create a space with its owner (created if new); prints the space id.",
        "add-member": "Add a user (created if new) to a space.",
        "set-plan": "Switch a space to the Pro plan (API access) or the free plan.",
    }

    def arguments_list(self, parser):
        parser.add_argument("--plan", choices=list(PLANS), help="only spaces on this plan")
        parser.add_argument("--name", metavar="TEXT", help="only spaces whose name contains TEXT (any letter case)")
        parser.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")

    def do_list(self, *, plan, name, limit, **_):
        rows = [
            {
                "id": space.id,
                "name": space.name,
                "plan": "pro" if space.is_pro else "free",
                "owner": user_dict(space.owner),
                "members": space.member_count,
                "activeKeys": space.active_key_count,
                "createdAt": optional_instant(space.created_at),
            }
            for space in selectors.list_spaces(plan=plan, name_contains=name, limit=limit)
        ]
        if not rows:
            return rows, "No spaces."
        columns = [("ID", "id"), ("PLAN", "plan"), ("MEMBERS", "members"), ("ACTIVE KEYS", "activeKeys"),
                   ("OWNER", "ownerEmail"), ("NAME", "name")]
        return rows, table([{**row, "ownerEmail": row["owner"]["email"]} for row in rows], columns)

    def arguments_show(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")

    def do_show(self, *, space_id, **_):
        space = space_or_error(space_id)
        now = timezone.now()
        members = [{**user_dict(membership.user), "memberSince": optional_instant(membership.created_at)}
                   for membership in selectors.space_members(space)]
        keys = [key_dict(key, now) for key in selectors.space_keys(space)]
        data = {
            "id": space.id,
            "name": space.name,
            "plan": "pro" if space.is_pro else "free",
            "owner": user_dict(space.owner),
            "createdAt": optional_instant(space.created_at),
            "members": members,
            "keys": keys,
        }
        text = "\n".join([
            f"{space.name} ({space.id}), {data['plan']} plan, created {data['createdAt']}",
            f"owner: {space.owner.name} <{space.owner.email}> ({space.owner.id})",
            "",
            f"members ({len(members)}):",
            table(members, [("ID", "id"), ("E-MAIL", "email"), ("NAME", "name"), ("BANNED", "banned")]),
            "",
            f"API keys ({len(keys)}):",
            table(keys, [("ID", "id"), ("PREFIX", "prefix"), ("STATE", "state"), ("LAST USED", "lastUsedAt"),
                         ("NAME", "name")]) if keys else "none",
        ])
        return data, text

    def arguments_create(self, parser):
        parser.add_argument("--name", required=True, help="name of the space")
        parser.add_argument("--owner-email", required=True, help="e-mail of the owner")
        parser.add_argument("--owner-name", help="name of the owner, if the owner is a new user")
        parser.add_argument("--pro", action="store_true", help="start on the Pro plan (default: free)")

    def do_create(self, *, name, owner_email, owner_name, pro, **_):
        space = services.create_space(name=name, owner_email=owner_email, owner_name=owner_name, pro=pro)
        data = {
            "id": space.id,
            "name": space.name,
            "owner": user_dict(space.owner),
            "plan": "pro" if pro else "free",
            "createdAt": optional_instant(space.created_at),
        }
        return data, space.id

    def arguments_add_member(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")
        parser.add_argument("--email", required=True, help="e-mail of the member")
        parser.add_argument("--name", help="name of the member, if a new user")

    def do_add_member(self, *, space_id, email, name, **_):
        space = space_or_error(space_id)
        membership = services.add_member(space=space, email=email, name=name)
        user = membership.user
        return (
            {"spaceId": space.id, "user": user_dict(user)},
            f"{user.email} ({user.id}) is a member of space {space.id}.",
        )

    def arguments_set_plan(self, parser):
        parser.add_argument("space_id", metavar="SPACE_ID")
        parser.add_argument("plan", choices=list(PLANS), metavar="pro|free")

    def do_set_plan(self, *, space_id, plan, **_):
        space = space_or_error(space_id)
        services.set_plan(space=space, pro=PLANS[plan])
        return {"spaceId": space.id, "plan": plan}, f"Space {space.id} is now on the {plan} plan."
