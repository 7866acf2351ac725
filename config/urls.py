from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path

import polls.urls
import privateapi.urls
import webhooks.urls
from core import health
from core.api.docs import docs, root
from core.api.errors import json_400, json_404
from core.api.openapi import OpenApiView
from pages.views import form_refused

# The back office: the service's name instead of "Django administration", and no "View
# site" link (the service has no site of its own to view; the app lives on APP_URL).
admin.site.site_header = admin.site.site_title = "Scheduling Poll back office"
admin.site.index_title = "Spaces, polls, webhooks and limits"
admin.site.site_url = None
# No navigation column beside every page (the index lists the same models): at 1280 pixels a
# list then shows all its columns (status, attempts, last error...) without scrolling.
admin.site.enable_nav_sidebar = False
admin.autodiscover()  # INSTALLED_APPS has SimpleAdminConfig: the admin modules load with the URLs

v1 = [
    path("openapi", OpenApiView.as_view(), name="openapi"),
    *polls.urls.urlpatterns,
    *webhooks.urls.urlpatterns,
]


def _under(prefix: str, patterns: list) -> list:
    """`patterns` (paths, no includes) with `prefix` before each route: Django resolves an
    include as a nested resolver, with a match built at each level (`v1/` over its includes
    was three levels for every API request); these resolve in one. The routes are the same strings (the metrics' route label)."""
    return [path(prefix + str(p.pattern), p.callback, p.default_args, p.name) for p in patterns]


urlpatterns = [
    *_under("v1/", v1),  # first: the API's requests are most of the traffic
    # The frozen private API (privateapi/): its routes, then its plain-text 404.
    *privateapi.urls.urlpatterns,
    path("admin/", admin.site.urls),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", health.metrics_view),
    path("docs", docs, name="docs"),
    path("", root),
    # The app's pages: {APP_URL}/invite/{pollId} (pages/, docs/app.md).
    path("", include("pages.urls")),
    # Anything else: the JSON 404 envelope, whatever DEBUG says.
    re_path(r"^", json_404),
]



def handler400(request, exception=None):
    """Django's own 400 (a malformed Host header; a form with more fields than
    DATA_UPLOAD_MAX_NUMBER_FIELDS): a page under the pages, the JSON envelope elsewhere."""
    if request.path.startswith(settings.PAGE_PATH_PREFIXES):
        return form_refused(request, exception)
    return json_400(request, exception)


handler404 = "core.api.errors.json_404"
handler500 = "core.api.errors.json_500"
