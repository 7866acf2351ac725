"""Back office: per-space limits for customers with a custom plan.

Saving and deleting go through `ratelimit.services`, so that the Redis store drops its
cached copy of the override once the change is committed (the next request uses it).
"""

from django import forms
from django.contrib import admin

from ratelimit import selectors, services
from ratelimit.models import LimitOverride
from ratelimit.stores import StoreUnavailable


class LimitOverrideForm(forms.ModelForm):
    class Meta:
        model = LimitOverride
        fields = ["space", "per_minute", "per_day", "note"]

    def clean(self):
        data = super().clean()
        if data.get("per_minute") is None and data.get("per_day") is None and not self.errors:
            raise forms.ValidationError("Set a limit per minute, per day or both (delete the override for the defaults).")
        return data


@admin.register(LimitOverride)
class LimitOverrideAdmin(admin.ModelAdmin):
    form = LimitOverrideForm
    list_display = ["space", "per_minute", "per_day", "note", "updated_at"]
    list_select_related = ["space"]
    search_fields = ["space__id", "space__name"]
    raw_id_fields = ["space"]

    def get_fields(self, request, obj=None):
        fields = ["space", "per_minute", "per_day", "note"]
        return fields if obj is None else [*fields, "usage", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        # The space is the key of the override: to move it, delete it and add another.
        return [] if obj is None else ["space", "usage", "updated_at"]

    @admin.display(description="Current usage")
    def usage(self, obj):
        try:
            return selectors.usage(space_id=obj.space_id).summary()
        except StoreUnavailable:
            return "The rate-limit store is unreachable."

    def save_model(self, request, obj, form, change):
        saved = services.set_override(space=obj.space, per_minute=obj.per_minute, per_day=obj.per_day, note=obj.note)
        obj.__dict__.update(saved.__dict__)  # the admin logs and redirects to the saved row

    def delete_model(self, request, obj):
        services.remove_override(space_id=obj.space_id)

    def delete_queryset(self, request, queryset):
        for space_id in queryset.values_list("space_id", flat=True):
            services.remove_override(space_id=space_id)
