"""The confirmation step of the organizer's page: deleting the poll, removing a participant
or a comment, calling the event off and scheduling each show what they will do and ask
first. The page's buttons for them are GET forms leading here (no JavaScript needed); this
page's POST carries `confirmed=yes` to the action, which sends an unconfirmed POST back here."""

import functools
from urllib.parse import urlencode

from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET

from pages import invitations
from pages.display import display_zone, option_label
from pages.organizer import organizer
from pages.views import error_page, not_found
from polls import selectors
from polls.models import Comment, Option, Participant, Poll

# action -> (title, what happens, button)
CONFIRMED_ACTIONS = {
    "delete": (_("Delete this poll?"),
               _("The poll, its answers and comments and its invite link disappear. This cannot be undone here."),
               _("Delete the poll")),
    "remove-participant": (_("Remove this participant?"), _("Their answer is removed from the results."),
                           _("Remove the participant")),
    "remove-comment": (_("Remove this comment?"), _("The comment disappears from the invite page."),
                       _("Remove the comment")),
    "cancel": (_("Call off the event?"), _("The poll is marked as called off; participants see it on the invite "
               "page."), _("Call off the event")),
    "schedule": (_("Schedule the poll at this option?"), _("The poll stops taking answers and shows this option "
                 "as the decision."), _("Schedule")),
}
TARGETS = ("option", "participant", "comment")  # the field that names what an action acts on


def confirmed(view):
    """The action view, reached by a POST of CONFIRMED_ACTIONS only with `confirmed=yes`:
    without it, a redirect to the confirmation step (nothing changes)."""

    @functools.wraps(view)
    def checked(request, poll_id: str, **kwargs):
        action = request.POST.get("action", "")
        if request.method == "POST" and action in CONFIRMED_ACTIONS and request.POST.get("confirmed") != "yes":
            query = {"action": action, **{name: request.POST[name] for name in TARGETS if request.POST.get(name)}}
            return redirect(f"/poll/{poll_id}/confirm?{urlencode(query)}")
        return view(request, poll_id, **kwargs)

    return checked


def target(poll: Poll, action: str, data):
    """What the action acts on, as the confirmation step shows it: (field, id, words);
    None when the id names nothing of this poll."""
    if action in ("schedule", "cancel"):  # the option to schedule, the event to call off
        chosen = data.get("option", "") if action == "schedule" else poll.scheduled_option_id
        option = Option.objects.filter(poll=poll, pk=chosen).first() if chosen else None
        if option is None:
            return None if action == "schedule" else ("", "", "")
        label = option_label(option, display_zone(poll, None))
        zone = f" ({poll.time_zone})" if poll.kind == Poll.Kind.TIME and poll.time_zone else ""
        words = label["text"] + zone
        return ("option", option.pk, words) if action == "schedule" else ("", "", words)
    if action == "remove-participant":
        participant = Participant.objects.filter(poll=poll, pk=data.get("participant", "")).only("id", "name").first()
        return None if participant is None else ("participant", participant.pk, participant.name)
    if action == "remove-comment":
        comment = Comment.objects.filter(poll=poll, pk=data.get("comment", "")).only("id", "name", "text").first()
        if comment is None:
            return None
        text = comment.text if len(comment.text) <= 140 else comment.text[:139] + "…"
        return "comment", comment.pk, f"{comment.name}: “{text}”"
    return "", "", ""


@require_GET
def confirm(request, poll_id: str):
    poll = selectors.find_invited_poll(poll_id)
    if poll is None:
        return not_found(request)
    if organizer(request, poll) is None:
        return redirect("pages:manage", poll.pk)
    action = request.GET.get("action", "")
    if action not in CONFIRMED_ACTIONS:
        return error_page(request, 400, _("Not sent"), _("This form is not one of the page's."), poll=poll,
                          back_to_manage=True)
    found = target(poll, action, request.GET)
    if found is None:
        return error_page(request, 404, _("Not found"), _("What this button acted on is no longer part of the poll."),
                          poll=poll, back_to_manage=True)
    title, consequence, button = CONFIRMED_ACTIONS[action]
    field, value, words = found
    context = {"poll": poll, "action": action, "title": title, "consequence": consequence, "button": button,
               "field": field, "value": value, "words": words, "danger": action != "schedule",
               **extra_context(poll, action)}
    response = render(request, "pages/confirm.html", context)
    response["Cache-Control"] = "private, no-store"
    return response


def extra_context(poll: Poll, action: str) -> dict:
    """The checkbox of the steps that can e-mail the participants: scheduling (checked when
    any gave an address) and calling off (checked when an invitation went out)."""
    if action == "schedule":
        count = len(invitations.addresses(poll))
        label = (ngettext("E-mail the decision and a calendar invitation to the participant who gave an address",
                          "E-mail the decision and a calendar invitation to the %(count)d participants who gave an "
                          "address", count) % {"count": count}) if count else _("E-mail the participants")
        note = "" if count else _("No participant gave an e-mail address.")
        return {"checks": [{"name": "email", "label": label, "checked": count > 0, "disabled": not count, "note": note}]}
    if action == "cancel":
        count = len(invitations.invited(poll))
        if count:
            label = ngettext("E-mail a cancellation to the participant who got the invitation",
                             "E-mail a cancellation to the %(count)d participants who got the invitation",
                             count) % {"count": count}
            return {"checks": [{"name": "email", "label": label, "checked": True, "disabled": False, "note": ""}]}
    return {}
