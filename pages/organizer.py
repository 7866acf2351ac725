"""The organizer's page (`{APP_URL}/poll/{pollId}`, the `adminUrl`): sign in with a one-time
link sent by e-mail, then see full results and every participant, and run the poll: close,
reopen, schedule, cancel, edit, remove participants and comments, delete, download the
answers as CSV. Every action goes through the services the back office uses, so each sends
the same event. docs/app.md describes it."""

import csv
import functools
import logging
from datetime import timedelta

from django import forms
from django.conf import settings
from django.db import transaction
from django.http import StreamingHttpResponse
from django.middleware.csrf import rotate_token
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import ServiceError
from core.formats import EMAIL_MAX_LENGTH
from pages import services
from pages.answers import answer_rows
from pages.display import display_zone, option_label
from pages.editing import ADD_ROWS, deadline_label, deadline_zone, default_duration, read_deadline, wanted_options
from pages.forms import LINES, ONE_LINE
from pages.invitations import send_cancellations, send_invitations
from pages.mail import request_sign_in_link
from pages.views import DONE, HONEYPOT, error_page, guarded, not_found, problem, scores
from polls import selectors
from polls import services as poll_services
from polls.models import Comment, Participant, Poll
from polls.rules import DESCRIPTION_MAX_LENGTH, LOCATION_MAX_LENGTH, SETTINGS, TITLE_MAX_LENGTH
from spaces.models import User

logger = logging.getLogger("service.pages")

SESSION_KEY = "pages_organizer"  # the signed-in organizer's user id, in Django's session
SESSION_IDLE = timedelta(days=14)  # a session unused this long ends
PARTICIPANTS_PAGE = 50
ORGANIZER_DONE = {
    "closed": _("The poll is closed."), "reopened": _("The poll is open again."), "scheduled": _("The poll is scheduled."),
    "canceled": _("The event is called off."), "edited": _("Your changes are saved."),
    "participant-removed": _("The participant is removed."), "comment-removed": _("The comment is removed."),
    "duplicated": _("This is the new poll: the same details, settings and options, no answers yet. Share its "
                    "invite link."),
    "options": _("The options are saved."),
    "scheduled-invited": _("The poll is scheduled. The participants who gave an address get the decision and a "
                           "calendar invitation by e-mail."),
    "canceled-mailed": _("The event is called off. Those invited get a cancellation by e-mail."),
    "notify-on": _("You will be e-mailed about answers and comments."),
    "notify-off": _("You will not be e-mailed about answers and comments."),
    "deadline": _("The deadline is set."), "deadline-cleared": _("The deadline is removed."),
}


class SignInForm(forms.Form):
    email = forms.EmailField(label=_("Your e-mail address"), max_length=EMAIL_MAX_LENGTH)


class DetailsForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=TITLE_MAX_LENGTH, validators=ONE_LINE)
    description = forms.CharField(label=_("Description"), max_length=DESCRIPTION_MAX_LENGTH, required=False,
                                  widget=forms.Textarea, validators=LINES)
    location = forms.CharField(label=_("Location"), max_length=LOCATION_MAX_LENGTH, required=False,
                               validators=ONE_LINE)


# The five settings (`polls.rules.SETTINGS`) as the organizer reads them.
SETTING_LABELS = {
    "require_email": _("Participants must give an e-mail address"),
    "hide_participants": _("Hide participants' names and answers from each other"),
    "hide_scores": _("Hide the totals until a participant has answered"),
    "disable_comments": _("Turn comments off"),
    "allow_tentative_votes": _("Allow “If need be” answers"),
}
for _column, _label in SETTING_LABELS.items():
    DetailsForm.base_fields[_column] = forms.BooleanField(required=False, label=_label)
assert set(SETTING_LABELS) == {column for column, _ in SETTINGS.values()}


def organizer(request, poll: Poll):
    """Who manages `poll` in this request: staff signed into the back office (True), the
    signed-in member of its space (their User; the session's idle clock restarts), or None."""
    if request.user.is_authenticated and request.user.is_staff:
        return True
    user_id = request.session.get(SESSION_KEY)
    if not user_id:
        return None
    user = User.objects.filter(pk=user_id).first()
    if not services.may_manage(user, poll):
        return None
    request.session.set_expiry(int(SESSION_IDLE.total_seconds()))
    return user


def with_poll(view):
    """The view is given the poll of the URL's `poll_id` (live, as invitations find it); an
    unknown or deleted one is the HTML 404 page."""

    @functools.wraps(view)
    def with_the_poll(request, poll_id: str, **kwargs):
        poll = selectors.find_invited_poll(poll_id)
        if poll is None:
            return not_found(request)
        return view(request, poll, **kwargs)

    return with_the_poll


