"""`GET /docs`: the rendered API reference (Redoc over `GET /v1/openapi`), and the JSON 404
of `/` that points to it.

Redoc's script comes from drf-spectacular-sidecar's static files (served by the web process,
like the back office's), so the page needs no CDN."""

from django.conf import settings
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse

from core.api.errors import error_response, json_404

# Everything from this service: Redoc's bundle would fetch its maker's logo from a CDN (the
# image is left out when refused). Redoc runs its search in a blob: worker and styles inline.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'")
REDOC_SETTINGS = '{"expandResponses": "200,201", "jsonSampleExpandLevel": 3, "hideDownloadButton": false}'


def docs(request):
    if request.method != "GET":
        return json_404(request)
    response = render(request, "core/docs.html", {
        "title": f"{settings.SPECTACULAR_SETTINGS['TITLE']} reference",
        "redoc_standalone": static("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
        "schema_url": reverse("openapi"),
        "settings": REDOC_SETTINGS,
    })
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


def root(request):
    """`/` has nothing to serve: the JSON 404, saying where the API and its reference are."""
    return error_response(404, "NOT_FOUND", "No such route. The API is under /v1; its reference is at /docs "
                                            "and its OpenAPI document at /v1/openapi.")
