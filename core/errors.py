"""What every app's service functions share."""


class ServiceError(Exception):
    """A refused action: nothing changed, nothing was recorded, and the message says why,
    for a person (the back office shows it, `manage.py` exits non-zero with it).

    Each class carries what an API client meets: the envelope's `code` and the HTTP
    `status` (a subclass names its own; 400 unless it says otherwise), which
    core.api.errors.exception_handler answers with. Its docstring documents the code in the
    OpenAPI document."""

    code = "VALIDATION_ERROR"
    status = 400
