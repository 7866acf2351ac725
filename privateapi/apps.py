from django.apps import AppConfig


class PrivateApiConfig(AppConfig):
    """The frozen, unversioned private API under `/api/private`: the shapes of the API that
    came before `/v1`, over the same services, selectors, keys and limits."""

    name = "privateapi"
    verbose_name = "Private API (frozen)"
