from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from webhooks import dispatch  # noqa: F401  (connects the receiver of `work_waiting`)
