"""Back office for webhooks: the outbox (read only), endpoints, and their deliveries with
every attempt.

Every change goes through `webhooks.services`, the functions `manage.py webhooks` calls.
Where a service may refuse (URL rules, the 5-endpoint limit), the admin calls it when it
saves (core.backoffice.ServiceFormAdmin), so a refusal shows as a form error and nothing is
saved. An endpoint's secret appears once, right
after it is created.
"""

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.backoffice import ServiceChangeForm, ServiceForm, ServiceFormAdmin, clipped, report, short_time
from core.errors import ServiceError
from webhooks import selectors, services, targets
from webhooks.models import EVENT_TYPES, Attempt, Delivery, Endpoint, Event


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log: looked at, never added to, edited or deleted by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """Events are facts: nobody adds, edits or deletes them here. Filter by space for a
    space's event list; `?poll_id=<id>` lists one poll's events."""

    list_display = ["created_at", "type", "space", "poll_id", "participant_id", "id", "dispatched_at"]
    list_filter = ["type", "space"]
    list_select_related = ["space"]
    search_fields = ["id", "poll_id", "participant_id", "space__id", "space__name"]
    ordering = ["-created_at", "-id"]
    fields = ["id", "type", "space", "poll_id", "participant_id", "created_at", "dispatched_at", "data", "body"]
    readonly_fields = fields


# --- Endpoints -------------------------------------------------------------------------


def _event_types_field() -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=[(name, name) for name in EVENT_TYPES], initial=list(EVENT_TYPES), widget=forms.CheckboxSelectMultiple,
        label="Event types",
        help_text="The events sent to this endpoint (at least one).",
    )


class EndpointAddForm(ServiceForm):
    """`services.create_endpoint` makes the endpoint when the admin saves
    (core.backoffice.ServiceFormAdmin), so that the URL rules and the 5-endpoint limit show
    as form errors."""

    event_types = _event_types_field()
    secret: str | None = None

    class Meta:
        model = Endpoint
        fields = ["space", "url", "event_types"]

    def save_through_service(self):
        endpoint, self.secret = services.create_endpoint(
            space=self.cleaned_data["space"], url=self.cleaned_data["url"], event_types=self.cleaned_data["event_types"]
        )
        return endpoint


class EndpointChangeForm(ServiceChangeForm):
    """Only the URL and the subscribed types change, through `services.update_endpoint`."""

    event_types = _event_types_field()

    class Meta:
        model = Endpoint
        fields = ["url", "event_types"]

    def update(self, stored):
        return services.update_endpoint(endpoint=stored, url=self.cleaned_data["url"],
                                        event_types=self.cleaned_data["event_types"])


@admin.register(Endpoint)
class EndpointAdmin(ServiceFormAdmin, admin.ModelAdmin):
    """An endpoint's page lists its latest deliveries; the Deliveries page has them all,
    with every attempt. The secret is never shown again after creation."""

    list_display = ["url", "space", "is_enabled", "subscribed", "failure_streak", "created_at"]
    list_filter = ["is_enabled"]
    list_select_related = ["space"]
    search_fields = ["url", "id", "space__name", "space__id"]
    autocomplete_fields = ["space"]
    actions = ["send_ping", "enable", "disable", "rotate_secret"]

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = EndpointAddForm if obj is None else EndpointChangeForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["space", "url", "event_types"]
        return [
            "id", "space", "url", "event_types", "is_enabled", "payload_version", "failure_streak", "created_at",
            "enabled_at", "disabled_at", "disabled_reason", "recent_deliveries",
        ]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [
            "id", "space", "is_enabled", "payload_version", "failure_streak", "created_at", "enabled_at",
            "disabled_at", "disabled_reason", "recent_deliveries",
        ]

    @admin.display(description="Events")
    def subscribed(self, endpoint):
        return "all" if endpoint.event_types == list(EVENT_TYPES) else ", ".join(endpoint.event_types)

    @admin.display(description="Latest deliveries")
    def recent_deliveries(self, endpoint):
        deliveries = selectors.endpoint_deliveries(endpoint.pk, limit=50)
        if not deliveries:
            return "None yet."
        rows = format_html_join(
            "",
            "<tr><td><a href='{}'>{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (reverse("admin:webhooks_delivery_change", args=[d.pk]), d.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                 d.event.type, d.status, d.attempts, d.last_error or "")
                for d in deliveries
            ),
        )
        everything = reverse("admin:webhooks_delivery_changelist") + f"?endpoint__id__exact={endpoint.pk}"
        return format_html(
            "<table><tr><th>Created</th><th>Event</th><th>Status</th><th>Attempts</th><th>Last error</th></tr>{}</table>"
            "<p><a href='{}'>Every delivery of this endpoint</a></p>",
            rows, everything,
        )

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)  # the service call (may refuse)
        if not change:
            messages.warning(
                request,
                format_html(
                    "The endpoint's signing secret is <code>{}</code>. Copy it now: it will not be shown again.",
                    form.secret,
                ),
            )
        if targets.private_switch_needed(obj.url):
            messages.warning(request, f"Note: {targets.PRIVATE_SWITCH_WARNING}.")

    def delete_model(self, request, obj):
        services.delete_endpoint(endpoint=obj)

    def delete_queryset(self, request, queryset):
        for endpoint in queryset:
            services.delete_endpoint(endpoint=endpoint)

    @admin.action(description="Send a test ping to the selected endpoints (queued; never retried)", permissions=["change"])
    def send_ping(self, request, queryset):
        # Queued, not sent here: a receiver that never answers must not hold a request slot.
        for endpoint in queryset:
            services.queue_ping(endpoint=endpoint)
            self.log_change(request, endpoint, "Queued a test ping")
            messages.success(request, f"Ping to {endpoint.url} queued; its outcome appears in the endpoint's deliveries.")

    @admin.action(description="Enable the selected endpoints (events from now on; nothing is replayed)", permissions=["change"])
    def enable(self, request, queryset):
        endpoints = list(queryset.filter(is_enabled=False))
        for endpoint in endpoints:
            services.enable_endpoint(endpoint=endpoint)
            self.log_change(request, endpoint, "Enabled")
        report(request, len(endpoints), "endpoint(s) enabled")

    @admin.action(description="Disable the selected endpoints (pending retries are canceled)", permissions=["change"])
    def disable(self, request, queryset):
        endpoints = list(queryset.filter(is_enabled=True))
        for endpoint in endpoints:
            services.disable_endpoint(endpoint=endpoint)
            self.log_change(request, endpoint, "Disabled")
        report(request, len(endpoints), "endpoint(s) disabled")


    @admin.action(description="Rotate the secret of the selected endpoints (the old one keeps signing for 24 hours)",
                  permissions=["change"])
    def rotate_secret(self, request, queryset):
        for endpoint in queryset:
            endpoint, secret = services.rotate_secret(endpoint=endpoint)
            self.log_change(request, endpoint, "Rotated the signing secret")  # never the secret itself
            messages.warning(
                request,
                format_html(
                    "The new signing secret of {} is <code>{}</code>. Copy it now: it will not be shown again. "
                    "The old one keeps signing until {}.",
                    endpoint.url, secret, endpoint.previous_secret_expires_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                ),
            )


