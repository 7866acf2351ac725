"""The poll back office's forms. Each checks its input with the services' own rules while it
validates (`clean_details`, `clean_options`, `clean_response`), and never writes: a new poll
is created by `services.create_poll` when the admin saves (core.backoffice.ServiceFormAdmin),
so that a refusal shows as a form error and nothing is saved."""

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet

from core.backoffice import ServiceForm
from core.errors import ServiceError
from core.formats import parse_date, parse_date_time
from polls import selectors, services
from polls.admin.common import option_label
from polls.models import Option, Participant, Poll
from polls.rules import (
    DESCRIPTION_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    SETTING_COLUMNS,
    SETTINGS,
    TITLE_MAX_LENGTH,
    TimeSlot,
    setting_default,
)
from spaces.models import Space

EDITABLE = [*services.DETAILS, *SETTING_COLUMNS]

# --- Adding a poll: the same rules as POST /v1/polls ---------------------------------------


class PollAddForm(ServiceForm):
    """A new poll: the fields of `POST /v1/polls` without generators, parsed as the API
    parses them (core.formats) while the form validates, and created with
    `services.create_poll` when the admin saves (core.backoffice.ServiceFormAdmin), so that
    every rule and its message is the service's."""

    # Searches as you type (the space list's search: name, id, owner's e-mail).
    space = forms.ModelChoiceField(queryset=Space.objects.order_by("name"),
                                   widget=AutocompleteSelect(Poll._meta.get_field("space"), admin.site))
    organizer_email = forms.CharField(
        required=False, label="Organizer e-mail", help_text="A member of the space; empty: the space owner."
    )
    title = forms.CharField(max_length=TITLE_MAX_LENGTH)
    kind = forms.ChoiceField(choices=Poll.Kind.choices)
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="One per line. Date poll: YYYY-MM-DD. Time poll: a start as in the API "
        "(2026-12-01T09:00:00Z, or without offset: wall clock in the time zone), optionally followed by "
        "a duration in minutes.",
    )
    time_zone = forms.CharField(required=False, help_text="Time polls: an IANA name; empty for floating times.")
    duration = forms.IntegerField(required=False, help_text="Time polls: minutes, for options without their own.")
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 3}))
    location = forms.CharField(required=False, max_length=LOCATION_MAX_LENGTH)

    class Meta:
        model = Poll
        fields = []

    arguments: dict | None = None

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.arguments = self._arguments(cleaned)
        except ValueError as exc:
            raise ValidationError(str(exc))
        return cleaned

    def save_through_service(self):
        poll, _ = services.create_poll(space=self.cleaned_data["space"], **self.arguments)
        return poll

    def _arguments(self, cleaned) -> dict:
        kind = cleaned["kind"]
        dates, slots = [], []
        for line in filter(None, (line.strip() for line in cleaned["options"].splitlines())):
            try:
                if kind == Poll.Kind.DATE:
                    dates.append(parse_date(line))
                    continue
                start, _, minutes = line.partition(" ")
                minutes = minutes.strip()
                if minutes and not minutes.isdigit():
                    raise ValueError("the duration must be a whole number of minutes")
                slots.append(TimeSlot(parse_date_time(start), int(minutes) if minutes else None))
            except ValueError as exc:
                raise ValueError(f"options: {line!r}: {exc}")
        return {
            "title": cleaned["title"],
            "kind": kind,
            "dates": dates,
            "slots": slots,
            "time_zone": cleaned["time_zone"] or None,
            "duration": cleaned["duration"],
            "description": cleaned["description"],
            "location": cleaned["location"],
            "organizer_email": cleaned["organizer_email"] or None,
            **{column: cleaned[column] for column in SETTING_COLUMNS},
        }


for _column, _help in SETTINGS.values():
    PollAddForm.base_fields[_column] = forms.BooleanField(required=False, initial=setting_default(_column), help_text=_help)
    PollAddForm.declared_fields[_column] = PollAddForm.base_fields[_column]

ADD_FIELDS = ["space", "organizer_email", "title", "kind", "options", "time_zone", "duration", "description",
              "location", *SETTING_COLUMNS]


# --- Editing: details and settings, options, participants -------------------------------------


