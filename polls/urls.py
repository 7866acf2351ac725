from django.urls import path

from polls import views

urlpatterns = [
    path("polls", views.PollCollectionView.as_view()),
    path("polls/<str:pollId>", views.PollDetailView.as_view()),
]