# --- Deliveries and attempts -----------------------------------------------------------


class AttemptInline(admin.TabularInline):
    """Every attempt: its id (the X-Service-Delivery header), when, how long, and what
    came back."""

    model = Attempt
    fields = ["id", "started_at", "duration_ms", "status_code", "succeeded", "error", "response_excerpt"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "attempt"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    """Deliveries are a log: read only. "Resend" sends the event again as a new delivery."""

    # At 1280 pixels the whole row fits: status, attempts and the last error in view.
    list_display = ["created", "event_type", "endpoint_url", "status", "attempts_made", "next_attempt", "error"]
    list_filter = ["status", "event__type"]
    list_select_related = ["event", "endpoint"]
    search_fields = ["id", "event__id", "endpoint__id", "endpoint__url"]
    ordering = ["-created_at", "id"]
    fields = [
        "id", "endpoint", "event", "event_type", "status", "attempts", "max_attempts", "next_attempt_at",
        "claimed_until", "created_at", "finished_at", "last_error", "body",
    ]
    readonly_fields = fields
    inlines = [AttemptInline]
    actions = ["resend"]

    @admin.display(description="Event", ordering="event__type")
    def event_type(self, delivery):
        return delivery.event.type

    @admin.display(description="Created", ordering="created_at")
    def created(self, delivery):
        return short_time(delivery.created_at)

    @admin.display(description="Endpoint", ordering="endpoint__url")
    def endpoint_url(self, delivery):
        return clipped(delivery.endpoint.url, 40)

    @admin.display(description="Attempts", ordering="attempts")
    def attempts_made(self, delivery):
        return f"{delivery.attempts}/{delivery.max_attempts}"

    @admin.display(description="Next attempt", ordering="next_attempt_at")
    def next_attempt(self, delivery):
        return short_time(delivery.next_attempt_at) if delivery.status == Delivery.Status.PENDING else "-"

    @admin.display(description="Last error")
    def error(self, delivery):
        return clipped(delivery.last_error, 70)

    @admin.display(description="Body")
    def body(self, delivery):
        return format_html("<code>{}</code>", delivery.event.body)

    def has_resend_permission(self, request):
        # Deliveries are read only for everyone; resending acts on the endpoint.
        return request.user.has_perm("webhooks.change_endpoint")

    @admin.action(description="Resend the selected deliveries (a new delivery each, with the full retry schedule)",
                  permissions=["resend"])
    def resend(self, request, queryset):
        done = 0
        for delivery in queryset.select_related("event", "endpoint"):
            try:
                again = services.resend_delivery(delivery=delivery)
                self.log_change(request, delivery, f"Resent as delivery {again.pk}")
                done += 1
            except ServiceError as exc:
                messages.error(request, f"{delivery.pk}: {exc}")
        report(request, done, "delivery(ies) queued again")
