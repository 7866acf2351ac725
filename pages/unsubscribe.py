"""The one-click unsubscribe of the organizer's e-mails about answers (RFC 8058): the link of
`List-Unsubscribe`. A GET shows a button (a mail scanner that opens links switches nothing
off); a POST switches the poll's e-mails off. The mail provider's one-click POST carries no
cookie and no CSRF token: the link's signature is the proof."""

from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from pages.notices import unsubscribe_token_valid
from pages.views import error_page, not_found
from polls import selectors
from polls import services as poll_services


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request, poll_id: str, token: str):
    poll = selectors.find_invited_poll(poll_id)
    if poll is None:
        return not_found(request)
    if not unsubscribe_token_valid(poll.pk, token):
        return error_page(request, 404, _("Link not valid"), _("This unsubscribe link is incomplete."), poll=poll,
                          back_to_manage=True)
    done = request.method == "POST"
    if done:
        poll_services.set_notifications(poll=poll, on=False)
    response = render(request, "pages/unsubscribe.html", {"poll": poll, "done": done})
    response["Cache-Control"] = "private, no-store"
    return response
