"""Bearer authentication: `Authorization: Bearer <API key>` identifies a space."""

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from core.api import errors
from spaces.keys import key_matches, prefix_of
from spaces.models import ApiKey, Space
from spaces.selectors import key_by_prefix

CHALLENGE = 'Bearer realm="api"'
INVALID_TOKEN_CHALLENGE = 'Bearer realm="api", error="invalid_token"'
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class ApiClient:
    """What a request is authenticated as: a space, through one of its keys."""

    space: Space
    key: ApiKey
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
        client = ApiClient(space=key.space, key=key, is_pro=key.space_is_pro)
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


def authenticate_key(raw: str) -> ApiKey | None:
    """The active key `raw` names (`selectors.key_by_prefix`, one query); None for no active
    key."""
    prefix = prefix_of(raw)
    if prefix is None:
        return None
    now = timezone.now()
    key = key_by_prefix(prefix)
    if key is None or not _usable(key, raw, now):
        return None
    _note_use(key, now)
    return key


def _usable(key: ApiKey, raw: str, now) -> bool:
    return (
        key_matches(raw, key.salt, key.hash)
        and key.is_active_at(now)
        and not key.owner_is_banned
        and not key.creator_is_banned
    )


def _note_use(key: ApiKey, now) -> None:
    """Record the key's use when the last one recorded is older than the resolution."""
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)


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
