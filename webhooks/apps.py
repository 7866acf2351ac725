from django.apps import AppConfig


def work_waiting(sender, **kwargs) -> None:
    """The one receiver of the outbox's wake-up (see webhooks.dispatch), which it imports on
    the first wake-up: a process that records no event (most manage.py commands) does not
    import the dispatcher, the delivery services and their HTTP client."""
    from webhooks import dispatch

    dispatch.work_waiting(sender, **kwargs)


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self):
        from webhooks import signals

        signals.work_waiting.connect(work_waiting, dispatch_uid="webhooks.dispatch")