class PollChangeForm(forms.ModelForm):
    class Meta:
        model = Poll
        fields = EDITABLE

    def clean(self):
        cleaned = super().clean()
        details = {name: cleaned[name] for name in self.changed_data if name in EDITABLE and name in cleaned}
        try:
            services.clean_details(details)
        except ServiceError as exc:
            raise ValidationError(str(exc))
        return cleaned


class OptionFormSet(BaseInlineFormSet):
    """Collects the wanted options (kept, changed, added; left out means removed) and checks
    them with `services.clean_options`; `save_related` hands them to `update_poll`."""

    wanted: list[dict] | None = None

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        wanted = []
        for form in self.forms:
            if not form.cleaned_data or form.cleaned_data.get("DELETE"):
                continue
            item = {name: form.cleaned_data.get(name) for name in services.OPTION_FIELDS}
            if not form.instance._state.adding:  # (a new row's instance has its random id already)
                item["id"] = form.instance.pk
            wanted.append(item)
        try:
            self.wanted = services.clean_options(kind=self.instance.kind, options=wanted)
        except ServiceError as exc:
            raise ValidationError(str(exc))


class ParticipantForm(forms.ModelForm):
    """A response: name, e-mail and one vote column per option (built per poll)."""

    class Meta:
        model = Participant
        fields = ["name", "email"]

    vote_fields: dict[str, str] = {}  # form field name -> option id

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.current_votes = {} if self.instance._state.adding else selectors.participant_votes(self.instance)
        for field_name, option_id in self.vote_fields.items():
            stored = self.current_votes.get(option_id)
            field = self.fields[field_name]
            if stored and stored not in dict(field.choices):
                field.choices = [*field.choices, (stored, f"{stored} (older data)")]
            self.initial.setdefault(field_name, stored or "")

    def votes(self) -> dict:
        return {option_id: self.cleaned_data.get(name) or None for name, option_id in self.vote_fields.items()}

    def clean(self):
        """An added or changed response must pass `services.clean_response` (and, if new,
        the poll must accept responses); the poll is the one being edited, as submitted."""
        cleaned = super().clean()
        if self.errors or not self.has_changed() or cleaned.get("DELETE"):
            return cleaned
        poll = self.instance.poll
        try:
            if self.instance._state.adding:
                services.check_accepts_responses(poll)
            services.clean_response(poll=poll, name=cleaned.get("name"), email=cleaned.get("email"),
                                    votes=self.votes(), current=self.current_votes)
        except ServiceError as exc:
            raise ValidationError(str(exc))
        return cleaned

    def save_response(self, live_options: set[str] | None = None) -> None:
        """Create, update or delete this response through the services. `live_options`: the
        poll's options after an edit in the same submission (votes on removed ones drop)."""
        participant = self.instance
        if self.cleaned_data.get("DELETE"):
            if not participant._state.adding:
                services.delete_response(participant=participant)
            return
        votes = {key: value for key, value in self.votes().items() if live_options is None or key in live_options}
        name, email = self.cleaned_data["name"], self.cleaned_data.get("email") or ""
        if participant._state.adding:
            services.create_response(poll=participant.poll, name=name, email=email or None, votes=votes)
        else:
            services.update_response(participant=participant, name=name, email=email, votes=votes)


def participant_form(options: list[Option]) -> type[ParticipantForm]:
    choices = [("", "—"), *((kind, kind) for kind in services.VOTE_TYPES)]
    # The options of one poll, read through it (so `option.poll` costs no query).
    time_zone = options[0].poll.time_zone if options else None
    fields = {f"vote_{option.pk}": forms.ChoiceField(choices=choices, required=False, label=option_label(option, time_zone))
              for option in options}
    vote_fields = {name: name.removeprefix("vote_") for name in fields}
    return type("ParticipantVotesForm", (ParticipantForm,), {**fields, "vote_fields": vote_fields})


class ScheduleForm(forms.Form):
    option = forms.ChoiceField(widget=forms.RadioSelect, label="Pick the option the poll is scheduled at")

    def __init__(self, *args, options, time_zone=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["option"].choices = [(option.pk, option_label(option, time_zone)) for option in options]
