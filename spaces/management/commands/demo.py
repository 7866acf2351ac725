"""`python manage.py demo`: a Pro demo space and a fresh API key for trying the API.

The space and its owner are made once (found again by the owner's e-mail). Keys are stored
only as a hash, so a key cannot be shown twice: every run makes a new key named "demo" and
revokes the older keys of the same name, which keeps the space under its active-key limit.
`bin/serve` names the key after its port ("demo (port 8000)"), so a server started on
another port never revokes the key of one that is running.
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from spaces import services
from spaces.models import ApiKey, Space

DEMO_KEY_NAME = "demo"


class Command(BaseCommand):
    help = "Create (once) a Pro demo space, print a new API key for it and a curl example."

    def add_arguments(self, parser):
        parser.add_argument("--email", default="demo@example.com", help="The demo owner's e-mail (default: %(default)s).")
        parser.add_argument("--name", default="Demo space", help="The space's name when it is created (default: %(default)s).")
        parser.add_argument(
            "--base-url", default="http://localhost:8000", help="Where the API answers, for the curl example (default: %(default)s)."
        )
        parser.add_argument("--key-name", default=DEMO_KEY_NAME,
                            help="Name of the new key; older active keys of this name are revoked (default: %(default)s).")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object instead of text.")

    def handle(self, *args, email, name, base_url, key_name, as_json, **options):
        try:
            space, created, key, raw = provision(email=email, name=name, key_name=key_name)
        except services.ServiceError as error:
            raise CommandError(str(error))
        base_url = base_url.rstrip("/")
        if as_json:
            self.stdout.write(json.dumps({
                "spaceId": space.id, "spaceCreated": created, "ownerEmail": space.owner.email,
                "keyId": key.id, "key": raw, "baseUrl": base_url,
            }))
            return
        self.stdout.write(
            f"Demo space: {space.name} ({space.id}), owner {space.owner.email}, Pro"
            f"{' (created now)' if created else ''}.\n"
            f"API key \"{key.name}\" (shown once; each run makes a new one and revokes the older ones of this name):\n\n"
            f"    {raw}\n\n"
            f"Try it:\n\n"
            f"    curl -s {base_url}/v1/polls -H 'Authorization: Bearer {raw}'\n\n"
            f"    curl -s {base_url}/v1/polls -H 'Authorization: Bearer {raw}' \\\n"
            f"      -H 'Content-Type: application/json' \\\n"
            f"      -d '{{\"title\": \"Team lunch\", \"kind\": \"date\", \"options\": [{{\"date\": \"2030-05-02\"}}, {{\"date\": \"2030-05-03\"}}]}}'\n\n"
            f"The API is described at {base_url}/v1/openapi\n"
        )


@transaction.atomic
def provision(*, email: str, name: str, key_name: str = DEMO_KEY_NAME) -> tuple[Space, bool, ApiKey, str]:
    """The demo space (created on the first run, kept Pro) and a new key for it."""
    owner = services.get_or_create_user(email=email)
    space = Space.objects.filter(owner=owner).order_by("created_at", "id").first()
    created = space is None
    if created:
        space = services.create_space(name=name, owner_email=owner.email, pro=True)
    else:
        services.set_plan(space=space, pro=True)
    for old in ApiKey.objects.filter(space=space, name=key_name, revoked_at__isnull=True):
        services.revoke_key(key=old)
    key, raw = services.create_key(space=space, name=key_name)
    return space, created, key, raw
