"""The poll back office, through Django's test client logged in as a superuser. Every
change goes through the services: the events recorded prove it."""

import re
from datetime import date

import pytest
from django.urls import reverse

from conftest import admin_history, form_data
from polls import services
from polls.models import Option, Participant, Poll, Vote
from polls.tests.factories import make_poll, option_ids, respond, time_poll_body
from webhooks.models import Event


def url(view: str, *args) -> str:
    return reverse(f"admin:polls_poll_{view}", args=args)


def event_types(poll) -> list[str]:
    return list(Event.objects.filter(poll_id=poll.pk).order_by("created_at", "id").values_list("type", flat=True))


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []


def act(client, action: str, polls, query: str = "", **extra) -> list[str]:
    """An action of the poll list, posted as the list shows (`query`: its filters; deleted
    polls are listed, and so acted on, with `?deleted=yes`)."""
    response = client.post(url("changelist") + query, {"action": action, "_selected_action": [p.pk for p in polls], **extra},
                           follow=True)
    assert response.status_code == 200
    return messages_of(response)


@pytest.fixture
def poll(space):
    return make_poll(space)


def test_pages_load(superuser_client, space, poll):
    timed = make_poll(space, time_poll_body("2030-06-01T10:00:00Z"), title="Kick-off call")
    respond(poll, "yes", "ifNeedBe", "no")
    Vote.objects.create(participant=respond(timed, None, name="Bob"), option_id=option_ids(timed)[0], type="legacy")
    services.delete_poll(poll=make_poll(space, title="Gone"))
    for path in [
        url("changelist"), url("changelist") + "?q=Kick-off", url("changelist") + f"?status=open&space__id__exact={space.pk}",
        url("changelist") + "?deleted=yes", url("add"), url("change", poll.pk), url("change", timed.pk),
        url("schedule", poll.pk), reverse("admin:webhooks_event_changelist") + f"?poll_id={poll.pk}",
        reverse("admin:webhooks_event_changelist") + f"?space__id__exact={space.pk}",
    ]:
        response = superuser_client.get(path)
        assert response.status_code == 200, path
    assert superuser_client.get(url("changelist") + "?q=Kick-off").context["cl"].result_count == 1
    assert superuser_client.get(url("changelist") + "?deleted=yes").context["cl"].result_count == 1
    page = superuser_client.get(url("change", timed.pk)).content.decode()
    assert "legacy (older data)" in page  # an older vote type is shown, not lost
    assert f'formaction="{url("lifecycle", timed.pk, "close")}" formmethod="post" formnovalidate>Close</button>' in page
    assert f'<a class="button" href="{url("schedule", timed.pk)}">Schedule…</a>' in page
    assert f'<a class="button" href="{url("confirm_delete", timed.pk)}">Delete…</a>' in page
    assert 'formmethod="get"' not in page
    assert url("lifecycle", timed.pk, "restore") not in page  # only for deleted polls
    event = Event.objects.filter(poll_id=poll.pk).first()
    assert superuser_client.get(reverse("admin:webhooks_event_change", args=[event.pk])).status_code == 200


def test_adding_a_poll_uses_the_api_rules_and_records_poll_created(superuser_client, space):
    data = {"space": space.pk, "title": "Offsite", "kind": "time", "time_zone": "Europe/Berlin", "duration": "60",
            "options": "2030-06-01T09:00:00\n2030-06-01T14:00:00Z 30\n", "disable_comments": "on"}
    response = superuser_client.post(url("add"), data)
    assert response.status_code == 302
    poll = Poll.objects.get(title="Offsite")
    assert (poll.space_id, poll.organizer_id, poll.time_zone, poll.allow_tentative_votes) == (
        space.pk, space.owner_id, "Europe/Berlin", False)
    assert [(o.start_time.hour, o.duration) for o in poll.options.order_by("start_time")] == [(7, 60), (14, 30)]
    assert event_types(poll) == ["poll.created"]


