from django.urls import path, re_path

from pages import confirm, organizer, unsubscribe, views

app_name = "pages"

urlpatterns = [
    path("invite/<str:poll_id>", views.invite, name="invite"),
    path("invite/<str:poll_id>/edit/<str:token>", views.invite, name="edit"),
    path("invite/<str:poll_id>/comments", views.comment, name="comment"),
    path("invite/<str:poll_id>/send-link", views.send_link, name="send-link"),
    path("invite/<str:poll_id>/event.ics", views.event, name="event"),
    path("poll/<str:poll_id>", organizer.manage, name="manage"),
    path("poll/<str:poll_id>/sign-in", organizer.sign_in, name="sign-in"),
    path("poll/<str:poll_id>/sign-in/<str:token>", organizer.sign_in_link, name="sign-in-link"),
    path("poll/<str:poll_id>/sign-out", organizer.sign_out, name="sign-out"),
    path("poll/<str:poll_id>/act", confirm.confirmed(organizer.act), name="act"),
    path("poll/<str:poll_id>/confirm", confirm.confirm, name="confirm"),
    path("poll/<str:poll_id>/unsubscribe/<str:token>", unsubscribe.unsubscribe, name="unsubscribe"),
    path("poll/<str:poll_id>/answers.csv", organizer.answers_csv, name="answers-csv"),
    path("language", views.language, name="language"),
    re_path(r"^(invite|poll)/", views.not_found),  # anything else under the pages: the HTML 404
]
