"""The invite page (`{APP_URL}/invite/{pollId}`): anyone holding the link reads the poll and
answers it without an account; the private edit link (or this browser's cookie) changes or
removes that answer. Server-rendered, no JavaScript needed; docs/app.md describes it."""

import logging
from urllib.parse import quote

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.http import require_GET, require_http_methods

from core.errors import ServiceError
from pages import invitations, mail, services, throttle
from pages.display import TZ_COOKIE, display_zone, option_label, valid_zone, zone_names
from pages.editing import deadline_label
from pages.forms import HONEYPOT, AnswerForm, CommentForm, LinkForm, read_votes
from pages.grid import Words, option_row
from pages.ics import event_ics
from pages.problems import in_words
from pages.selectors import token_participant
from polls import selectors
from polls import services as poll_services
from polls.models import Poll, Vote
from polls.rules import InappropriateContent

logger = logging.getLogger("service.pages")

COOKIE_MAX_AGE = 365 * 24 * 3600
DONE = {
    "saved": gettext_lazy("Thank you, your answer is saved."),
    "updated": gettext_lazy("Your answer is updated."),
    "removed": gettext_lazy("Your answer is removed."),
    "commented": gettext_lazy("Your comment is posted."),
    "link-sent": gettext_lazy("If this address answered this poll, a new private link is on its way to it. "
                              "Links sent before no longer work."),
}


# --- Errors -------------------------------------------------------------------------------


def problem(error: ServiceError) -> str:
    """A service's refusal as the page says it: content moderation and the refusals of
    normal use (pages.problems) in the page's language; the rest as the service words it."""
    if isinstance(error, InappropriateContent):
        fields = [part.split(":", 1)[0] for part in str(error).split("; ")]
        return _("Not accepted by our content filter: %(fields)s.") % {"fields": ", ".join(fields)}
    return in_words(str(error))


