"""Back office for the outbox: every recorded event, per space and per poll, read only."""

from django.contrib import admin

from webhooks.models import Event


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """Events are facts: nobody adds, edits or deletes them here. Filter by space for a
    space's event list; `?poll_id=<id>` lists one poll's events."""

    list_display = ["created_at", "type", "space", "poll_id", "participant_id", "id", "dispatched_at"]
    list_filter = ["type", "space"]
    list_select_related = ["space"]
    search_fields = ["id", "poll_id", "participant_id", "space__id", "space__name"]
    ordering = ["-created_at", "-id"]
    fields = ["id", "type", "space", "poll_id", "participant_id", "created_at", "dispatched_at", "data", "body"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
