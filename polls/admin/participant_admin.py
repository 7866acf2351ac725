"""Responses of every poll, one at a time (any poll size)."""

from django.contrib import admin

from core.errors import ServiceError
from polls import services
from polls.admin.common import UndoRefusedSaves, refusals_undo_the_save, report
from polls.admin.forms import participant_form
from polls.admin.inlines import poll_options
from polls.models import Participant


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
        report(request, done, "Removed", refused)
