from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"

    def ready(self):
        from axes.signals import user_locked_out

        from core.login_guard import log_lockout

        user_locked_out.connect(log_lockout, dispatch_uid="core.login_guard")
