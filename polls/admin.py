"""The poll back office: read, search and filter polls of every space; close, reopen,
schedule, cancel, delete and restore them; edit details, options and settings; add, edit and
remove responses with their votes.

Every change goes through `polls.services`, the functions `manage.py polls` calls, so each
records the same event. Forms check their input with the services' own `clean_*` rules
while they validate, so that a refusal shows as a form error and nothing is saved.
"""

from contextlib import contextmanager

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from core.api.errors import flatten_validation_errors
from core.errors import ServiceError
from polls import selectors, services
from polls.models import Option, Participant, Poll
from polls.rules import SETTINGS
from polls.serializers import poll_input_serializer
from spaces.models import Space

EDITABLE = [*services.DETAILS, *services.SETTING_COLUMNS]


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


def option_label(option: Option) -> str:
    if option.date is not None:
        return option.date.isoformat()
    return f"{option.start_time:%Y-%m-%d %H:%M} UTC, {option.duration} min"


def _report(request, done: list[str], what: str, refused: list[str]) -> None:
    if done:
        messages.success(request, f"{what}: {', '.join(done)}.")
    for reason in refused:
        messages.error(request, reason)


# --- Adding a poll: the same input and rules as POST /v1/polls ------------------------------


class PollAddForm(forms.ModelForm):
    """Builds a `POST /v1/polls` body, validates it with the API's own serializer and creates
    the poll with `services.create_poll` while validating: API rules, API messages."""

    space = forms.ModelChoiceField(queryset=Space.objects.order_by("name"))
    organizer_email = forms.EmailField(
        required=False, label="Organizer e-mail", help_text="A member of the space; empty: the space owner."
    )
    title = forms.CharField(max_length=255)
    kind = forms.ChoiceField(choices=Poll.Kind.choices)
    options = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="One per line. Date poll: YYYY-MM-DD. Time poll: a start as in the API "
        "(2026-12-01T09:00:00Z, or without offset: wall clock in the time zone), optionally followed by "
        "a duration in minutes.",
    )
    time_zone = forms.CharField(required=False, help_text="Time polls: an IANA name; empty for floating times.")
    duration = forms.IntegerField(required=False, help_text="Time polls: minutes, for options without their own.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    location = forms.CharField(required=False)

    class Meta:
        model = Poll
        fields = []

    created: Poll | None = None

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            body = self._body(cleaned)
        except ValueError as exc:
            raise ValidationError(str(exc))
        serializer = poll_input_serializer(body)
        if not serializer.is_valid():
            raise ValidationError(flatten_validation_errors(serializer.errors))
        try:
            self.created, _ = services.create_poll(space=cleaned["space"], data=serializer.validated_data)
        except ServiceError as exc:
            raise ValidationError(str(exc))
        return cleaned

    def _body(self, cleaned) -> dict:
        body = {"title": cleaned["title"], "kind": cleaned["kind"], "options": []}
        for line in filter(None, (line.strip() for line in cleaned["options"].splitlines())):
            if cleaned["kind"] == Poll.Kind.DATE:
                body["options"].append({"date": line})
                continue
            start, _, minutes = line.partition(" ")
            option = {"startTime": start}
            if minutes.strip():
                if not minutes.strip().isdigit():
                    raise ValueError(f"options: {line!r}: the duration must be a whole number of minutes")
                option["duration"] = int(minutes)
            body["options"].append(option)
        for name, field in (("description", "description"), ("location", "location"), ("timeZone", "time_zone")):
            if cleaned.get(field):
                body[name] = cleaned[field]
        if cleaned.get("duration") is not None:
            body["duration"] = cleaned["duration"]
        if cleaned.get("organizer_email"):
            body["organizer"] = {"email": cleaned["organizer_email"]}
        for name, (column, _, _) in SETTINGS.items():
            body[name] = cleaned[column]
        return body


for _name, (_column, _default, _help) in SETTINGS.items():
    PollAddForm.base_fields[_column] = forms.BooleanField(required=False, initial=_default, help_text=_help)
    PollAddForm.declared_fields[_column] = PollAddForm.base_fields[_column]

ADD_FIELDS = ["space", "organizer_email", "title", "kind", "options", "time_zone", "duration", "description",
              "location", *services.SETTING_COLUMNS]


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
            item = {name: form.cleaned_data.get(name) for name in ("date", "start_time", "duration")}
            if not form.instance._state.adding:  # (a new row's instance has its random id already)
                item["id"] = form.instance.pk
            wanted.append(item)
        try:
            self.wanted = services.clean_options(kind=self.instance.kind, options=wanted)
        except ServiceError as exc:
            raise ValidationError(str(exc))


class OptionInline(admin.TabularInline):
    model = Option
    formset = OptionFormSet
    extra = 0
    verbose_name_plural = "Options (times in UTC; removing an option removes its votes)"

    def get_fields(self, request, obj=None):
        return ["date"] if obj is not None and obj.kind == Poll.Kind.DATE else ["start_time", "duration"]


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
    fields = {f"vote_{option.pk}": forms.ChoiceField(choices=choices, required=False, label=option_label(option))
              for option in options}
    vote_fields = {name: name.removeprefix("vote_") for name in fields}
    return type("ParticipantVotesForm", (ParticipantForm,), {**fields, "vote_fields": vote_fields})


def poll_options(poll: Poll) -> list[Option]:
    return list(poll.options.order_by("date", "start_time", "duration", "id"))


class ParticipantInline(admin.TabularInline):
    """Every response of the poll with a vote column per option, editable in place."""

    model = Participant
    extra = 1
    verbose_name_plural = "Participants and their votes (— : no answer)"

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("votes").order_by("created_at", "id")

    def get_formset(self, request, obj=None, **kwargs):
        kwargs["form"] = participant_form(poll_options(obj) if obj is not None else [])
        kwargs["fields"] = ["name", "email", *kwargs["form"].vote_fields]
        return super().get_formset(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ["name", "email", *self.get_formset(request, obj).form.vote_fields]


class ParticipantListInline(admin.TabularInline):
    """For a poll too big to edit every response in one form: the responses, each edited on
    its own page."""

    model = Participant
    fields = ["name", "email", "created_at", "updated_at"]
    readonly_fields = fields
    extra = 0
    show_change_link = True
    verbose_name_plural = "Participants (too many to edit here: open one to edit its votes)"

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("created_at", "id")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def fits_one_form(poll: Poll) -> bool:
    """Whether the poll's page, with every response editable, stays within the number of
    fields Django accepts in one request (DATA_UPLOAD_MAX_NUMBER_FIELDS): about 6 fields per
    option, and per response 5 plus one per option."""
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    if limit is None:
        return True
    options, participants = poll.options.count(), poll.participants.count()
    return 40 + 6 * options + (participants + 1) * (5 + options) <= limit


# --- The poll admin -------------------------------------------------------------------------


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("no", "Live"), ("yes", "Deleted (purged after 30 days)")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(deleted_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


# action name -> (service, what the message says was done, the button's label)
LIFECYCLE = {
    "close": (services.close_poll, "Closed", "Close"),
    "reopen": (services.reopen_poll, "Reopened", "Reopen"),
    "cancel": (services.cancel_poll, "Canceled", "Cancel the scheduled event"),
    "delete": (services.delete_poll, "Deleted", "Delete"),
    "restore": (services.restore_poll, "Restored", "Restore"),
}


@admin.register(Poll)
class PollAdmin(UndoRefusedSaves, admin.ModelAdmin):
    list_display = ["title", "id", "space", "kind", "status", "participant_count", "created_at", "updated_at",
                    "deleted_at"]
    list_filter = ["status", DeletedFilter, "kind", "space"]
    list_select_related = ["space"]
    search_fields = ["id", "title", "space__name", "space__id", "organizer__email"]
    ordering = ["-created_at", "-id"]
    actions = ["close_polls", "reopen_polls", "schedule_poll", "cancel_polls", "delete_polls", "restore_polls"]
    inlines = [OptionInline, ParticipantInline]  # ParticipantListInline for big polls
    readonly = ["id", "space", "organizer", "kind", "time_zone", "status", "scheduled_at", "participant_count",
                "created_at", "updated_at", "deleted_at", "past_at", "auto_close_held", "lifecycle", "events"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(participant_count=Count("participants"))

    @admin.display(description="Participants", ordering="participant_count")
    def participant_count(self, poll):
        return poll.participant_count

    def has_delete_permission(self, request, obj=None):
        return False  # deleting is soft and records an event: the "Delete" action and button

    def get_inlines(self, request, obj):
        if obj is None:
            return []
        return [OptionInline, ParticipantInline if fits_one_form(obj) else ParticipantListInline]

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = PollAddForm if obj is None else PollChangeForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ADD_FIELDS if obj is None else [*self.readonly[:5], *EDITABLE, *self.readonly[5:]]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly

    @admin.display(description="Scheduled at")
    def scheduled_at(self, poll):
        return option_label(poll.scheduled_option) if poll.scheduled_option else "-"

    @admin.display(description="Actions")
    def lifecycle(self, poll):
        """Buttons that post the change form to the lifecycle view (no nested forms)."""
        # Schedule opens its own page: a link, so the change form is not submitted (a GET
        # submit would put the whole form and its CSRF token into the URL).
        schedule = format_html('<a class="button" href="{}">Schedule…</a>',
                               reverse("admin:polls_poll_schedule", args=[poll.pk]))
        buttons = [
            (reverse("admin:polls_poll_lifecycle", args=[poll.pk, action]), label)
            for action, (_, _, label) in LIFECYCLE.items()
            if (action == "restore") == (poll.deleted_at is not None)
        ]
        return format_html("{} {}", schedule, format_html_join(
            " ", '<button type="submit" class="button" formaction="{}" formmethod="post" formnovalidate>{}</button>',
            buttons,
        ))

    @admin.display(description="Events")
    def events(self, poll):
        url = reverse("admin:webhooks_event_changelist") + f"?poll_id={poll.pk}"
        return format_html('<a href="{}">Events of this poll</a> (the outbox, newest first)', url)

    # Saving: one service call for details, settings and options, one per changed response.

    def save_model(self, request, obj, form, change):
        if not change:
            obj.__dict__.update(form.created.__dict__)  # created by the form's service call

    def save_related(self, request, form, formsets, change):
        for formset in formsets:  # what the admin's change message reads from a saved formset
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if not change:
            return
        options_formset = next(f for f in formsets if f.model is Option)
        details = {name: form.cleaned_data[name] for name in form.changed_data if name in EDITABLE}
        wanted = options_formset.wanted if options_formset.has_changed() else None
        with refusals_undo_the_save():
            poll = services.update_poll(poll=form.instance, details=details, options=wanted)
            live = set(poll.options.values_list("pk", flat=True))
            for formset in formsets:
                if issubclass(formset.form, ParticipantForm):  # not the read-only list
                    for participant_form in formset.forms:
                        if participant_form.has_changed():
                            participant_form.save_response(live)

    # Lifecycle actions: on the change page (buttons) and on the list (bulk).

    def get_urls(self):
        return [
            path("<path:object_id>/lifecycle/<str:action>/", self.admin_site.admin_view(self.lifecycle_view),
                 name="polls_poll_lifecycle"),
            path("<path:object_id>/schedule/", self.admin_site.admin_view(self.schedule_view),
                 name="polls_poll_schedule"),
            *super().get_urls(),
        ]

    def _change_url(self, poll_id):
        return reverse("admin:polls_poll_change", args=[poll_id])

    def lifecycle_view(self, request, object_id, action):
        poll = get_object_or_404(Poll, pk=object_id)
        if request.method != "POST" or action not in LIFECYCLE or not self.has_change_permission(request, poll):
            raise PermissionDenied
        self._apply(request, [poll], action)
        return HttpResponseRedirect(self._change_url(poll.pk))

    def schedule_view(self, request, object_id):
        poll = get_object_or_404(Poll, pk=object_id)
        if not self.has_change_permission(request, poll):
            raise PermissionDenied
        options = list(poll.options.order_by("date", "start_time", "duration", "id"))
        form = ScheduleForm(request.POST or None, options=options, initial={"option": poll.scheduled_option_id})
        if request.method == "POST" and form.is_valid():
            try:
                services.schedule_poll(poll=poll, option_id=form.cleaned_data["option"])
                messages.success(request, f"Poll {poll.pk} scheduled at {option_label(poll.options.get(pk=form.cleaned_data['option']))}.")
                return HttpResponseRedirect(self._change_url(poll.pk))
            except ServiceError as exc:
                form.add_error(None, str(exc))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "poll": poll,
            "form": form,
            "results": selectors.poll_results(selectors.get_poll(poll.space, poll.pk)) if poll.deleted_at is None else None,
            "title": f"Schedule {poll}",
        }
        return TemplateResponse(request, "admin/polls/poll/schedule.html", context)

    def _apply(self, request, polls, action: str) -> None:
        service, done_label, _ = LIFECYCLE[action]
        done, refused = [], []
        for poll in polls:
            try:
                service(poll=poll)
                done.append(poll.pk)
            except ServiceError as exc:
                refused.append(str(exc))
        _report(request, done, done_label, refused)

    @admin.action(description="Close selected polls", permissions=["change"])
    def close_polls(self, request, queryset):
        self._apply(request, queryset, "close")

    @admin.action(description="Reopen selected polls", permissions=["change"])
    def reopen_polls(self, request, queryset):
        self._apply(request, queryset, "reopen")

    @admin.action(description="Schedule the selected poll (pick an option)…", permissions=["change"])
    def schedule_poll(self, request, queryset):
        polls = list(queryset[:2])
        if len(polls) != 1:
            messages.error(request, "Select exactly one poll to schedule.")
            return None
        return HttpResponseRedirect(reverse("admin:polls_poll_schedule", args=[polls[0].pk]))

    @admin.action(description="Cancel the scheduled event of selected polls", permissions=["change"])
    def cancel_polls(self, request, queryset):
        self._apply(request, queryset, "cancel")

    @admin.action(description="Delete selected polls (gone from the API; purged after 30 days)", permissions=["change"])
    def delete_polls(self, request, queryset):
        self._apply(request, queryset, "delete")

    @admin.action(description="Restore selected deleted polls", permissions=["change"])
    def restore_polls(self, request, queryset):
        self._apply(request, queryset, "restore")


class ScheduleForm(forms.Form):
    option = forms.ChoiceField(widget=forms.RadioSelect, label="Pick the option the poll is scheduled at")

    def __init__(self, *args, options, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["option"].choices = [(option.pk, option_label(option)) for option in options]


# --- One response at a time (any poll size) ----------------------------------------------------


@admin.register(Participant)
class ParticipantAdmin(UndoRefusedSaves, admin.ModelAdmin):
    """Responses of every poll; one response's name, e-mail and votes edited on its page.
    New responses are added on the poll's page or with `manage.py polls respond`."""

    list_display = ["name", "email", "poll", "created_at", "updated_at"]
    list_select_related = ["poll"]
    search_fields = ["id", "name", "email", "poll__id", "poll__title"]
    ordering = ["-created_at", "-id"]
    readonly_fields = ["id", "poll", "created_at", "updated_at"]
    actions = ["remove_responses"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(poll__deleted_at__isnull=True)

    def has_add_permission(self, request):
        return False

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a plain delete would skip the event
        return actions

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = participant_form(poll_options(obj.poll) if obj is not None else [])
        kwargs["fields"] = ["name", "email", *kwargs["form"].vote_fields]
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return [*self.readonly_fields, "name", "email", *self.get_form(request, obj).vote_fields]

    def save_model(self, request, obj, form, change):
        with refusals_undo_the_save():
            form.save_response()

    def save_related(self, request, form, formsets, change):
        pass  # the votes were saved with the response

    def delete_model(self, request, obj):
        with refusals_undo_the_save():
            services.delete_response(participant=obj)

    @admin.action(description="Remove selected responses", permissions=["delete"])
    def remove_responses(self, request, queryset):
        done, refused = [], []
        for participant in queryset.select_related("poll"):
            try:
                services.delete_response(participant=participant)
                done.append(participant.pk)
            except ServiceError as exc:
                refused.append(str(exc))
        _report(request, done, "Removed", refused)
