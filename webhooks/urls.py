from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhooks", views.WebhookCollectionView.as_view()),
    path("webhooks/<str:webhookId>", views.WebhookDetailView.as_view()),
    path("webhooks/<str:webhookId>/rotate-secret", views.WebhookRotateSecretView.as_view()),
    path("webhooks/<str:webhookId>/ping", views.WebhookPingView.as_view()),
    path("webhooks/<str:webhookId>/deliveries", views.WebhookDeliveriesView.as_view()),
]