@pytest.mark.parametrize("changes, message", [
    ({"time_zone": "Mars/Olympus"}, "timeZone:"),
    ({"organizer_email": "stranger@example.com"}, "organizer.email: not a member of this space"),
    ({"options": "2030-06-01T09:00:00 soon"}, "the duration must be a whole number of minutes"),
    ({"title": "badword"}, "title: flagged by content moderation"),
    ({"options": "2030-06-01T25:00:00"}, "options: '2030-06-01T25:00:00': must be an RFC 3339 date-time"),
    ({"duration": ""}, "duration: required because options[0] has no duration of its own"),
    ({"duration": "5"}, "options[0]: the duration must be 15-1440 minutes"),
    ({"kind": "date", "options": "2030-06-01\n1 June"}, "options: '1 June': must be a date YYYY-MM-DD"),
    ({"kind": "date", "options": "2030-06-01"}, "a date poll has dates only"),  # with a time zone and duration
])
def test_a_refused_poll_is_a_form_error_and_creates_nothing(superuser_client, space, changes, message):
    data = {"space": space.pk, "title": "Offsite", "kind": "time", "time_zone": "Europe/Berlin", "duration": "60",
            "options": "2030-06-01T09:00:00", **changes}
    response = superuser_client.post(url("add"), data)
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.non_field_errors())
    assert not Poll.objects.exists() and not Event.objects.exists()


def test_bulk_actions_call_the_services_and_report_refusals(superuser_client, space, poll):
    scheduled = make_poll(space, status="scheduled", scheduled_option=None)
    report = act(superuser_client, "close_polls", [poll, scheduled])
    assert report == [f"Closed: {poll.pk}.", f"cannot close poll {scheduled.pk}: it is scheduled (allowed only when open)"]
    assert Poll.objects.get(pk=poll.pk).status == "closed"
    act(superuser_client, "reopen_polls", [poll, scheduled])
    assert {p.status for p in Poll.objects.all()} == {"open"}
    act(superuser_client, "delete_polls", [poll])  # asks first
    assert Poll.objects.get(pk=poll.pk).deleted_at is None
    act(superuser_client, "delete_polls", [poll], confirmed="yes")
    assert Poll.objects.get(pk=poll.pk).deleted_at is not None  # soft: still here
    act(superuser_client, "restore_polls", [poll], "?deleted=yes")
    assert Poll.objects.get(pk=poll.pk).deleted_at is None
    assert event_types(poll) == ["poll.created", "poll.closed", "poll.reopened", "poll.deleted", "poll.restored"]
    assert event_types(scheduled) == ["poll.created", "poll.reopened"]


def test_schedule_with_the_option_picker_then_cancel(superuser_client, poll):
    response = act(superuser_client, "schedule_poll", [poll])  # redirects to the picker
    second = option_ids(poll)[1]
    response = superuser_client.post(url("schedule", poll.pk), {"option": second}, follow=True)
    assert messages_of(response) == [f"Poll {poll.pk} scheduled at 2030-01-02."]
    fresh = Poll.objects.get(pk=poll.pk)
    assert (fresh.status, fresh.scheduled_option_id) == ("scheduled", second)
    scheduled = Event.objects.get(poll_id=poll.pk, type="poll.scheduled")
    assert scheduled.data["event"] == {"start": "2030-01-02T00:00:00.000Z", "end": "2030-01-03T00:00:00.000Z",
                                       "allDay": True}
    response = superuser_client.post(url("schedule", poll.pk), {"option": option_ids(poll)[0]})
    assert "already scheduled at another option" in str(response.context["form"].non_field_errors())
    response = superuser_client.post(url("lifecycle", poll.pk, "cancel"), follow=True)
    assert messages_of(response) == [f"Canceled: {poll.pk}."]
    assert event_types(poll) == ["poll.created", "poll.scheduled", "poll.canceled"]


def test_lifecycle_buttons_need_a_post(superuser_client, poll):
    assert superuser_client.get(url("lifecycle", poll.pk, "close")).status_code == 403
    assert superuser_client.post(url("lifecycle", poll.pk, "explode")).status_code == 403
    assert superuser_client.post(url("lifecycle", poll.pk, "close")).status_code == 302
    assert Poll.objects.get(pk=poll.pk).status == "closed"


def change_form(client, poll) -> dict:
    return form_data(client.get(url("change", poll.pk)))


def save(client, poll, data):
    response = client.post(url("change", poll.pk), data)
    assert response.status_code == 302, response.context and [
        response.context["adminform"].form.errors, *(f.formset.errors for f in response.context["inline_admin_formsets"]),
        *(f.formset.non_form_errors() for f in response.context["inline_admin_formsets"])]
    return response