def error_page(request, status: int, title: str, message: str, *, poll=None, headers=None, back_to_manage=False):
    response = render(request, "pages/error.html", {"title": title, "message": message, "poll": poll,
                                                    "back_to_manage": back_to_manage}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def not_found(request, exception=None):
    return error_page(request, 404, _("Poll not found"),
                      _("This link leads to no poll: it may have been deleted, or the address is incomplete."))


def form_refused(request, exception=None):
    """A form the service would not read: its body too large or too slow to arrive
    (config/wsgi.py), or more fields than Django accepts (Django's 400)."""
    return error_page(request, 400, _("Not accepted"),
                      _("What you sent could not be read: more than this form takes, or too slow to arrive. "
                      "Go back, shorten it and send it again."))


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: the pages' own 403; the back office keeps Django's."""
    if not request.path.startswith(("/invite/", "/poll/")):
        return django_csrf_failure(request, reason)
    return error_page(request, 403, _("Form expired"),
                      _("Your form could not be checked (cookies may be off, or the page was open too long). "
                      "Go back, reload the page and send it again."))


def refused(request, refusal: throttle.Refusal, poll):
    if refusal.scope == "store":
        return error_page(request, 503, _("Try again later"), _("We cannot take requests right now; please try again "
                          "in a minute."), poll=poll, headers={"Retry-After": str(refusal.retry_after)})
    wait = refusal.retry_after
    if wait < 120:
        when = ngettext("%(count)d second", "%(count)d seconds", wait) % {"count": wait}
    elif wait < 7200:
        when = ngettext("%(count)d minute", "%(count)d minutes", -(-wait // 60)) % {"count": -(-wait // 60)}
    else:
        when = ngettext("%(count)d hour", "%(count)d hours", -(-wait // 3600)) % {"count": -(-wait // 3600)}
    if refusal.scope == "address":
        message = _("We received too many requests from your network in a short time. Please try again in %(when)s.")
    else:
        message = _("We received too many requests for this poll in a short time. Please try again in %(when)s.")
    return error_page(request, 429, _("Too many requests"), message % {"when": when},
                      poll=poll, headers={"Retry-After": str(wait)})


def guarded(request, poll, kind: str = "answer"):
    """Refusals every form on the pages shares: the throttle (of `kind`: pages.throttle) and
    the honeypot."""
    refusal = throttle.check(request, poll.pk, kind)
    if refusal:
        return refused(request, refusal, poll)
    if request.POST.get(HONEYPOT):
        logger.info("honeypot filled", extra={"poll_id": poll.pk})
        return error_page(request, 400, _("Not sent"), _("Your form could not be accepted."), poll=poll)
    return None


# --- The invite page ------------------------------------------------------------------------


def _cookie(poll) -> str:
    return f"answer_{poll.pk}"


def _invite_url(poll, **query) -> str:
    url = reverse("pages:invite", args=[poll.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _remember(request, response, poll, token):
    response.set_cookie(_cookie(poll), token, max_age=COOKIE_MAX_AGE, path=f"/invite/{poll.pk}",
                        secure=request.is_secure(), httponly=True, samesite="Lax")
    return response


def _remember_zone(request, response, zone):
    if zone.chosen:
        response.set_cookie(TZ_COOKIE, quote(zone.chosen, safe=""), max_age=COOKIE_MAX_AGE, path="/",
                            secure=request.is_secure(), samesite="Lax")
    return response


def _forget(response, poll):
    response.delete_cookie(_cookie(poll), path=f"/invite/{poll.pk}", samesite="Lax")
    return response


@require_http_methods(["GET", "HEAD", "POST"])
def invite(request, poll_id: str, token: str | None = None):
    poll = selectors.find_invited_poll(poll_id)
    if poll is None:
        return not_found(request)
    from_link = token is not None
    token = token if from_link else request.COOKIES.get(_cookie(poll))
    me = token_participant(poll, token)
    if from_link and me is None:
        return error_page(request, 404, _("Link not valid"), _("This edit link does not open an answer: the answer may "
                          "have been removed, or the link is incomplete."), poll=poll)
    if request.method == "POST":
        return _post_answer(request, poll, me, token)
    response = render_invite(request, poll, me=me, token=token if me else None)
    if from_link:
        _remember(request, response, poll, token)
    elif token and me is None:
        _forget(response, poll)
    return response


def _post_answer(request, poll, me, token):
    action = request.POST.get("action", "create")
    if action not in ("create", "update", "delete"):
        return error_page(request, 400, _("Not sent"), _("This form is not one of the page's."), poll=poll)
    if action != "create" and me is None:
        return error_page(request, 403, _("Not your answer"), _("Only the person who gave an answer can change it, "
                          "with the private link they received."), poll=poll)
    if poll.status != Poll.Status.OPEN:
        return error_page(request, 409, _("Poll closed"), _("This poll no longer accepts or changes answers."), poll=poll)
    if action == "delete" and request.POST.get("confirmed") != "yes":  # a second step, with or without JavaScript
        return render(request, "pages/confirm_remove.html", {"poll": poll, "me": me})
    guard = guarded(request, poll)
    if guard:
        return guard
    if action == "delete":
        try:
            services.remove_answer(participant=me)
        except ServiceError as error:
            return error_page(request, 409, _("Not removed"), problem(error), poll=poll)
        return _forget(redirect(_invite_url(poll, done="removed")), poll)
    current = {vote.option_id: vote.type for vote in me.votes.all()} if me and action == "update" else {}
    form = AnswerForm(request.POST, require_email=poll.require_email and action == "create")
    options = list(poll.options.all())
    votes, problems = read_votes(request.POST, options, poll.allow_tentative_votes, current)
    if form.is_valid() and not problems:
        data = form.cleaned_data
        try:
            if action == "update":
                me = services.change_answer(participant=me, name=data["name"], email=data["email"], votes=votes)
                done = "updated"
            else:
                me, token = services.answer(poll=poll, name=data["name"], email=data["email"] or None, votes=votes)
                done = "saved"
            if data["email"]:  # a new address: its link goes to it, in the background
                mail.send_edit_links(to=data["email"], poll=poll, links=[(me.name, token)])
            return _remember(request, redirect(_invite_url(poll, done=done) + "#you"), poll, token)
        except ServiceError as error:
            problems.append(problem(error))
    return render_invite(request, poll, me=me if action == "update" else None, token=token if action == "update" else None,
                         form=form, posted_votes=votes, problems=problems, status=400)


def scores(poll) -> dict[str, dict]:
    """option id -> {yes, maybe, no, top} from the poll's results."""
    found = {}
    for result in selectors.poll_results(poll).options:
        counts = dict(result.votes)
        found[result.option.id] = {"yes": counts.get(Vote.YES, 0), "maybe": counts.get(Vote.IF_NEED_BE, 0),
                                   "no": counts.get(Vote.NO, 0), "top": result.is_top_choice}
    return found


def _page_number(request, count: int) -> tuple[int, int]:
    size = settings.PAGES_GRID_PAGE_SIZE
    pages = max(1, -(-count // size))
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        number = 1
    return min(max(number, 1), pages), pages


def render_invite(request, poll, *, me, token, form=None, posted_votes=None, problems=(), comment_form=None,
                  comment_problems=(), link_form=None, status=200):
    zone = display_zone(poll, request)
    is_open = poll.status == Poll.Status.OPEN
    # hideScores: no counts (nor others' answers, which would give them away) until this
    # browser has answered, or the poll no longer takes answers.
    show_scores = not poll.hide_scores or me is not None or not is_open
    show_answers = show_scores and not poll.hide_participants
    mine = {vote.option_id: vote.type for vote in me.votes.all()} if me else {}
    chosen = posted_votes if posted_votes is not None else mine
    page, pages = _page_number(request, poll.participant_count)
    size = settings.PAGES_GRID_PAGE_SIZE
    others = [] if poll.hide_participants else selectors.participants_with_votes(
        poll, offset=(page - 1) * size, limit=size)
    tallies = scores(poll) if show_scores else {}
    options = list(poll.options.all())
    words = Words.now()
    columns = 1 + show_scores + is_open + (len(others) if show_answers else 0)
    rows = [option_row(option.id, option_label(option, zone), words=words, columns=columns,
                       score=tallies.get(option.id) if show_scores else None, choice=chosen.get(option.id) or "",
                       others=others if show_answers else None, pick=is_open, mine=me is not None,
                       tentative=poll.allow_tentative_votes)
            for option in options]
    if form is None:
        form = AnswerForm(initial={"name": me.name} if me else None)
    context = {
        "poll": poll,
        "zone": zone,
        "is_open": is_open,
        "rows": rows,
        "show_scores": show_scores,
        "show_answers": show_answers,
        "others": others,
        "page": page,
        "pages": pages,
        "me": me,
        "edit_url": f"{settings.APP_URL}/invite/{poll.pk}/edit/{token}" if me and token else None,
        "form": form,
        "problems": problems,
        "honeypot": HONEYPOT,
        "done": DONE.get(request.GET.get("done", "")),
        "comments": [] if poll.disable_comments else selectors.poll_comments(poll),
        "comment_form": comment_form or CommentForm(initial={"name": me.name} if me else None),
        "comment_problems": comment_problems,
        "scheduled_label": option_label(poll.scheduled_option, zone) if poll.scheduled_option else None,
        "deadline": deadline_label(poll) if is_open else None,
        "zone_names": zone_names() if zone.name else (),
        "comment_zone": zone.name or valid_zone(request.COOKIES.get(TZ_COOKIE)) or "UTC",
        "link_form": link_form or LinkForm(),
        "options_changed": bool(me and poll.options_changed_at and me.updated_at < poll.options_changed_at),
    }
    response = render(request, "pages/invite.html", context, status=status)
    response["Cache-Control"] = "private, no-store"
    return _remember_zone(request, response, zone)


@require_http_methods(["POST"])
def comment(request, poll_id: str):
    poll = selectors.find_invited_poll(poll_id)
    if poll is None:
        return not_found(request)
    if poll.disable_comments:
        return error_page(request, 403, _("Comments are off"), _("This poll does not take comments."), poll=poll)
    if poll.status != Poll.Status.OPEN:
        return error_page(request, 409, _("Poll closed"), _("This poll no longer takes comments."), poll=poll)
    guard = guarded(request, poll)
    if guard:
        return guard
    form = CommentForm(request.POST)
    problems = []
    if form.is_valid():
        try:
            poll_services.add_comment(poll=poll, name=form.cleaned_data["name"], text=form.cleaned_data["text"])
            return redirect(_invite_url(poll, done="commented") + "#comments")
        except ServiceError as error:
            problems.append(problem(error))
    token = request.COOKIES.get(_cookie(poll))
    me = token_participant(poll, token)
    return render_invite(request, poll, me=me, token=token if me else None, comment_form=form,
                         comment_problems=problems, status=400)


@require_http_methods(["POST"])
def send_link(request, poll_id: str):
    """"Send me my link": a new edit link for each answer given with the address (the old
    ones stop working), e-mailed in the background. The page answers alike, and does the
    same, whether or not the address answered (the lookup runs after the answer); the
    requests are throttled as sign-in requests are."""
    poll = selectors.find_invited_poll(poll_id)
    if poll is None:
        return not_found(request)
    guard = guarded(request, poll, "sign-in")
    if guard:
        return guard
    form = LinkForm(request.POST)
    if not form.is_valid():
        token = request.COOKIES.get(_cookie(poll))
        me = token_participant(poll, token)
        return render_invite(request, poll, me=me, token=token if me else None, link_form=form, status=400)
    email = form.cleaned_data["email"]
    mail.request_edit_links(poll=poll, email=email)
    return redirect(_invite_url(poll, done="link-sent") + "#lost")


@require_GET
def language(request):
    """The footer's language menu (a GET form: no token, so every page stays the same for
    everyone): the `django_language` cookie, then back to the page (`next`, this site's only)."""
    chosen = request.GET.get("language", "")
    back = request.GET.get("next") or request.META.get("HTTP_REFERER", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = "/"
    response = redirect(back)
    if chosen in dict(settings.LANGUAGES):
        response.set_cookie(settings.LANGUAGE_COOKIE_NAME, chosen, max_age=settings.LANGUAGE_COOKIE_AGE, path="/",
                            samesite="Lax", secure=request.is_secure())
    return response


@require_GET
def event(request, poll_id: str):
    """The scheduled event as an .ics file."""
    poll = selectors.find_invited_poll(poll_id)
    if poll is None or poll.status != Poll.Status.SCHEDULED or poll.scheduled_option is None:
        return not_found(request)
    host = settings.APP_URL.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    response = HttpResponse(event_ics(poll, host, invitations.sequence(poll)), content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{poll.pk}.ics"'
    return response
