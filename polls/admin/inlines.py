"""The inlines of a poll's page: its options, and its responses with their votes (each
editable in place, or listed for a poll too big for one form)."""

from django.conf import settings
from django.contrib import admin

from polls.admin.common import local_time
from polls.admin.forms import OptionFormSet, participant_form
from polls.models import Option, Participant, Poll


class OptionInline(admin.TabularInline):
    model = Option
    formset = OptionFormSet
    extra = 0
    verbose_name_plural = "Options (start times in UTC, and in the poll's time zone; removing an option removes its votes)"
    readonly_fields = ["in_poll_time_zone"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("poll")

    def get_fields(self, request, obj=None):
        if obj is not None and obj.kind == Poll.Kind.DATE:
            return ["date"]
        return ["start_time", "duration", *(["in_poll_time_zone"] if obj is not None and obj.time_zone else [])]

    @admin.display(description="Start in the poll's time zone")
    def in_poll_time_zone(self, option):
        return local_time(option, option.poll.time_zone) or "-"


def poll_options(poll: Poll) -> list[Option]:
    return list(poll.options.all())


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
