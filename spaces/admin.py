"""Back office for users, spaces, members, subscriptions and API keys.

Every change goes through `spaces.services`, the same functions `manage.py` calls. Where a
service may refuse (a key's expiry, the 10-active-keys limit), the form calls it while it
validates, so a refusal shows as a form error; the admin's change view runs in one
transaction, so nothing half-done is kept.
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.html import format_html

from core.backoffice import ServiceChangeForm, ServiceForm, ServiceFormAdmin, adopt, clipped, report, short_time
from core.errors import ServiceError
from spaces import selectors, services
from spaces.models import ApiKey, Membership, Space, Subscription, User

# --- Users -----------------------------------------------------------------------------


class UserForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["name", "email", "image"]

    def clean_email(self):
        email = self.cleaned_data["email"]
        other = selectors.get_user_by_email(email)
        if other is not None and other.pk != self.instance.pk:
            raise ValidationError("A user with this e-mail address (in any letter case) already exists.")
        return email


@admin.register(User)
class UserAdmin(admin.ModelAdmin):
    form = UserForm
    list_display = ["email", "name", "is_banned", "created_at"]
    list_filter = ["is_banned"]
    search_fields = ["email", "name", "id"]
    readonly_fields = ["id", "is_banned", "created_at"]
    actions = ["ban", "unban"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "email", "image"]
        return ["id", "name", "email", "image", "is_banned", "created_at"]

    @admin.action(description="Ban selected users (their keys stop working)", permissions=["change"])
    def ban(self, request, queryset):
        self._set_banned(request, queryset, True)

    @admin.action(description="Unban selected users", permissions=["change"])
    def unban(self, request, queryset):
        self._set_banned(request, queryset, False)

    def _set_banned(self, request, queryset, banned: bool):
        users = list(queryset)
        for user in users:
            services.set_banned(user=user, banned=banned)
            self.log_change(request, user, "Banned" if banned else "Unbanned")  # the user's History page
        report(request, len(users), "user(s) banned" if banned else "user(s) unbanned")


# --- Spaces, members, subscriptions ----------------------------------------------------


class SpaceAddForm(forms.ModelForm):
    pro = forms.BooleanField(required=False, label="Pro plan", help_text="Pro spaces can use the API.")

    class Meta:
        model = Space
        fields = ["name", "owner"]


class SubscriptionInline(admin.StackedInline):
    model = Subscription
    fields = ["is_active", "updated_at"]
    readonly_fields = ["updated_at"]
    can_delete = False
    max_num = 1
    verbose_name = verbose_name_plural = "Pro subscription"


class MembershipInline(admin.TabularInline):
    """Members, read only here: add and remove them under Memberships."""

    model = Membership
    fields = ["user", "created_at"]
    readonly_fields = ["user", "created_at"]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Space)
class SpaceAdmin(ServiceFormAdmin, admin.ModelAdmin):
    list_display = ["name", "id", "owner", "is_pro", "member_count", "active_key_count", "created_at"]
    list_filter = ["subscription__is_active"]
    list_select_related = ["owner", "subscription"]
    search_fields = ["name", "id", "owner__email"]
    ordering = ["name", "id"]
    autocomplete_fields = ["owner"]
    inlines = [SubscriptionInline, MembershipInline]

    def has_delete_permission(self, request, obj=None):
        # Deleting a space would silently take its polls, events and keys with it: set its
        # plan to free (the API stops answering) instead.
        return False

    def get_queryset(self, request):
        active = selectors.keys_in_state(ApiKey.objects.all(), "active", timezone.now())
        return (
            super()
            .get_queryset(request)
            .annotate(
                member_count=Count("memberships", distinct=True),
                active_key_count=Count("api_keys", filter=Q(api_keys__in=active), distinct=True),
            )
        )

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = SpaceAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "owner", "pro"]
        return ["id", "name", "owner", "created_at"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["id", "owner", "created_at"]

    def get_inlines(self, request, obj):
        return [] if obj is None else self.inlines

    @admin.display(boolean=True, description="Pro")
    def is_pro(self, space):
        return space.is_pro

    @admin.display(description="Members", ordering="member_count")
    def member_count(self, space):
        return space.member_count

    @admin.display(description="Active keys", ordering="active_key_count")
    def active_key_count(self, space):
        return space.active_key_count

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])  # the only editable field
            return
        space = services.create_space(
            name=form.cleaned_data["name"], owner_email=form.cleaned_data["owner"].email, pro=form.cleaned_data["pro"]
        )
        adopt(obj, space)

    def save_formset(self, request, form, formset, change):
        if formset.model is Subscription:
            changed = []
            for subscription_form in formset.forms:
                if subscription_form.has_changed():
                    subscription = services.set_plan(space=form.instance, pro=subscription_form.cleaned_data["is_active"])
                    changed.append((subscription, subscription_form.changed_data))
            # What the admin's change message reads from a saved formset.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], changed, []
            return
        super().save_formset(request, form, formset, change)


@admin.register(Membership)
class MembershipAdmin(ServiceFormAdmin, admin.ModelAdmin):
    """A membership is added or removed, never edited; the owner's cannot be removed."""

    list_display = ["user", "space", "is_owner", "created_at"]
    list_select_related = ["user", "space"]
    search_fields = ["user__email", "user__name", "space__name", "space__id"]
    autocomplete_fields = ["space", "user"]
    fields = ["space", "user"]
    actions = ["remove_members"]

    @admin.display(boolean=True, description="Owner")
    def is_owner(self, membership):
        return membership.user_id == membership.space.owner_id

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        if obj is not None:
            try:
                services.check_removable(obj)
            except ServiceError:
                return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def save_model(self, request, obj, form, change):
        adopt(obj, services.add_member(space=obj.space, email=obj.user.email))

    def delete_model(self, request, obj):
        services.remove_member(membership=obj)

    @admin.action(description="Remove selected members from their spaces", permissions=["delete"])
    def remove_members(self, request, queryset):
        removed, refused = 0, []
        for membership in queryset.select_related("space"):
            try:
                services.remove_member(membership=membership)
                removed += 1
            except ServiceError as exc:
                refused.append(f"{membership}: {exc}")
        report(request, removed, "member(s) removed", refused)


