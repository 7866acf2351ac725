"""What every app's service functions share."""


class ServiceError(Exception):
    """A refused action: nothing changed, nothing was recorded, and the message says why,
    for a person (the back office shows it, `manage.py` exits non-zero with it).

    Services speak no HTTP: an API client meets the refusal as the envelope's `code` below
    (a subclass names its own), with the status the HTTP layer gives that code
    (core.api.errors.exception_handler)."""

    code = "VALIDATION_ERROR"
