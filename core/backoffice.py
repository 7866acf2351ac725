"""What every app's back office (Django admin) shares."""

from django import forms
from django.contrib import messages
from django.utils.html import format_html

from core.errors import ServiceError


def adopt(obj, saved) -> None:
    """Turn the admin's unsaved `obj` into the row a service saved, so that the admin logs
    the addition and redirects to the right object."""
    obj.__dict__.update(saved.__dict__)


def report(request, done: int, what: str, refused: list[str] = ()) -> None:
    messages.success(request, f"{done} {what}.")
    for reason in dict.fromkeys(refused):
        messages.error(request, reason)


def short_time(value) -> str:
    """A list column's instant: `2026-11-23 19:35 UTC` (the admin's long form takes a third
    of a 1280-pixel screen in a list of several)."""
    return f"{value:%Y-%m-%d %H:%M} UTC" if value is not None else "-"


def clipped(text: str, length: int = 60) -> str:
    """A long text in a list column: its start, the whole of it on hover."""
    if not text:
        return "-"
    if len(text) <= length:
        return text
    return format_html('<span title="{}">{}…</span>', text, text[: length - 1])


# --- Add and change forms whose save is a service call ------------------------------------


class SaveRefused(Exception):
    """A service refused, at save time, what the form had accepted."""


class ServiceForm(forms.ModelForm):
    """A back-office form whose save is a service call. Its `clean()` only checks and parses
    the input (it never writes); `save_through_service()` makes the change and returns the
    saved row. `ServiceFormAdmin` calls it in the admin's save step, inside the view's
    transaction."""

    def save_through_service(self):
        raise NotImplementedError


class ServiceChangeForm(ServiceForm):
    """A change form whose save is a service call on the stored row: unchanged, nothing is
    called; changed, `update(stored)` is, with the row as the database has it (the form has
    already copied the new values onto its own instance) and the input in `cleaned_data`."""

    def save_through_service(self):
        if not self.has_changed():
            return self.instance
        return self.update(type(self.instance).objects.get(pk=self.instance.pk))

    def update(self, stored):
        raise NotImplementedError


class ShowsRefusal:
    """Mixed into the re-rendered form after a refusal at save time: the same input, valid
    as before, plus the service's message."""

    refusal = ""

    def full_clean(self):
        super().full_clean()
        if self.is_bound:
            self.add_error(None, self.refusal)


class ServiceFormAdmin:
    """The one way a back-office form reaches a service (mix in before `admin.ModelAdmin`):

    1. the form's `clean()` validates and parses only;
    2. `save_model` calls `form.save_through_service()` inside the transaction Django's
       admin opens around the add or change view;
    3. a `ServiceError` there aborts that transaction (nothing is created or changed, no
       audit entry is written) and the same submission is shown again with the service's
       message as a form error, never a 500.

    A `save_model` of its own that calls a service directly gets the same treatment for its
    refusals. Subclasses that show a one-time value (a key, a secret) extend `save_model`
    and read it from the form after `super().save_model(...)`: only reached once the save
    held."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except (SaveRefused, ServiceError) as refused:  # (a service called by a save_model of its own)
            # The view's transaction is rolled back; the same input again, now with the reason.
            request.backoffice_refusal = str(refused)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        refusal = getattr(request, "backoffice_refusal", None)
        if refusal:
            form = type(form.__name__, (ShowsRefusal, form), {"refusal": refusal})
        return form

    def save_model(self, request, obj, form, change):
        if not isinstance(form, ServiceForm):
            return super().save_model(request, obj, form, change)
        try:
            saved = form.save_through_service()
        except ServiceError as exc:
            raise SaveRefused(str(exc)) from exc
        adopt(obj, saved)
