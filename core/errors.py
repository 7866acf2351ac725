"""What every app's service functions share."""


class ServiceError(Exception):
    """A refused action: nothing changed, nothing was recorded, and the message says why,
    for a person (the back office shows it, `manage.py` exits non-zero with it)."""