@require_GET
@with_poll
def manage(request, poll: Poll):
    who = organizer(request, poll)
    if who is None:
        return render(request, "pages/sign_in.html", {"poll": poll, "form": SignInForm(), "honeypot": HONEYPOT})
    return render_manage(request, poll, who)


def render_manage(request, poll, who, *, form=None, problems=(), status=200):
    zone = display_zone(poll, request)
    tallies = scores(poll)
    option_rows = list(poll.options.all())
    options = [{"id": option.id, "label": option_label(option, zone), "score": tallies.get(option.id)}
               for option in option_rows]
    try:
        page = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page = 1
    pages = max(1, -(-poll.participant_count // PARTICIPANTS_PAGE))
    page = min(page, pages)
    participants = selectors.participants_with_votes(poll, offset=(page - 1) * PARTICIPANTS_PAGE,
                                                     limit=PARTICIPANTS_PAGE, emails=True)
    if form is None:
        form = DetailsForm(initial={"title": poll.title, "description": poll.description or "",
                                    "location": poll.location or "",
                                    **{column: getattr(poll, column) for column, _ in SETTINGS.values()}})
    context = {
        "poll": poll, "who": who, "zone": zone, "options": options, "participants": participants,
        "page": page, "pages": pages, "form": form, "problems": problems,
        "done": ORGANIZER_DONE.get(request.GET.get("done", "")) or DONE.get(request.GET.get("done", "")),
        "answer_rows": answer_rows(poll.pk, participants, [option["id"] for option in options]),
        "comments": selectors.poll_comments(poll),
        "scheduled_label": option_label(poll.scheduled_option, zone) if poll.scheduled_option else None,
        "can_schedule": poll.status in (Poll.Status.OPEN, Poll.Status.CLOSED),
        "invite_url": f"{settings.APP_URL}/invite/{poll.pk}",
        "deadline": deadline_label(poll), "deadline_zone": deadline_zone(poll), "add_rows": range(ADD_ROWS),
        "default_duration": default_duration(option_rows),
    }
    response = render(request, "pages/organizer.html", context, status=status)
    response["Cache-Control"] = "private, no-store"
    return response


# --- Signing in and out ------------------------------------------------------------------------


@require_POST
@with_poll
def sign_in(request, poll: Poll):
    """Ask for a link. The answer is the same whether or not the address may manage the poll."""
    guard = guarded(request, poll, "sign-in")
    if guard:
        return guard
    form = SignInForm(request.POST)
    if not form.is_valid():
        return render(request, "pages/sign_in.html", {"poll": poll, "form": form, "honeypot": HONEYPOT}, status=400)
    request_sign_in_link(poll=poll, email=form.cleaned_data["email"])  # the member's work: after the answer
    return render(request, "pages/sign_in_sent.html", {"poll": poll})


@require_http_methods(["GET", "HEAD", "POST"])
@with_poll
def sign_in_link(request, poll: Poll, token: str):
    """GET shows a button (mail scanners that open links use nothing up); POST signs in."""
    if request.method != "POST":
        if not services.sign_in_link_valid(poll=poll, token=token):
            return _dead_link(request, poll)
        return render(request, "pages/sign_in_confirm.html", {"poll": poll})
    user = services.use_sign_in(poll=poll, token=token)
    if user is None:
        return _dead_link(request, poll)
    request.session.cycle_key()  # a new session id: nothing set before signing in carries over
    rotate_token(request)  # and a new CSRF token, as Django's login() gives: one seen before is worthless
    request.session[SESSION_KEY] = user.pk
    request.session.set_expiry(int(SESSION_IDLE.total_seconds()))
    services.remember_organizer_language(poll)
    logger.info("organizer signed in", extra={"poll_id": poll.pk, "user_id": user.pk})
    return redirect("pages:manage", poll.pk)


def _dead_link(request, poll):
    return error_page(request, 403, _("Link not valid"), _("This sign-in link was used already, has expired (links work "
                      "for 15 minutes) or is incomplete. Ask for a new one."), poll=poll, back_to_manage=True)


@require_POST
def sign_out(request, poll_id: str):
    request.session.pop(SESSION_KEY, None)
    return redirect("pages:manage", poll_id)


# --- Actions -----------------------------------------------------------------------------------


def _lifecycle(action, done: str):
    return lambda poll, data: action(poll=poll) and done


@transaction.atomic
def _schedule(poll, data) -> str:
    """Schedule; with `email=yes` the participants' invitations are queued in the same
    transaction (none when the poll was scheduled at this option already)."""
    was = poll.status
    poll_services.schedule_poll(poll=poll, option_id=data.get("option", ""))
    if data.get("email") == "yes" and was != Poll.Status.SCHEDULED and send_invitations(poll):
        return "scheduled-invited"
    return "scheduled"


@transaction.atomic
def _cancel(poll, data) -> str:
    """Call off; with `email=yes` those invited get the cancellation, queued in the same
    transaction."""
    was = poll.status
    poll_services.cancel_poll(poll=poll)
    if data.get("email") == "yes" and was == Poll.Status.SCHEDULED and send_cancellations(poll):
        return "canceled-mailed"
    return "canceled"


ACTIONS = {  # action -> run(poll, POST data), which returns the key of the notice shown after it
    "close": _lifecycle(poll_services.close_poll, "closed"),
    "reopen": _lifecycle(poll_services.reopen_poll, "reopened"),
    "cancel": _cancel,
    "schedule": _schedule,
}


@require_POST
@with_poll
def act(request, poll: Poll):
    who = organizer(request, poll)
    if who is None:
        return error_page(request, 403, _("Sign in first"), _("Only the poll's organizers can do this; sign in with "
                          "your e-mail address."), poll=poll, back_to_manage=True)
    action = request.POST.get("action", "")
    services.remember_organizer_language(poll)  # the e-mails about answers follow the page's language
    try:
        if action in ACTIONS:
            done = ACTIONS[action](poll, request.POST)
        elif action == "edit":
            form = DetailsForm(request.POST)
            if not form.is_valid():
                return render_manage(request, poll, who, form=form, status=400)
            poll_services.update_poll(poll=poll, details=form.cleaned_data)
            done = "edited"
        elif action in ("deadline", "clear-deadline"):
            closes_at = read_deadline(poll, request.POST.get("closes_at", "")) if action == "deadline" else None
            poll_services.update_poll(poll=poll, details={"closes_at": closes_at})
            done = "deadline" if closes_at else "deadline-cleared"
        elif action == "notify":
            on = request.POST.get("on") == "yes"
            poll_services.set_notifications(poll=poll, on=on)
            done = "notify-on" if on else "notify-off"
        elif action == "options":
            poll_services.update_poll(poll=poll, options=wanted_options(poll, list(poll.options.all()), request.POST))
            done = "options"
        elif action == "duplicate":
            copy, _options = poll_services.duplicate_poll(poll=poll, title=request.POST.get("title", ""))
            logger.info("poll duplicated", extra={"poll_id": copy.pk, "source_poll_id": poll.pk})
            return redirect(f"/poll/{copy.pk}?done=duplicated")
        elif action == "remove-participant":
            participant = Participant.objects.filter(poll=poll, pk=request.POST.get("participant", "")).first()
            if participant is None:
                raise ServiceError(str(_("this participant is not one of the poll's")))
            poll_services.delete_response(participant=participant)
            done = "participant-removed"
        elif action == "remove-comment":
            comment = Comment.objects.filter(poll=poll, pk=request.POST.get("comment", "")).first()
            if comment is None:
                raise ServiceError(str(_("this comment is not one of the poll's")))
            poll_services.delete_comment(comment=comment)
            done = "comment-removed"
        elif action == "delete":
            poll_services.delete_poll(poll=poll)
            return render(request, "pages/deleted.html", {"title": poll.title})
        else:
            return error_page(request, 400, _("Not sent"), _("This form is not one of the page's."), poll=poll,
                              back_to_manage=True)
    except ServiceError as error:
        return render_manage(request, selectors.find_invited_poll(poll.pk), who, problems=[problem(error)], status=409)
    return redirect(f"/poll/{poll.pk}?done={done}")


def _safe(value) -> str:
    """A CSV cell a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class _Echo:
    def write(self, value):
        return value


@require_GET
@with_poll
def answers_csv(request, poll: Poll):
    """Every participant with e-mail, time and vote per option, streamed 500 at a time."""
    if organizer(request, poll) is None:
        return error_page(request, 403, _("Sign in first"), _("Only the poll's organizers can download the answers."),
                          poll=poll, back_to_manage=True)
    zone = display_zone(poll)
    options = list(poll.options.all())
    writer = csv.writer(_Echo())

    def rows():
        yield writer.writerow(["Name", "E-mail", "Answered at (UTC)", *(option_label(o, zone)["text"] for o in options)])
        offset = 0
        while True:
            chunk = selectors.participants_with_votes(poll, offset=offset, limit=500, emails=True)
            for answer in chunk:
                yield writer.writerow([_safe(answer.name), _safe(answer.email),
                                       answer.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                                       *(answer.votes.get(o.id, "") for o in options)])
            if len(chunk) < 500:
                return
            offset += 500

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{poll.pk}-answers.csv"'
    response["Cache-Control"] = "private, no-store"
    return response
