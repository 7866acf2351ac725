from django.apps import AppConfig
from django.db.backends.signals import connection_created


class CoreConfig(AppConfig):
    name = "core"

    def ready(self):
        from axes.signals import user_locked_out

        from core.login_guard import log_lockout
        from core.sqlite import keep_database_open

        user_locked_out.connect(log_lockout, dispatch_uid="core.login_guard")
        connection_created.connect(keep_database_open, dispatch_uid="core.sqlite")
