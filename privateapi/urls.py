"""The private API's routes, under `api/private/` (config/urls.py includes them as they are;
its OpenAPI document is generated from this module alone). Any other path under it, and any
other method, is the plain-text 404 that API answered."""

from django.urls import path, re_path

from privateapi import openapi, views
from privateapi.errors import not_found

urlpatterns = [
    path("api/private/openapi", openapi.OpenApiView.as_view(), name="private-openapi"),
    path("api/private/docs", openapi.docs, name="private-docs"),
    path("api/private/polls", views.PollCollectionView.as_view()),
    path("api/private/polls/<str:pollId>", views.PollDetailView.as_view()),
    path("api/private/polls/<str:pollId>/results", views.PollResultsView.as_view()),
    path("api/private/polls/<str:pollId>/participants", views.PollParticipantsView.as_view()),
    re_path(r"^api/private(/|$)", not_found),
]
