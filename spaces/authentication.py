"""Bearer authentication: `Authorization: Bearer <API key>` identifies a space."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from core.api import errors
from spaces.keys import key_matches, prefix_of
from spaces.models import ApiKey, Space
from spaces.selectors import KeyRow, key_by_prefix

CHALLENGE = 'Bearer realm="api"'
INVALID_TOKEN_CHALLENGE = 'Bearer realm="api", error="invalid_token"'
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class ApiClient:
    """What a request is authenticated as: a space, through one of its keys."""

    space: Space  # its id and owner id; its other fields are read when first asked for
    key: KeyRow
    is_pro: bool
    is_authenticated: bool = True


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            raise errors.Unauthorized(headers={"WWW-Authenticate": CHALLENGE})
        parts = header.split(" ")
        if len(parts) != 2 or parts[0].lower() != "bearer" or not parts[1]:
            raise errors.InvalidAuthorizationHeader()
        key = authenticate_key(parts[1])
        if key is None:
            raise errors.Unauthorized(
                "The API key is invalid, expired or revoked.",
                headers={"WWW-Authenticate": INVALID_TOKEN_CHALLENGE},
            )
        request._request.space_id = key.space_id  # for the access log
        space = Space.from_db(DEFAULT_DB_ALIAS, ["id", "owner_id"], [key.space_id, key.owner_id])
        client = ApiClient(space=space, key=key, is_pro=key.space_is_pro)
        return client, client

    def authenticate_header(self, request):
        return CHALLENGE


class HasProSpace(BasePermission):
    def has_permission(self, request, view):
        if getattr(view, "public", False):
            return True
        if not request.auth.is_pro:
            raise errors.SpaceNotPro()
        return True


def authenticate_key(raw: str) -> KeyRow | None:
    """The usable key `raw` names (`selectors.key_by_prefix`, one query); None for none. Its
    use is recorded when the last one recorded is older than the resolution."""
    prefix = prefix_of(raw)
    if prefix is None:
        return None
    now = timezone.now()
    key = key_by_prefix(prefix, now=now, recorded_since=now - LAST_USED_RESOLUTION)
    if key is None or not key_matches(raw, key.salt, key.hash) or not key.usable:
        return None
    if key.use_unrecorded:
        ApiKey.objects.filter(pk=key.id).update(last_used_at=now)
    return key


class BearerKeyScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI document describes `ApiKeyAuthentication`."""

    target_class = ApiKeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "sk_<8 chars>_<32 chars>",
            "description": "An API key of the space: `Authorization: Bearer <API key>`.",
        }
