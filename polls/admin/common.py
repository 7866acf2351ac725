"""What the poll back office's pages share: refusals that undo a save, option labels and
the report of a bulk action."""

from contextlib import contextmanager
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.http import HttpResponseRedirect

from core.errors import ServiceError
from polls.models import Option


class SaveRefused(Exception):
    """A service refused a change the forms had accepted; aborts the admin's transaction."""


@contextmanager
def refusals_undo_the_save():
    try:
        yield
    except ServiceError as exc:
        raise SaveRefused(str(exc))


class UndoRefusedSaves:
    """Admin views run in one transaction: a refusal at save time (the poll was deleted or
    changed meanwhile, although the forms were valid) rolls all of it back and says why."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except SaveRefused as exc:
            messages.error(request, f"Nothing was saved: {exc}")
            return HttpResponseRedirect(request.path)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except SaveRefused as exc:
            messages.error(request, f"Nothing was deleted: {exc}")
            return HttpResponseRedirect(request.path)


def option_label(option: Option, time_zone: str | None = None) -> str:
    """A date, or a slot's start in UTC and, for a poll with a time zone, on its wall clock."""
    if option.date is not None:
        return option.date.isoformat()
    return f"{option.start_time:%Y-%m-%d %H:%M} UTC{local_time(option, time_zone, ' = ')}, {option.duration} min"


def local_time(option: Option, time_zone: str | None, prefix: str = "") -> str:
    """The slot's start on the wall clock of the poll's time zone (`Mon 2030-06-03 09:00
    Europe/Berlin`); empty for a date or a floating time."""
    if option.start_time is None or not time_zone:
        return ""
    return f"{prefix}{option.start_time.astimezone(ZoneInfo(time_zone)):%a %Y-%m-%d %H:%M} {time_zone}"


def report(request, done: list[str], what: str, refused: list[str]) -> None:
    if done:
        messages.success(request, f"{what}: {', '.join(done)}.")
    for reason in refused:
        messages.error(request, reason)