@admin.register(Subscription)
class SubscriptionAdmin(ServiceFormAdmin, admin.ModelAdmin):
    list_display = ["space", "is_active", "updated_at"]
    list_filter = ["is_active"]
    list_select_related = ["space"]
    search_fields = ["space__name", "space__id"]
    autocomplete_fields = ["space"]
    actions = ["activate", "deactivate"]

    def get_fields(self, request, obj=None):
        return ["space", "is_active"] if obj is None else ["space", "is_active", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["space", "updated_at"]

    def has_delete_permission(self, request, obj=None):
        return False  # deactivate instead: the space keeps its history

    def save_model(self, request, obj, form, change):
        adopt(obj, services.set_plan(space=obj.space, pro=obj.is_active))

    @admin.action(description="Activate Pro for the selected spaces", permissions=["change"])
    def activate(self, request, queryset):
        self._set_plan(request, queryset, True)

    @admin.action(description="Deactivate Pro for the selected spaces (their API access stops)", permissions=["change"])
    def deactivate(self, request, queryset):
        self._set_plan(request, queryset, False)

    def _set_plan(self, request, queryset, pro: bool):
        subscriptions = list(queryset.select_related("space"))
        for subscription in subscriptions:
            services.set_plan(space=subscription.space, pro=pro)
            self.log_change(request, subscription, "Activated Pro" if pro else "Deactivated Pro")
        report(request, len(subscriptions), "subscription(s) activated" if pro else "subscription(s) deactivated")


# --- API keys --------------------------------------------------------------------------


class ApiKeyAddForm(ServiceForm):
    """Asks for space, name and expiry; `services.create_key` makes the key when the admin
    saves (core.backoffice.ServiceFormAdmin), so that the 10-key limit and the expiry rule
    show as form errors."""

    class Meta:
        model = ApiKey
        fields = ["space", "name", "expires_at"]

    raw_key: str | None = None

    def save_through_service(self):
        key, self.raw_key = services.create_key(
            space=self.cleaned_data["space"], name=self.cleaned_data.get("name") or "",
            expires_at=self.cleaned_data.get("expires_at"),
        )
        return key


class ApiKeyChangeForm(ServiceChangeForm):
    """Only the name and the expiry change, through `services.update_key`."""

    class Meta:
        model = ApiKey
        fields = ["name", "expires_at"]

    def update(self, stored):
        return services.update_key(key=stored, name=self.cleaned_data.get("name") or "",
                                   expires_at=self.cleaned_data.get("expires_at"))


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [(state, state.capitalize()) for state in selectors.KEY_STATES]

    def queryset(self, request, queryset):
        if self.value() in selectors.KEY_STATES:
            return selectors.keys_in_state(queryset, self.value(), timezone.now())
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(ServiceFormAdmin, admin.ModelAdmin):
    """Keys are shown by prefix only; the key itself appears once, right after it is
    created. Keys are revoked, never deleted. The hash and salt are never shown."""

    # At 1280 pixels the whole row fits; the full times are on the key's page.
    list_display = ["display_prefix", "key_name", "space_name", "state", "created", "last_used", "expires"]
    list_filter = [KeyStateFilter]
    list_select_related = ["space"]
    search_fields = ["prefix", "name", "id", "space__name", "space__id"]
    autocomplete_fields = ["space"]
    actions = ["revoke"]

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = ApiKeyAddForm if obj is None else ApiKeyChangeForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["space", "name", "expires_at"]
        return [
            "id", "display_prefix", "space", "name", "expires_at", "state", "created_by", "created_at", "last_used_at",
            "revoked_at",
        ]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["id", "display_prefix", "space", "state", "created_by", "created_at", "last_used_at", "revoked_at"]

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Key", ordering="prefix")
    def display_prefix(self, key):
        return f"sk_{key.prefix}_…"

    @admin.display(description="State")
    def state(self, key):
        return selectors.key_state(key, timezone.now())

    @admin.display(description="Name", ordering="name")
    def key_name(self, key):
        return clipped(key.name, 30)

    @admin.display(description="Space", ordering="space__name")
    def space_name(self, key):
        return clipped(key.space.name, 30)

    @admin.display(description="Created", ordering="created_at")
    def created(self, key):
        return short_time(key.created_at)

    @admin.display(description="Last used", ordering="last_used_at")
    def last_used(self, key):
        return short_time(key.last_used_at)

    @admin.display(description="Expires", ordering="expires_at")
    def expires(self, key):
        return short_time(key.expires_at)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)  # the service call (may refuse)
        if not change:
            messages.warning(
                request,
                format_html(
                    "The new API key is <code>{}</code>. Copy it now: it is not stored and will not be shown again.",
                    form.raw_key,
                ),
            )

    @admin.action(description="Revoke selected keys (refused from the next request on)", permissions=["change"])
    def revoke(self, request, queryset):
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            services.revoke_key(key=key)
            self.log_change(request, key, "Revoked")
        report(request, len(keys), "key(s) revoked")
