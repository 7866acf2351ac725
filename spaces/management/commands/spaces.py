"""`manage.py spaces create|add-member|set-plan`: spaces, their members and their plan."""

from core.commands import GroupCommand, optional_instant
from spaces import services
from spaces.commands import space_or_error, user_dict

PLANS = {"pro": True, "free": False}


class Command(GroupCommand):
    help = "Create spaces, add members, switch a space between the Pro and free plans."
    actions = {
        "create": "Create a space with its owner (created if new); prints the space id.",
        "add-member": "Add a user (created if new) to a space.",
        "set-plan": "Switch a space to the Pro plan (API access) or the free plan.",
    }

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
