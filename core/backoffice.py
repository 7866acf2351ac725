"""What every app's back office (Django admin) shares."""

from django.contrib import messages


def adopt(obj, saved) -> None:
    """Turn the admin's unsaved `obj` into the row a service saved, so that the admin logs
    the addition and redirects to the right object."""
    obj.__dict__.update(saved.__dict__)


def report(request, done: int, what: str, refused: list[str] = ()) -> None:
    messages.success(request, f"{done} {what}.")
    for reason in dict.fromkeys(refused):
        messages.error(request, reason)
