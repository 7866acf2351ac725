from django.urls import path

from polls import views

urlpatterns = [
    path("polls", views.PollCollectionView.as_view()),
    path("polls/<str:pollId>", views.PollDetailView.as_view()),
    path("polls/<str:pollId>/results", views.PollResultsView.as_view()),
    path("polls/<str:pollId>/participants", views.ParticipantCollectionView.as_view()),
    path("polls/<str:pollId>/participants/<str:participantId>", views.ParticipantDetailView.as_view()),
]
