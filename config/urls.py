from django.contrib import admin
from django.urls import include, path, re_path

from config import health
from config.api.errors import json_404
from config.api.openapi import OpenApiView

v1 = [
    path("openapi", OpenApiView.as_view(), name="openapi"),
    path("", include("polls.urls")),
    path("", include("webhooks.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("v1/", include(v1)),
    # Anything else: the JSON 404 envelope, whatever DEBUG says.
    re_path(r"^", json_404),
]

handler400 = "config.api.errors.json_400"
handler404 = "config.api.errors.json_404"
handler500 = "config.api.errors.json_500"
