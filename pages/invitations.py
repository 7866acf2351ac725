"""The decision reaches the participants: when the organizer schedules the poll (and leaves
"e-mail the participants" checked), each participant who gave an address gets an e-mail with
the date or time (in the poll's zone and in UTC) and an iCalendar invitation (RFC 5545, iTIP
`METHOD:REQUEST`, RFC 5546) made with the `icalendar` library; calling the event off sends a
cancellation (`METHOD:CANCEL`) to those invited. One event per poll: the same `UID`, a
higher `SEQUENCE` for each sending (a new option after reopening is an update). The e-mails
are queued in the pages' outbox in the caller's transaction and sent by its job, each in the
language of the participant's invite page."""

from datetime import UTC, timedelta

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from icalendar import Calendar, Event, vCalAddress

from pages import outbox
from pages.display import Zone, option_label
from pages.models import EditToken, Invitation
from polls.models import Participant, Poll


def host() -> str:
    return settings.APP_URL.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]


def event_uid(poll: Poll) -> str:
    return f"{poll.pk}@{host()}"


def addresses(poll: Poll) -> list[tuple[str, str, str]]:
    """(name, e-mail address, language) of the participants who gave an address, one entry
    per address (its first answer's); the language is their invite page's ("" for an answer
    given elsewhere)."""
    languages = dict(EditToken.objects.filter(participant__poll=poll).values_list("participant_id", "language"))
    found = {}
    for pk, name, address in (Participant.objects.filter(poll=poll, email__isnull=False).exclude(email="")
                              .order_by("created_at", "id").values_list("pk", "name", "email")):
        found.setdefault(address.lower(), (name, address, languages.get(pk, "")))
    return list(found.values())


def sequence(poll: Poll) -> int:
    """The SEQUENCE of the poll's event as last e-mailed (0: never)."""
    return Invitation.objects.filter(poll=poll).values_list("sequence", flat=True).first() or 0


def invited(poll: Poll) -> list[str]:
    """The addresses the last invitation went to (none after a cancellation)."""
    invitation = Invitation.objects.filter(poll=poll).first()
    return [] if invitation is None or invitation.canceled else list(invitation.invited)


def when(poll: Poll) -> dict:
    """The scheduled option in words: `local` (the poll's zone, or as given), `utc` (None
    for a date or a floating time), `zone`."""
    option = poll.scheduled_option
    local = option_label(option, Zone(poll.time_zone if option.date is None else None))["text"]
    if option.date is not None or not poll.time_zone:
        return {"local": local, "utc": None, "zone": None}
    return {"local": local, "utc": option_label(option, Zone("UTC"))["text"], "zone": poll.time_zone}


def calendar(poll: Poll, method: str, sequence: int, attendee: tuple[str, str]) -> str:
    """The VCALENDAR of the poll's scheduled option for one attendee."""
    option = poll.scheduled_option
    cal = Calendar()
    cal.add("prodid", "-//Scheduling Poll//Decisions//EN")
    cal.add("version", "2.0")
    cal.add("method", method)
    event = Event()
    event.add("uid", event_uid(poll))
    event.add("sequence", sequence)
    event.add("dtstamp", timezone.now().astimezone(UTC))
    if option.date is not None:
        event.add("dtstart", option.date)
        event.add("dtend", option.date + timedelta(days=1))
    else:
        start = option.start_time.astimezone(UTC)
        end = start + timedelta(minutes=option.duration)
        if not poll.time_zone:  # floating: the wall clock as given, in every zone
            start, end = start.replace(tzinfo=None), end.replace(tzinfo=None)
        event.add("dtstart", start)
        event.add("dtend", end)
    event.add("summary", poll.title)
    if poll.location:
        event.add("location", poll.location)
    event.add("description", "\n\n".join(filter(None, [poll.description, _invite_url(poll)])))
    event.add("url", _invite_url(poll))
    event.add("status", "CANCELLED" if method == "CANCEL" else "CONFIRMED")
    organizer = vCalAddress(f"mailto:{poll.organizer.email}")
    organizer.params["cn"] = poll.organizer.name or poll.organizer.email
    event.add("organizer", organizer)
    name, address = attendee
    guest = vCalAddress(f"mailto:{address}")
    guest.params.update({"cn": name, "role": "REQ-PARTICIPANT", "partstat": "NEEDS-ACTION", "rsvp": "FALSE"})
    event.add("attendee", guest)
    cal.add_component(event)
    return cal.to_ical().decode()


def _invite_url(poll: Poll) -> str:
    return f"{settings.APP_URL}/invite/{poll.pk}"


def _next(poll: Poll) -> Invitation:
    invitation, _ = Invitation.objects.select_for_update().get_or_create(poll=poll)
    invitation.sequence += 1
    return invitation


def _queue(poll: Poll, method: str, sequence: int, people: list[tuple[str, str, str]], template: str) -> None:
    """One e-mail per (name, address, language) of `people`, each in that language (else the
    organizer page's, this request's), stored in a few statements whatever their number."""
    mails = []
    for name, address, language in people:
        with translation.override(language or translation.get_language()):
            context = {"poll": poll, "when": when(poll), "invite_url": _invite_url(poll), "name": name}
            if method == "CANCEL":
                subject = _("“%(title)s” is called off") % {"title": poll.title}
            else:
                subject = _("“%(title)s”: %(when)s") % {"title": poll.title, "when": context["when"]["local"]}
            mails.append(outbox.mail(to=address, subject=subject, poll_id=poll.pk,
                                     headers={"Reply-To": poll.organizer.email},  # a reply reaches the organizer
                                     calendar=calendar(poll, method, sequence, (name, address)),
                                     text=render_to_string(f"pages/mail/{template}.txt", context),
                                     html=render_to_string(f"pages/mail/{template}.html", context)))
    outbox.queue_all(mails)


def send_invitations(poll: Poll) -> int:
    """Queue the invitation (an update when one was sent before) to every participant with an
    address; how many. Call inside the transaction that scheduled the poll."""
    poll = Poll.objects.select_related("scheduled_option", "organizer").get(pk=poll.pk)
    people = addresses(poll)
    if not people:
        return 0
    invitation = _next(poll)
    invitation.invited, invitation.canceled = [address for _, address, _ in people], False
    invitation.save()
    _queue(poll, "REQUEST", invitation.sequence, people, "decision")
    return len(people)


def send_cancellations(poll: Poll) -> int:
    """Queue the cancellation to those the last invitation went to; how many. Call inside the
    transaction that called the event off."""
    poll = Poll.objects.select_related("scheduled_option", "organizer").get(pk=poll.pk)
    to = invited(poll)
    if not to or poll.scheduled_option is None:
        return 0
    invitation = _next(poll)
    known = {address.lower(): (name, language) for name, address, language in addresses(poll)}
    people = []
    for address in to:
        name, language = known.get(address.lower(), (address, ""))
        people.append((name, address, language))
    invitation.canceled = True
    invitation.save()
    _queue(poll, "CANCEL", invitation.sequence, people, "canceled")
    return len(people)
