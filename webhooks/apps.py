from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from webhooks import dispatch, signals

        # The one receiver of the outbox's wake-up (see webhooks.dispatch).
        signals.work_waiting.connect(dispatch.work_waiting, dispatch_uid="webhooks.dispatch")