def test_editing_details_and_settings_records_one_poll_updated(superuser_client, poll):
    data = change_form(superuser_client, poll)
    save(superuser_client, poll, data)  # unchanged: nothing recorded
    assert event_types(poll) == ["poll.created"]
    data.update(title="Team lunch", location="Canteen", conferencing='{"provider": "zoom"}')
    data.pop("hide_participants", None)
    data["require_email"] = "on"
    save(superuser_client, poll, data)
    fresh = Poll.objects.get(pk=poll.pk)
    assert (fresh.title, fresh.location, fresh.conferencing, fresh.require_email) == (
        "Team lunch", "Canteen", {"provider": "zoom"}, True)
    assert event_types(poll) == ["poll.created", "poll.updated"]


def test_bad_details_are_form_errors(superuser_client, poll):
    data = change_form(superuser_client, poll)
    data["conferencing"] = '{"provider": "skype"}'
    response = superuser_client.post(url("change", poll.pk), data)
    assert response.status_code == 200
    assert "conferencing: provider must be one of" in str(response.context["adminform"].form.non_field_errors())
    assert event_types(poll) == ["poll.created"]


def test_editing_options_inline(superuser_client, poll):
    first, second, third = option_ids(poll)
    respond(poll, "yes", "yes", "yes")
    data = change_form(superuser_client, poll)
    prefix = "options"
    data[f"{prefix}-1-DELETE"] = "on"  # the second date
    data[f"{prefix}-0-date"] = "2030-02-01"
    total = int(data[f"{prefix}-TOTAL_FORMS"])
    data[f"{prefix}-{total}-date"] = "2030-03-01"
    data[f"{prefix}-{total}-poll"] = poll.pk
    data[f"{prefix}-TOTAL_FORMS"] = str(total + 1)
    save(superuser_client, poll, data)
    assert list(poll.options.order_by("date").values_list("date", flat=True)) == [
        date(2030, 1, 3), date(2030, 2, 1), date(2030, 3, 1)]
    assert not Option.objects.filter(pk=second).exists() and not Vote.objects.filter(option_id=second).exists()
    assert Vote.objects.filter(option_id=first).count() == 1  # moved, votes kept
    assert event_types(poll) == ["poll.created", "poll.participant.created", "poll.updated"]

    data = change_form(superuser_client, poll)
    data[f"{prefix}-0-date"] = "2030-03-01"  # a duplicate
    response = superuser_client.post(url("change", poll.pk), data)
    assert response.status_code == 200
    assert "is listed twice" in str(response.context["inline_admin_formsets"][0].formset.non_form_errors())


def participants_prefix(data) -> str:
    return next(key for key in data if key.endswith("-TOTAL_FORMS") and not key.startswith("options")).removesuffix(
        "-TOTAL_FORMS")


def test_participants_inline_add_edit_remove_with_votes(superuser_client, poll):
    first, second, third = option_ids(poll)
    ann = respond(poll, "yes", "no", None, name="Ann")
    bob = respond(poll, "no", name="Bob")
    data = change_form(superuser_client, poll)
    p = participants_prefix(data)
    # Row 0 is Ann (oldest first), row 1 Bob, row 2 the empty extra row.
    data[f"{p}-0-vote_{second}"] = "ifNeedBe"
    data[f"{p}-0-vote_{first}"] = ""
    data[f"{p}-1-DELETE"] = "on"
    data.update({f"{p}-2-name": "Carl", f"{p}-2-email": "carl@example.com", f"{p}-2-vote_{third}": "yes",
                 f"{p}-2-poll": poll.pk})
    save(superuser_client, poll, data)
    assert dict(Vote.objects.filter(participant=ann).values_list("option_id", "type")) == {second: "ifNeedBe"}
    assert not Participant.objects.filter(pk=bob.pk).exists()
    carl = Participant.objects.get(name="Carl")
    assert (carl.email, dict(carl.votes.values_list("option_id", "type"))) == ("carl@example.com", {third: "yes"})
    assert event_types(poll)[-3:] == ["poll.participant.updated", "poll.participant.deleted",
                                      "poll.participant.created"]


def test_participant_rows_are_checked_by_the_service_rules(superuser_client, space):
    poll = make_poll(space, allow_tentative_votes=False, require_email=True)
    data = change_form(superuser_client, poll)
    p = participants_prefix(data)
    data.update({f"{p}-0-name": "Dan", f"{p}-0-vote_{option_ids(poll)[0]}": "ifNeedBe", f"{p}-0-poll": poll.pk})
    response = superuser_client.post(url("change", poll.pk), data)
    assert response.status_code == 200
    errors = str(response.context["inline_admin_formsets"][1].formset.errors)
    assert "requires an e-mail address" in errors and "does not allow tentative votes" in errors
    assert not Participant.objects.exists() and event_types(poll) == ["poll.created"]

    services.close_poll(poll=poll)
    data[f"{p}-0-email"] = "dan@example.com"
    data[f"{p}-0-vote_{option_ids(poll)[0]}"] = "yes"
    response = superuser_client.post(url("change", poll.pk), data)
    assert "only an open poll accepts new responses" in str(response.context["inline_admin_formsets"][1].formset.errors)
    assert not Participant.objects.exists()


