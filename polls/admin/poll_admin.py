"""The poll list and a poll's page: search and filters, the lifecycle actions and buttons,
the schedule page, and saving an edit through one service call per change."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from core.backoffice import ServiceFormAdmin
from core.errors import ServiceError
from polls import selectors, services
from polls.admin.common import UndoRefusedSaves, option_label, refusals_undo_the_save, report
from polls.admin.forms import ADD_FIELDS, EDITABLE, ParticipantForm, PollAddForm, PollChangeForm, ScheduleForm
from polls.admin.inlines import OptionInline, ParticipantInline, ParticipantListInline, fits_one_form
from polls.models import Option, Poll
from polls.rules import PURGE_AFTER


class DeletedFilter(admin.SimpleListFilter):
    """Live polls unless asked otherwise: deleted ones wait for their purge out of sight."""

    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("no", "Live"), ("yes", f"Deleted (purged after {PURGE_AFTER.days} days)"), ("all", "Live and deleted")]

    def choices(self, changelist):
        # "Live" is the default (no parameter); there is no separate "All" entry.
        for value, label in self.lookup_choices:
            selected = self.value() == value or (self.value() is None and value == "no")
            query = {} if value == "no" else {self.parameter_name: value}
            yield {"selected": selected, "query_string": changelist.get_query_string(query, [self.parameter_name]),
                   "display": label}

    def queryset(self, request, queryset):
        if self.value() == "all":
            return queryset
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        return queryset.filter(deleted_at__isnull=True)


def _results(poll: Poll) -> dict:
    """The poll's results as the API counts them: (label, OptionResult) per option, labelled
    in UTC and in the poll's time zone, the vote types and the participant count."""
    results = selectors.poll_results(selectors.get_poll(poll.space, poll.pk))
    return {
        "options": [(option_label(result.option, poll.time_zone), result) for result in results.options],
        "types": [kind for kind, _ in results.options[0].votes] if results.options else [],
        "participant_count": results.poll.participant_count,
    }


# action name -> (service, what the message says was done, the button's label)
LIFECYCLE = {
    "close": (services.close_poll, "Closed", "Close"),
    "reopen": (services.reopen_poll, "Reopened", "Reopen"),
    "cancel": (services.cancel_poll, "Canceled", "Cancel the scheduled event"),
    "delete": (services.delete_poll, "Deleted", "Delete"),
    "restore": (services.restore_poll, "Restored", "Restore"),
}


@admin.register(Poll)
class PollAdmin(ServiceFormAdmin, UndoRefusedSaves, admin.ModelAdmin):
    list_display = ["title", "id", "space", "kind", "status", "participant_count", "created_at", "updated_at",
                    "deleted_at"]
    list_filter = ["status", DeletedFilter, "kind", "space"]
    list_select_related = ["space"]
    search_fields = ["id", "title", "space__name", "space__id", "organizer__email"]
    ordering = ["-created_at", "-id"]
    actions = ["close_polls", "reopen_polls", "schedule_poll", "cancel_polls", "delete_polls", "restore_polls"]
    inlines = [OptionInline, ParticipantInline]  # ParticipantListInline for big polls
    readonly = ["id", "space", "organizer", "kind", "time_zone", "status", "scheduled_at", "participant_count",
                "created_at", "updated_at", "deleted_at", "past_at", "auto_close_held", "lifecycle", "vote_totals",
                "events"]

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
        return option_label(poll.scheduled_option, poll.time_zone) if poll.scheduled_option else "-"

    @admin.display(description="Vote totals")
    def vote_totals(self, poll):
        if poll.deleted_at is not None:
            return "-"
        return render_to_string("admin/polls/poll/vote_totals.html", {"results": _results(poll)})

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
            if (action == "restore") == (poll.deleted_at is not None) and action != "delete"
        ]
        # Delete asks first, on a page of its own.
        delete = "" if poll.deleted_at is not None else format_html(
            '<a class="button" href="{}">Delete…</a>', reverse("admin:polls_poll_confirm_delete", args=[poll.pk]))
        return format_html("{} {} {}", schedule, format_html_join(
            " ", '<button type="submit" class="button" formaction="{}" formmethod="post" formnovalidate>{}</button>',
            buttons,
        ), delete)

    @admin.display(description="Events")
    def events(self, poll):
        url = reverse("admin:webhooks_event_changelist") + f"?poll_id={poll.pk}"
        return format_html('<a href="{}">Events of this poll</a> (the outbox, newest first)', url)

    # Saving: one service call for details, settings and options, one per changed response.

    def save_model(self, request, obj, form, change):
        if not change:
            super().save_model(request, obj, form, change)  # services.create_poll (may refuse)

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
            path("<path:object_id>/confirm-delete/", self.admin_site.admin_view(self.confirm_delete_view),
                 name="polls_poll_confirm_delete"),
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
        options = list(poll.options.all())
        form = ScheduleForm(request.POST or None, options=options, time_zone=poll.time_zone,
                            initial={"option": poll.scheduled_option_id})
        if request.method == "POST" and form.is_valid():
            try:
                services.schedule_poll(poll=poll, option_id=form.cleaned_data["option"])
                label = option_label(poll.options.get(pk=form.cleaned_data["option"]), poll.time_zone)
                self.log_change(request, poll, f"Scheduled at {label}")
                messages.success(request, f"Poll {poll.pk} scheduled at {label}.")
                return HttpResponseRedirect(self._change_url(poll.pk))
            except ServiceError as exc:
                form.add_error(None, str(exc))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "poll": poll,
            "form": form,
            "results": _results(poll) if poll.deleted_at is None else None,
            "title": f"Schedule {poll}",
        }
        return TemplateResponse(request, "admin/polls/poll/schedule.html", context)

    def confirm_delete_view(self, request, object_id):
        """What Delete (the button) shows first; its form posts to the lifecycle view."""
        poll = get_object_or_404(Poll, pk=object_id)
        if not self.has_change_permission(request, poll):
            raise PermissionDenied
        return self._confirm_delete(request, [poll], reverse("admin:polls_poll_lifecycle", args=[poll.pk, "delete"]))

    def _confirm_delete(self, request, polls, action_url: str, selected: list[str] = ()):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "polls": polls,
            "action_url": action_url,
            "selected": selected,
            "purge_days": PURGE_AFTER.days,
            "title": "Delete polls?" if len(polls) > 1 else f"Delete {polls[0]}?",
        }
        return TemplateResponse(request, "admin/polls/poll/confirm_delete.html", context)

    def _apply(self, request, polls, action: str) -> None:
        service, done_label, _ = LIFECYCLE[action]
        done, refused = [], []
        for poll in polls:
            try:
                service(poll=poll)
                done.append(poll.pk)
                self.log_change(request, poll, done_label)  # the poll's History page: who, when, what
            except ServiceError as exc:
                refused.append(str(exc))
        report(request, done, done_label, refused)

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

    @admin.action(description=f"Delete selected polls (gone from the API; purged after {PURGE_AFTER.days} days)",
                  permissions=["change"])
    def delete_polls(self, request, queryset):
        if request.POST.get("confirmed") != "yes":  # first the confirmation page, which posts back here
            polls = list(queryset)
            return self._confirm_delete(request, polls, reverse("admin:polls_poll_changelist"),
                                        selected=[poll.pk for poll in polls])
        self._apply(request, queryset, "delete")
        return None

    @admin.action(description="Restore selected deleted polls", permissions=["change"])
    def restore_polls(self, request, queryset):
        self._apply(request, queryset, "restore")
