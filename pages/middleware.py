"""What every page response carries, the throttle of page reads, and the pages' own answer
to a crash.

- Every read (GET, HEAD) is counted per client address (pages.throttle.check_read), before
  the view runs: past `PAGES_READ_LIMIT_PER_ADDRESS` a 429 page, sent a second late
  (`throttle.REFUSED_READ_DELAY`, config/wsgi.py), the store unreachable a 503 page (as for
  answers).
- A Content-Security-Policy that allows scripts, styles and images from this origin only
  (no inline script, no inline style), forms posted here only, no framing; the Referer only
  to this origin (an edit link holds its token in the URL; `no-referrer` would make browsers
  send `Origin: null`, which the CSRF check refuses).
- The page's language: the `django_language` cookie (the footer's menu sets it), else the
  browser's Accept-Language, else English; active while the page is made
  (`Content-Language`, `Vary: Accept-Language, Cookie`).
- A crash or a database failure under a page is an HTML page (500, 503), not the API's
  JSON envelope; so is a form whose body config/wsgi.py refused (too large, too slow: 400),
  answered before any view or CSRF check runs."""

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.db import DatabaseError
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext as _

from core.bulkhead import ANSWER_DELAY
from core.dbguard import REFUSED
from pages import throttle
from pages.views import error_page, form_refused, refused

PAGE_PREFIXES = settings.PAGE_PATH_PREFIXES
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")

logger = logging.getLogger("service.pages")


class PageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(PAGE_PREFIXES):
            return self.get_response(request)
        language = translation.get_language_from_request(request)
        with translation.override(language):
            response = self._page(request)
        response["Content-Language"] = language
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        return response

    def _page(self, request):
        if request.META.get(REFUSED):
            response = form_refused(request)
        elif request.method in ("GET", "HEAD") and (refusal := throttle.check_read(request)):
            response = refused(request, refusal, None)
            if refusal.scope != "store":
                request.META[ANSWER_DELAY] = throttle.REFUSED_READ_DELAY
        else:
            response = self.get_response(request)
        response["Content-Security-Policy"] = CSP
        response["Referrer-Policy"] = "same-origin"
        response["X-Frame-Options"] = "DENY"
        return response

    def process_exception(self, request, exception):
        if not request.path.startswith(PAGE_PREFIXES):
            return None
        if isinstance(exception, (BadRequest, SuspiciousOperation)):  # a form first read by the view: too many fields
            return form_refused(request, exception)
        if isinstance(exception, DatabaseError):
            logger.warning("page failed on the database: %s", exception)
            return error_page(request, 503, _("Try again later"), _("The service is busy or under maintenance; please "
                              "try again in a moment."),
                              headers={"Retry-After": str(settings.DATABASE_UNAVAILABLE_RETRY_AFTER)})
        logger.exception("page crashed", extra={"path": request.path})
        return error_page(request, 500, _("Something went wrong"), _("The page could not be shown. Please try again."))