def test_a_deleted_poll_is_shown_but_edits_are_refused_and_undone(superuser_client, poll):
    ann = respond(poll, "yes", name="Ann")
    services.delete_poll(poll=poll)
    data = change_form(superuser_client, poll)
    data["title"] = "Renamed"
    data[f"{participants_prefix(data)}-0-name"] = "Anna"
    response = superuser_client.post(url("change", poll.pk), data, follow=True)
    assert messages_of(response) == [f"Nothing was saved: poll {poll.pk} does not exist or has been deleted"]
    assert Poll.objects.get(pk=poll.pk).title == "Team dinner"
    assert Participant.objects.get(pk=ann.pk).name == "Ann"
    assert event_types(poll) == ["poll.created", "poll.participant.created", "poll.deleted"]


def test_a_big_poll_lists_its_responses_and_each_is_edited_on_its_own_page(superuser_client, poll, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 80  # the poll's page with every response would need more
    people = [respond(poll, "yes", "no", None, name=f"P{n}") for n in range(5)]
    data = change_form(superuser_client, poll)
    assert not any(key.endswith("-name") for key in data)  # read-only list, no response forms
    page = superuser_client.get(url("change", poll.pk)).content.decode()
    assert "too many to edit here" in page
    data["title"] = "Renamed"
    save(superuser_client, poll, data)
    assert Poll.objects.get(pk=poll.pk).title == "Renamed"

    first, second, third = option_ids(poll)
    participant_url = reverse("admin:polls_participant_change", args=[people[0].pk])
    response = superuser_client.post(participant_url, {
        "name": "P0 renamed", "email": "", f"vote_{first}": "ifNeedBe", f"vote_{second}": "no", f"vote_{third}": "yes"})
    assert response.status_code == 302
    assert dict(Vote.objects.filter(participant=people[0]).values_list("option_id", "type")) == {
        first: "ifNeedBe", second: "no", third: "yes"}
    assert Participant.objects.get(pk=people[0].pk).name == "P0 renamed"
    assert event_types(poll)[-2:] == ["poll.updated", "poll.participant.updated"]


def test_the_participant_admin_checks_edits_and_removes_through_the_services(superuser_client, space, poll):
    # Names with a hyphen: a search term cannot then match a random id ([A-Za-z0-9]).
    ann, bob, carl = (respond(poll, "yes", name=name) for name in ("Ann-A", "Bob-B", "Carl-C"))
    gone = make_poll(space)
    hidden = respond(gone, "yes", name="Hidden")
    services.delete_poll(poll=gone)
    changelist = reverse("admin:polls_participant_changelist")
    assert superuser_client.get(changelist).context["cl"].result_count == 3  # not the deleted poll's
    assert superuser_client.get(changelist + "?q=Bob-B").context["cl"].result_count == 1
    assert superuser_client.get(reverse("admin:polls_participant_add")).status_code == 403

    poll.allow_tentative_votes = False
    poll.save(update_fields=["allow_tentative_votes"])
    first = option_ids(poll)[0]
    response = superuser_client.post(reverse("admin:polls_participant_change", args=[ann.pk]),
                                     {"name": "Ann-A", "email": "", f"vote_{first}": "ifNeedBe"})
    assert response.status_code == 200
    assert "does not allow tentative votes" in str(response.context["adminform"].form.non_field_errors())

    response = superuser_client.post(reverse("admin:polls_participant_delete", args=[ann.pk]), {"post": "yes"})
    assert response.status_code == 302
    response = superuser_client.post(changelist, {"action": "remove_responses", "_selected_action": [bob.pk]},
                                     follow=True)
    assert messages_of(response)[-1] == f"Removed: {bob.pk}."
    assert list(Participant.objects.filter(poll=poll).values_list("pk", flat=True)) == [carl.pk]
    assert event_types(poll).count("poll.participant.deleted") == 2
    assert Participant.objects.filter(pk=hidden.pk).exists()


# --- Audit, confirmation, list defaults, totals and time zones ----------------------------


def test_lifecycle_changes_are_recorded_in_the_poll_history_with_who_did_them(superuser_client, poll):
    act(superuser_client, "close_polls", [poll])
    superuser_client.post(url("lifecycle", poll.pk, "reopen"))
    superuser_client.post(url("schedule", poll.pk), {"option": option_ids(poll)[1]})
    superuser_client.post(url("lifecycle", poll.pk, "cancel"))
    act(superuser_client, "delete_polls", [poll], confirmed="yes")
    act(superuser_client, "restore_polls", [poll], "?deleted=yes")
    assert admin_history(poll) == [("operator", "Closed"), ("operator", "Reopened"), ("operator", "Scheduled at 2030-01-02"),
                             ("operator", "Canceled"), ("operator", "Deleted"), ("operator", "Restored")]
    page = superuser_client.get(url("history", poll.pk)).content.decode()
    assert "Scheduled at 2030-01-02" in page and "Restored" in page
    assert poll.__class__.objects.get(pk=poll.pk).status == "canceled"
    assert act(superuser_client, "close_polls", [poll])[-1].startswith("cannot close")  # refused: not recorded
    assert len(admin_history(poll)) == 6


def test_delete_asks_for_confirmation_first(superuser_client, space, poll):
    other = make_poll(space, title="Other")
    page = superuser_client.get(url("confirm_delete", poll.pk))
    assert page.status_code == 200 and Poll.objects.get(pk=poll.pk).deleted_at is None
    text = page.content.decode()
    assert "Yes, delete" in text and f'action="{url("lifecycle", poll.pk, "delete")}"' in text
    response = superuser_client.post(url("changelist"), {"action": "delete_polls", "_selected_action": [poll.pk, other.pk]})
    assert response.status_code == 200 and "these 2 polls" in response.content.decode()
    assert not Poll.objects.filter(deleted_at__isnull=False).exists()
    superuser_client.post(url("lifecycle", poll.pk, "delete"))  # what the confirmation posts
    assert Poll.objects.get(pk=poll.pk).deleted_at is not None
    assert f'href="{url("confirm_delete", poll.pk)}"' not in superuser_client.get(url("change", poll.pk)).content.decode()


def test_the_poll_list_leaves_deleted_polls_out_unless_asked(superuser_client, space, poll):
    gone = make_poll(space, title="Gone")
    services.delete_poll(poll=gone)
    listed = lambda query="": {p.pk for p in superuser_client.get(url("changelist") + query).context["cl"].result_list}  # noqa: E731
    assert listed() == {poll.pk} == listed("?deleted=no")
    assert listed("?deleted=yes") == {gone.pk}
    assert listed("?deleted=all") == {poll.pk, gone.pk}


def test_the_poll_page_shows_vote_totals_and_times_in_the_poll_zone_and_utc(superuser_client, space):
    timed = make_poll(space, time_poll_body("2030-06-03T07:00:00Z", "2030-06-03T08:00:00Z"))
    respond(timed, "yes", "ifNeedBe", name="Ada")
    respond(timed, "yes", "no", name="Bob")
    page = superuser_client.get(url("change", timed.pk)).content.decode()
    totals = page[page.index('class="vote-totals"'):page.index("</table>", page.index('class="vote-totals"'))]
    rows = [re.sub(r"<[^>]+>", " ", row).split() for row in totals.split("<tr>")[2:]]
    assert rows == [
        ["2030-06-03", "07:00", "UTC", "=", "Mon", "2030-06-03", "09:00", "Europe/Berlin,", "60", "min", "2", "0", "0", "&#9733;"],
        ["2030-06-03", "08:00", "UTC", "=", "Mon", "2030-06-03", "10:00", "Europe/Berlin,", "60", "min", "0", "1", "1"],
    ]
    assert "2 participants." in page
    assert "Mon 2030-06-03 09:00 Europe/Berlin" in page  # the options inline


def test_the_add_form_searches_spaces_as_you_type(superuser_client, space):
    page = superuser_client.get(url("add")).content.decode()
    assert 'data-ajax--url="/admin/autocomplete/"' in page and 'data-field-name="space"' in page
    found = superuser_client.get("/admin/autocomplete/", {"app_label": "polls", "model_name": "poll",
                                                          "field_name": "space", "term": space.name[:5]}).json()
    assert [item["id"] for item in found["results"]] == [space.pk]
